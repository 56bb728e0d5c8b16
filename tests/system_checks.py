"""This app's system check messages, as ``run_checks()`` reports them."""

from __future__ import annotations

from typing import Any

from django.core import checks
from django.core.checks import run_checks


def mcp_checks(**kwargs: Any) -> list[checks.CheckMessage]:
    found = [m for m in run_checks(**kwargs) if m.id and m.id.startswith("mcp_tools.")]
    return sorted(found, key=lambda m: (m.id, m.msg))
