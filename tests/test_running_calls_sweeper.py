"""The sweeper of calls in flight, one tick at a time (which calls get rows, renewal, ends, cancels, pruning),
and an administrator's cancel of a call on a Channels WebSocket session."""

from __future__ import annotations

import asyncio
import io
import time
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from channels.db import database_sync_to_async
from django.core.management import call_command
from django.db import OperationalError
from django.utils import timezone

from mcp_tools.admin.running import readable_age
from mcp_tools.models import RunningCall, ToolCall
from mcp_tools.server.running_calls import ADMIN_CANCELLED, RENEW_SECONDS, RunningCalls, running_calls, visible_rows
from tests.live.tasks import tasks_running
from tests.testapp.mcp_tools import gate, sync_cancel_seen, sync_started

pytestmark = pytest.mark.django_db(transaction=True)
TIMEOUT = 10
NOW = 1000.0  # a perf_counter reading the tests tick at


class FakeCall:
    """A call of ``tool`` by ``user`` started at ``started``, remembering whether an administrator stopped it."""

    def __init__(self, user: Any, tool: str, started: float) -> None:
        self.user, self.tool, self.started = user, tool, started
        self.stopped = 0

    def describe(self) -> dict[str, Any]:
        return {"user_id": self.user.pk, "username": self.user.username, "tool_name": self.tool, "transport": "test"}

    def stop_by_admin(self) -> None:
        self.stopped += 1


def tick(registry: RunningCalls, now: float) -> list[int]:
    return registry.apply(registry.changes(now))


def rows(registry: RunningCalls | None = None) -> list[tuple[str, str]]:
    found = RunningCall.objects.order_by("pk")
    if registry is not None:
        found = found.filter(process=registry.process)
    return list(found.values_list("key", "tool_name"))


def test_only_a_call_older_than_the_visible_bound_gets_a_row(user):
    registry = RunningCalls()
    registry.calls = {1: FakeCall(user, "fast", NOW - 1.9), 2: FakeCall(user, "slow", NOW - 2.5)}

    tick(registry, NOW)
    tick(registry, NOW + 0.05)

    [row] = RunningCall.objects.all()
    assert (row.key, row.tool_name, row.username, row.user_id, row.transport) == ("2", "slow", "alice", user.pk, "test")
    assert row.process == registry.process
    # Seen as the first tick wrote it, renewed in the same tick: 2.5 s after its start, plus that tick's own time.
    assert 2.5 - 0.01 < (row.seen_at - row.started_at).total_seconds() < 2.5 + 1.0


def test_the_row_of_an_ended_call_is_deleted_at_the_next_tick(user):
    registry = RunningCalls()
    registry.calls = {1: FakeCall(user, "slow", NOW - 3), 2: FakeCall(user, "other", NOW - 3)}
    tick(registry, NOW)

    registry.discard(1)
    written = rows(registry)
    tick(registry, NOW + 1)

    assert written == [("1", "slow"), ("2", "other")]
    assert rows(registry) == [("2", "other")]


def test_a_call_that_ends_before_it_is_shown_never_touches_the_database(user, django_assert_num_queries):
    registry = RunningCalls()
    registry.calls = {1: FakeCall(user, "fast", NOW - 0.5)}

    with django_assert_num_queries(0):
        registry.changes(NOW)
        registry.discard(1)
        changes = registry.changes(NOW + 1)

    assert not changes
    assert rows() == []


def test_rows_are_renewed_every_few_seconds_not_every_tick(user):
    registry = RunningCalls()
    registry.calls = {1: FakeCall(user, "slow", NOW - 3)}
    tick(registry, NOW)
    long_ago = timezone.now() - timedelta(seconds=30)
    RunningCall.objects.update(seen_at=long_ago)

    tick(registry, NOW + 1)
    kept = RunningCall.objects.get().seen_at
    tick(registry, NOW + RENEW_SECONDS + 0.5)
    renewed = RunningCall.objects.get().seen_at

    assert kept == long_ago
    assert renewed > long_ago + timedelta(seconds=25)


def test_a_cancel_request_stops_only_the_call_of_its_own_row(user):
    here, elsewhere = RunningCalls(), RunningCalls()
    mine, other = FakeCall(user, "slow", NOW - 3), FakeCall(user, "slow", NOW - 3)
    here.calls, elsewhere.calls = {1: mine}, {1: other}
    tick(here, NOW)
    tick(elsewhere, NOW)

    RunningCall.objects.filter(process=here.process).update(cancel_requested_at=timezone.now())

    assert (tick(here, NOW + 1), tick(elsewhere, NOW + 1)) == ([1], [])


async def test_each_tick_passes_a_cancel_request_on_to_its_call(user):
    registry = RunningCalls()
    call = FakeCall(user, "slow", NOW)
    registry.calls = {1: call}
    registry.apply = lambda changes: [1]  # type: ignore[method-assign]  # the row says: cancel call 1
    registry.written = {1}

    await registry.tick()
    await registry.tick()

    assert call.stopped == 2  # the registry asks at every tick; the call itself stops once


async def test_fast_calls_share_one_sweeper_task():
    registry = RunningCalls()
    for _ in range(100):
        registry.discard(registry.add(FakeCall(None, "fast", NOW)))

    sweepers = tasks_running("_sweep")
    for task in sweepers:
        task.cancel()

    assert len(sweepers) == 1
    assert registry.calls == {}


async def test_work_a_tick_could_not_write_is_done_by_the_next_and_logged_once(user, caplog):
    registry = RunningCalls()
    registry.calls = {1: FakeCall(user, "slow", time.perf_counter() - 3)}
    write = registry.apply

    def unreachable(changes: Any) -> list[int]:
        raise OperationalError("the database is away")

    registry.apply = unreachable  # type: ignore[method-assign]
    await registry.tick()
    await registry.tick()
    registry.apply = write  # type: ignore[method-assign]
    await registry.tick()

    assert await database_sync_to_async(rows)() == [("1", "slow")]
    assert [r.levelname for r in caplog.records if r.name == "mcp_tools"] == ["ERROR", "WARNING"]


def test_no_row_is_written_when_calls_are_not_shown(user, settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "RUNNING_CALLS_VISIBLE_SECONDS": None}
    registry = RunningCalls()
    registry.calls = {1: FakeCall(user, "slow", NOW - 3600)}

    tick(registry, NOW)

    assert rows() == []


def stale_row(tool: str, seconds_ago: float) -> RunningCall:
    seen = timezone.now() - timedelta(seconds=seconds_ago)
    return RunningCall.objects.create(process=f"gone:{tool}", key="1", tool_name=tool, started_at=seen, seen_at=seen)


def test_rows_no_process_renews_are_hidden_and_pruned_by_mcp_prune():
    stale_row("dead", 61)
    stale_row("alive", 30)
    out = io.StringIO()

    hidden = list(visible_rows().values_list("tool_name", flat=True))
    call_command("mcp_prune", stdout=out)

    assert hidden == ["alive"]
    assert "1 stale call(s) in flight deleted." in out.getvalue()
    assert list(RunningCall.objects.values_list("tool_name", flat=True)) == ["alive"]


def test_a_process_writing_rows_prunes_the_stale_rows_of_others(user):
    stale_row("dead", 3600)
    registry = RunningCalls()
    registry.calls = {1: FakeCall(user, "slow", NOW - 3)}

    tick(registry, NOW)

    assert rows() == [("1", "slow")]


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0, "0 s"), (4.9, "4 s"), (125, "2 min 5 s"), (3 * 3600 + 12 * 60 + 5, "3 h 12 min")]
)
def test_an_age_reads_as_a_person_says_it(seconds, shown):
    assert readable_age(seconds) == shown


@pytest.fixture
def closed_gate() -> Iterator[Any]:
    gate.reset()
    yield gate
    gate.open()


def slow_call(request_id: str) -> dict[str, Any]:
    params = {"name": "slow_count", "arguments": {"steps": 1}, "_meta": {"progressToken": request_id}}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


async def running_call(client: Any, request_id: str) -> Any:
    """Start ``slow_count`` and return its call once its first step is reported."""
    await client.send(slow_call(request_id))
    assert (await client.receive())["method"] == "notifications/progress"
    [call] = running_calls().calls.values()
    return call


def last_audit() -> tuple[str, str]:
    row = ToolCall.objects.order_by("-pk").first()
    assert row is not None
    return row.outcome, row.message


async def test_an_administrators_cancel_is_answered_and_audited(ws_session, closed_gate):
    client = await ws_session()
    call = await running_call(client, "c1")

    call.stop_by_admin()
    call.stop_by_admin()
    reply = await client.receive()
    await client.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})

    failure = {"content": [{"type": "text", "text": ADMIN_CANCELLED}], "isError": True}
    assert reply == {"jsonrpc": "2.0", "id": "c1", "result": failure}
    # The task that ran the call took the cancel as the call's end, not its own: it serves on.
    assert await client.receive() == {"jsonrpc": "2.0", "id": "after", "result": {}}
    assert await database_sync_to_async(last_audit)() == ("cancelled", ADMIN_CANCELLED)
    assert running_calls().calls == {}


async def test_an_administrators_cancel_reaches_a_sync_tool_through_its_context(ws_session):
    sync_started.clear()
    sync_cancel_seen.clear()
    client = await ws_session()
    await client.send({"jsonrpc": "2.0", "id": "s1", "method": "tools/call", "params": {"name": "wait_sync"}})
    assert await asyncio.to_thread(sync_started.wait, TIMEOUT)
    [call] = running_calls().calls.values()

    call.stop_by_admin()
    reply = await client.receive()

    assert reply["result"] == {"content": [{"type": "text", "text": ADMIN_CANCELLED}], "isError": True}
    assert await asyncio.to_thread(sync_cancel_seen.wait, TIMEOUT)


async def test_a_client_cancelling_too_leaves_the_call_unanswered(ws_session, closed_gate):
    client = await ws_session()
    call = await running_call(client, "c2")

    call.stop_by_admin()
    call.session.cancel("c2", "enough")
    await asyncio.wait([call.task], timeout=TIMEOUT)
    await client.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})

    assert call.task.cancelled()
    assert await client.receive() == {"jsonrpc": "2.0", "id": "after", "result": {}}
    assert await database_sync_to_async(last_audit)() == ("cancelled", "cancelled by the client")
