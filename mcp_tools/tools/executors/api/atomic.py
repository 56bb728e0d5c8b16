"""The transactions Django's request handler opens around a view, opened the same way around an API action.

Adapter: Django marks a view exempt from ``ATOMIC_REQUESTS`` with ``transaction.non_atomic_requests``, which
stores the exempt database aliases in the view's private ``_non_atomic_requests`` attribute, and its handler
reads that attribute (``BaseHandler.make_view_atomic``); there is no public reader. Checked against Django 5.2
and 6.1; tests/test_api_actions.py pins it.
"""

from __future__ import annotations

from contextlib import ExitStack
from typing import Any

from django.db import connections, transaction


def exempt_aliases(view: Any) -> set[str]:
    """The databases ``view`` is exempt from ``ATOMIC_REQUESTS`` on (``@transaction.non_atomic_requests``)."""
    return set(getattr(view, "_non_atomic_requests", set()))


def atomic_requests(view: Any) -> ExitStack:
    """A transaction per database with ``ATOMIC_REQUESTS``, as Django's handler opens around a view (DRF marks it
    for rollback when the view fails)."""
    stack = ExitStack()
    exempt = exempt_aliases(view)
    for alias, options in connections.settings.items():
        if options.get("ATOMIC_REQUESTS") and alias not in exempt:
            stack.enter_context(transaction.atomic(using=alias))
    return stack
