"""Tests of the demo shop, run against the demo's own settings (``tests/test_demo_api.py`` starts them)."""
