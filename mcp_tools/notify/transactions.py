"""Announcements made once per transaction, after it commits.

Django offers no public way to ask which callbacks a transaction will run on commit, and a bulk change
(``mcp_sync``, an admin action on many rows) must announce once, not once per row. This module is the one
place that reads that list (``connection.run_on_commit``, a list of ``(savepoint ids, callback, robust)``);
``tests/test_transactions.py`` fails loudly if Django changes its shape.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.db import transaction

T = TypeVar("T")


def pending(using: str | None = None) -> list[Callable[[], Any]]:
    """The callbacks the current transaction on ``using`` will run when it commits, in order."""
    return [entry[1] for entry in transaction.get_connection(using).run_on_commit]


def once(callback: Callable[[], Any], using: str | None = None) -> None:
    """Run ``callback`` after the current transaction commits, unless it is already due to run then.

    Robust: a failing announcement is logged by Django and never undoes or breaks the committed change.
    """
    if callback not in pending(using):
        transaction.on_commit(callback, using=using, robust=True)


def gather(kind: type[T], fill: Callable[[T], Any], using: str | None = None) -> None:
    """Apply ``fill`` to the instance of ``kind`` (a callable class) due to run on commit, registering one if none is.

    A new instance is filled before it is registered: outside a transaction Django runs it at once.
    """
    for callback in pending(using):
        if isinstance(callback, kind):
            fill(callback)
            return
    created = kind()
    fill(created)
    transaction.on_commit(created, using=using, robust=True)  # type: ignore[arg-type]
