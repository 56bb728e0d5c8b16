"""The one adapter over Django internals: the on-commit callbacks of the current transaction."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection, transaction

from mcp_tools.notify import transactions

pytestmark = pytest.mark.django_db(transaction=True)


class Counter:
    def __init__(self) -> None:
        self.calls = 0
        self.items: list[int] = []
        self.heard: list[list[int]] = []

    def __call__(self) -> None:
        self.calls += 1
        self.heard.append(list(self.items))


def add(item: int) -> Any:
    return lambda counter: counter.items.append(item)


def test_django_keeps_on_commit_callbacks_as_savepoint_ids_callback_and_robust() -> None:
    # Fails loudly when Django changes what transactions.pending() reads.
    def callback() -> None: ...

    with transaction.atomic():
        transaction.on_commit(callback, robust=True)
        [entry] = connection.run_on_commit
        assert isinstance(entry, tuple) and len(entry) == 3
        assert entry[1] is callback and entry[2] is True
        assert transactions.pending() == [callback]


def test_once_runs_a_callback_once_per_commit_however_often_it_is_asked_for() -> None:
    ran: list[Any] = []

    def announce() -> None:
        ran.append(1)

    with transaction.atomic():
        for _ in range(5):
            transactions.once(announce)
    with transaction.atomic():
        transactions.once(announce)

    assert ran == [1, 1]


def test_a_rolled_back_transaction_runs_nothing_and_the_next_one_announces_again() -> None:
    with pytest.raises(RuntimeError), transaction.atomic():
        transactions.gather(Counter, add(0))
        raise RuntimeError("rolled back")
    with transaction.atomic():
        transactions.gather(Counter, add(1))
        transactions.gather(Counter, add(2))
        [first] = transactions.pending()

    assert isinstance(first, Counter)
    assert first.heard == [[1, 2]]


def test_outside_a_transaction_a_gathered_callback_runs_at_once_with_what_it_was_given() -> None:
    # Autocommit (``manage.py shell``, a worker): Django runs the callback as it is registered.
    kept: list[Counter] = []
    transactions.gather(Counter, lambda counter: (kept.append(counter), counter.items.append(7)))

    assert [counter.heard for counter in kept] == [[[7]]]


def test_a_failing_announcement_leaves_the_commit_and_later_callbacks_alone(caplog: Any) -> None:
    ran: list[str] = []

    def broken() -> None:
        raise RuntimeError("layer down")

    with transaction.atomic():
        transactions.once(broken)
        transactions.once(lambda: ran.append("later"))

    assert ran == ["later"]
    assert "layer down" in caplog.text
