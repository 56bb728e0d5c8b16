"""Lost database connections: told from other errors, retried once where safe, answered clearly, outlived."""

from __future__ import annotations

import asyncio
import sqlite3
from typing import Any

import psycopg
import pytest
from django.db import DEFAULT_DB_ALIAS, IntegrityError, InterfaceError, OperationalError, connections, transaction

from mcp_tools.connections import connection_lost, retried
from mcp_tools.exceptions import DATABASE_UNAVAILABLE as DATABASE_UNAVAILABLE_CODE
from mcp_tools.models import ToolCall
from mcp_tools.notify import counters
from mcp_tools.notify.hub import Hub
from mcp_tools.server.calls import DATABASE_UNAVAILABLE
from mcp_tools.tools.catalog import catalog
from tests.db import db_call, lost_connection
from tests.wire import connected

TIMEOUT = 10


def caused(error: type[Exception], cause: Exception) -> Exception:
    exc = error(str(cause))
    exc.__cause__ = cause
    return exc


@pytest.mark.parametrize(
    "exc",
    [
        lost_connection(),
        lost_connection(psycopg.errors.CannotConnectNow("the database system is starting up")),
        lost_connection(psycopg.errors.ConnectionFailure("connection failure")),
        lost_connection(psycopg.OperationalError("server closed the connection unexpectedly")),
        lost_connection(psycopg.OperationalError('connection to server at "127.0.0.1", port 5432 failed')),
        InterfaceError("connection already closed"),
    ],
    ids=["terminated", "starting-up", "class-08", "closed-unexpectedly", "refused", "interface"],
)
def test_a_lost_or_refused_connection_is_told_apart(exc: Exception) -> None:
    assert connection_lost(exc) is True


@pytest.mark.parametrize(
    "exc",
    [
        caused(OperationalError, psycopg.errors.QueryCanceled("canceling statement due to statement timeout")),
        caused(OperationalError, psycopg.errors.DeadlockDetected("deadlock detected")),
        caused(OperationalError, sqlite3.OperationalError("database is locked")),
        caused(IntegrityError, psycopg.errors.UniqueViolation("duplicate key")),
        OperationalError("no cause"),
        ValueError("not a database error"),
    ],
    ids=["statement-timeout", "deadlock", "sqlite-locked", "integrity", "no-cause", "other"],
)
def test_other_errors_are_not_a_lost_connection(exc: Exception) -> None:
    assert connection_lost(exc) is False


class Flaky:
    """Fails its first ``failures`` calls with ``error``, then answers; counts the calls."""

    def __init__(self, error: Exception, failures: int = 1) -> None:
        self.error, self.failures, self.calls = error, failures, 0

    def __call__(self, value: Any) -> Any:
        self.calls += 1
        if self.calls <= self.failures:
            raise self.error
        return value


@pytest.mark.django_db(transaction=True)
def test_work_that_lost_its_connection_runs_once_more_on_a_fresh_one(monkeypatch: pytest.MonkeyPatch) -> None:
    closed: list[str] = []
    monkeypatch.setattr(connections[DEFAULT_DB_ALIAS], "close", lambda: closed.append("closed"))
    flaky = Flaky(lost_connection())

    assert retried(flaky, DEFAULT_DB_ALIAS)("answer") == "answer"
    assert (flaky.calls, closed) == (2, ["closed"])


@pytest.mark.django_db(transaction=True)
def test_a_connection_lost_twice_in_a_row_is_not_retried_again() -> None:
    flaky = Flaky(lost_connection(), failures=2)

    with pytest.raises(OperationalError):
        retried(flaky, DEFAULT_DB_ALIAS)("answer")
    assert flaky.calls == 2


@pytest.mark.django_db(transaction=True)
def test_other_database_errors_and_work_inside_a_transaction_are_not_retried() -> None:
    timed_out = Flaky(caused(OperationalError, psycopg.errors.QueryCanceled("statement timeout")))
    in_transaction = Flaky(lost_connection())

    with pytest.raises(OperationalError):
        retried(timed_out, DEFAULT_DB_ALIAS)("answer")
    with pytest.raises(OperationalError), transaction.atomic():
        retried(in_transaction, DEFAULT_DB_ALIAS)("answer")
    assert (timed_out.calls, in_transaction.calls) == (1, 1)


@pytest.mark.django_db(transaction=True)
async def test_the_change_counters_poll_outlives_a_lost_connection_and_reads_again_at_its_next_tick(
    settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Beside a channel layer that spans processes the poll is the safety poll: both are made short.
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "POLL_SECONDS": 0.05, "SAFETY_POLL_SECONDS": 0.05}
    loop = asyncio.get_running_loop()
    read_again = asyncio.Event()
    reads: list[str] = []
    original = counters.read

    def read() -> counters.Counters:
        reads.append("read")
        if len(reads) == 1:
            raise lost_connection()
        loop.call_soon_threadsafe(read_again.set)
        return original()

    monkeypatch.setattr(counters, "read", read)
    hub, holder = Hub(), object()
    await hub.retain(holder)  # starts the poll, after one read of its own: the one that fails
    try:
        await asyncio.wait_for(read_again.wait(), TIMEOUT)
        polling = hub.poller.running
    finally:
        hub.release(holder)

    assert reads[:2] == ["read", "read"]
    assert polling


@pytest.fixture
def catalog_unreachable(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the tool catalog meets a lost connection."""

    async def get() -> Any:
        raise lost_connection()

    monkeypatch.setattr(catalog, "get", get)


@pytest.mark.django_db(transaction=True)
async def test_a_call_that_loses_the_database_before_its_tool_runs_answers_in_band(tools, user, catalog_unreachable):
    wire = await connected(user)

    reply = await wire.call("add", {"a": 1, "b": 2})

    assert reply["result"] == {"content": [{"type": "text", "text": DATABASE_UNAVAILABLE}], "isError": True}
    [row] = await db_call(lambda: list(ToolCall.objects.values_list("outcome", "message")))
    assert row == ("error", DATABASE_UNAVAILABLE)


@pytest.mark.django_db(transaction=True)
async def test_another_method_that_loses_the_database_answers_its_own_error_code(tools, user, catalog_unreachable):
    wire = await connected(user)

    reply = await wire.request("tools/list")

    assert reply["error"] == {"code": DATABASE_UNAVAILABLE_CODE, "message": DATABASE_UNAVAILABLE}
