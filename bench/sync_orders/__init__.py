"""A bench-only app: ``orders.py``'s 20-row query as a sync ``@tool`` callable, the commonest kind of tool a site
writes, beside the demo's model-query ``list_orders`` (``bench.settings_tmpdb`` installs it)."""
