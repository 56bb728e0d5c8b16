"""An import plan as plain text lines, for the management commands."""

from __future__ import annotations

import json
from typing import Any

from mcp_tools.tools.transfer.importer import ADDED, CHANGED, UNCHANGED, Plan

MARKS = {ADDED: "+", CHANGED: "~", UNCHANGED: "="}
MAX_SHOWN = 80


def shown(value: Any) -> str:
    """A value as JSON, shortened to one readable line."""
    text = "(none)" if value is None else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= MAX_SHOWN else text[: MAX_SHOWN - 1] + "…"


def lines(plan: Plan) -> list[str]:
    out: list[str] = []
    for tool in plan.tools:
        out.append(f"{MARKS[tool.status]} {tool.name} ({tool.status})")
        if tool.status == UNCHANGED:
            continue
        out += [f"    {change.field}: {shown(change.old)} → {shown(change.new)}" for change in tool.changes]
        out += [f"    granted to {who}" for who in tool.granted]
        out += [f"    no longer granted to {who}" for who in tool.revoked]
    for change in plan.rate_limits:
        out.append(f"~ default rate of group {change.field}: {shown(change.old)} → {shown(change.new)}")
    if plan.pruned:
        out.append("Disabled, not in the file: " + ", ".join(plan.pruned))
    kept = [name for name in plan.site_only if name not in plan.pruned]
    if kept:
        out.append("Only on this site, kept: " + ", ".join(kept))
    out += [f"Warning: {warning}" for warning in plan.warnings]
    out += [f"Error: {error}" for error in plan.errors]
    if plan.unshown:
        out.append(f"... and {plan.unshown} more problem(s) not shown.")
    counts = {status: len(plan.by_status(status)) for status in (ADDED, CHANGED, UNCHANGED)}
    out.append(f"{counts[ADDED]} added, {counts[CHANGED]} changed, {counts[UNCHANGED]} unchanged.")
    return out
