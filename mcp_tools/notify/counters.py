"""The change counters: one row per kind of change, bumped in the changing transaction, read by every process.

A process that hears no cross-process channel layer (the in-memory layer, ``mcp_stdio`` beside a web
process, a change made from ``manage.py shell``) learns of changes by reading these rows every
``poll_seconds()``; beside Redis the same read is a slower safety net for lost messages.
"""

from __future__ import annotations

from django.db import router
from django.db.models import F

from mcp_tools.conf import mcp_settings
from mcp_tools.connections import retried
from mcp_tools.models import ChangeCounter

TOOLS = "tools"  # tools, their grants, model queries and rate overrides
ACCESS = "access"  # users, groups, memberships and permissions
TOKENS = "tokens"  # access tokens issued, edited or revoked
KINDS = (TOOLS, ACCESS, TOKENS)

Counters = dict[str, int]


def bump(kind: str = TOOLS, using: str | None = None) -> None:
    """Count one change inside the current transaction (so a rollback undoes it)."""
    manager = ChangeCounter.objects.db_manager(using)
    if not manager.filter(pk=kind).update(value=F("value") + 1):
        manager.get_or_create(pk=kind, defaults={"value": 1})


def read() -> Counters:
    """Every counter's committed value (0 for a kind never changed); once more on a fresh connection if the
    kept one was lost."""
    return retried(_read, router.db_for_read(ChangeCounter))()


def _read() -> Counters:
    found = dict(ChangeCounter.objects.filter(pk__in=KINDS).values_list("name", "value"))
    return {kind: int(found.get(kind, 0)) for kind in KINDS}


def freshness_seconds() -> float:
    """The stated bound: a change made in any process binds every session here within this many seconds."""
    return max(0.05, float(mcp_settings.FRESHNESS_SECONDS))


def poll_seconds() -> float:
    """How often a process that hears no cross-process layer reads the counters."""
    configured = mcp_settings.POLL_SECONDS
    if configured is None:
        configured = mcp_settings.STDIO_POLL_SECONDS
    if configured is None:
        # A quarter of the bound leaves the rest for acting on what the read found.
        return freshness_seconds() / 4
    return max(0.01, float(configured))


def safety_poll_seconds() -> float:
    """How often a process that hears the Redis layer still reads the counters, for lost messages."""
    return max(poll_seconds(), float(mcp_settings.SAFETY_POLL_SECONDS))
