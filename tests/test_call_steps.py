"""Each step of a tools/call alone (admission, run, output, record) and the boundary that answers its failures."""

from __future__ import annotations

import asyncio
import logging
import math
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser
from django.db import InterfaceError, OperationalError

from mcp_tools.access import user_calls
from mcp_tools.exceptions import (
    CallFailed,
    CallTimedOut,
    CancelledByAdmin,
    InvalidArguments,
    InvalidParams,
    OutputMismatch,
    ProtocolError,
    RateLimited,
    ResultRefused,
    ToolCrashed,
    ToolError,
    TooManyCalls,
    UnknownTool,
)
from mcp_tools.models import ToolCall
from mcp_tools.protocol import errors
from mcp_tools.protocol import versions as v
from mcp_tools.protocol.errors import CALL_FAILURES, Failure, Reply
from mcp_tools.protocol.jsonrpc import Request
from mcp_tools.server.calls import (
    GENERIC_FAILURE,
    MAX_RESULT_DEPTH,
    TOO_DEEP,
    UNSENDABLE,
    Call,
    admission,
    output,
    record,
    run,
)
from mcp_tools.server.session import InFlight, Session
from mcp_tools.tools import threads
from mcp_tools.tools.catalog import catalog
from mcp_tools.tools.content import CallResult, MalformedContent, Unsendable
from mcp_tools.tools.entries import Entry
from tests.db import lost_connection
from tests.testapp.mcp_tools import gate

LATEST = v.V2025_11_25
REQUEST = Request(1, "tools/call", {"name": "add"})
NO_ENTRY: Any = None  # a session's own count never looks at the tool
REFUSED = "Refused: closed"


def a_call(user: Any, name: Any, arguments: Any = None, request_id: int = 1) -> Call:
    session = Session(transport="test", user=user, emit=lambda message: None)
    params = {"name": name} if arguments is None else {"name": name, "arguments": arguments}
    return Call(session, Request(request_id, "tools/call", params), LATEST, {})


async def entry_named(name: str) -> Entry:
    return (await catalog.get()).by_name[name]


# Admission -------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_an_ungranted_tool_with_invalid_arguments_is_refused_as_unknown_before_validation(
    tools: None, user: Any, settings: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PERMISSION_CLASSES": []}
    snapshot = await catalog.get()
    hidden, unknown = a_call(user, "add", {"a": "not a number"}), a_call(user, "nope", {"a": "not a number"})

    with pytest.raises(UnknownTool) as refused_hidden:
        await admission.admit(hidden, snapshot)
    with pytest.raises(UnknownTool) as refused_unknown:
        await admission.admit(unknown, snapshot)

    assert (refused_hidden.value.message, refused_hidden.value.data) == (
        "Unknown tool: add",
        {"reason": "Unknown tool: add"},
    )
    assert (refused_unknown.value.message, refused_unknown.value.data) == (
        "Unknown tool: nope",
        {"reason": "Unknown tool: nope"},
    )
    assert (hidden.entry, unknown.entry) == (None, None)


@pytest.mark.django_db(transaction=True)
async def test_a_granted_tool_with_invalid_arguments_is_refused_by_validation(tools: None, user: Any) -> None:
    call = a_call(user, "add", {"a": "not a number", "b": 1})

    with pytest.raises(InvalidArguments) as refused:
        await admission.admit(call, await catalog.get())

    assert str(refused.value) == "a: 'not a number' is not of type 'integer'"
    assert call.entry is not None and call.entry.name == "add"


@pytest.mark.django_db(transaction=True)
async def test_arguments_that_are_not_an_object_are_refused_once_the_tool_is_found(tools: None, user: Any) -> None:
    with pytest.raises(InvalidArguments) as refused:
        await admission.admit(a_call(user, "add", [1, 2]), await catalog.get())
    assert str(refused.value) == '"arguments" must be an object'


@pytest.mark.django_db(transaction=True)
async def test_admission_returns_the_entry_and_the_arguments(tools: None, user: Any) -> None:
    entry, arguments = await admission.admit(a_call(user, "add", {"a": 1, "b": 2}), await catalog.get())
    assert (entry.name, arguments) == ("add", {"a": 1, "b": 2})


async def test_a_session_at_its_limit_refuses_the_next_call_and_counts_batch_members(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CONCURRENT_CALLS": 2}
    session = a_call(AnonymousUser(), "add").session
    first, second, third = (admission.Places(Call(session, REQUEST, LATEST, {}), NO_ENTRY, 5) for _ in range(3))

    first.in_session()
    second.in_session()
    with pytest.raises(TooManyCalls) as refused:
        third.in_session()
    counted = session.batched_calls
    await first.leave()
    await second.leave()

    assert (counted, session.batched_calls) == (2, 0)
    assert refused.value.message == "Too many calls in progress (at most 2)."


async def test_a_spawned_call_is_counted_by_its_in_flight_entry_not_as_a_batch_member() -> None:
    call = a_call(AnonymousUser(), "add", request_id=7)
    call.session.in_flight[7] = InFlight(asyncio.current_task())  # type: ignore[arg-type]

    admission.Places(call, NO_ENTRY, 5).in_session()

    assert call.session.batched_calls == 0


@pytest.mark.django_db(transaction=True)
async def test_the_users_place_is_held_while_the_call_runs_and_given_back_after(tools: None, user: Any) -> None:
    key = user_calls.user_key(user)

    async with admission.Places(a_call(user, "add"), await entry_named("add"), 5):
        inside = (threads.current_lease.get() is not None, user_calls.running(key))

    assert inside == (True, 1)
    assert (threads.current_lease.get(), user_calls.running(key)) == (None, 0)


@pytest.mark.django_db(transaction=True)
async def test_a_refused_place_gives_back_the_places_taken_before_it(tools: None, user: Any, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CONCURRENT_CALLS": 0}
    key = user_calls.user_key(user)

    with pytest.raises(TooManyCalls):
        async with admission.Places(a_call(user, "add"), await entry_named("add"), 5):
            pass

    assert (threads.current_lease.get(), user_calls.running(key)) == (None, 0)


# Run -------------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_an_unexpected_exception_leaves_the_run_as_a_crash_with_its_cause(tools: None, user: Any) -> None:
    call = a_call(user, "crash", {})
    with pytest.raises(ToolCrashed) as crashed:
        await run.run_tool(call, await entry_named("crash"), {}, 5)
    assert isinstance(crashed.value.__cause__, RuntimeError)
    assert crashed.value.message == GENERIC_FAILURE


@pytest.mark.django_db(transaction=True)
async def test_the_tools_own_error_leaves_the_run_as_it_is(tools: None, user: Any) -> None:
    with pytest.raises(ToolError) as refused:
        await run.run_tool(a_call(user, "fail_politely"), await entry_named("fail_politely"), {"reason": "closed"}, 5)
    assert str(refused.value) == REFUSED


@pytest.mark.django_db(transaction=True)
async def test_a_run_past_its_time_limit_times_out_and_cancels_the_context(tools: None, user: Any) -> None:
    gate.reset()
    call = a_call(user, "slow_count")

    with pytest.raises(CallTimedOut) as timed_out:
        await run.run_tool(call, await entry_named("slow_count"), {"steps": 2}, 0.05)

    assert timed_out.value.message == "The tool did not finish within 0.05 s."
    assert call.ctx is not None and call.ctx.cancelled


@pytest.mark.django_db(transaction=True)
async def test_a_run_returns_the_tools_result(tools: None, user: Any) -> None:
    result = await run.run_tool(a_call(user, "add"), await entry_named("add"), {"a": 1, "b": 2}, 5)
    assert (result.structured, result.is_error) == ({"result": 3}, False)


# Output ----------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_output_breaking_its_schema_is_a_mismatch_whose_detail_is_for_the_log(tools: None) -> None:
    result = CallResult([], structured={"n": "not a number"})
    with pytest.raises(OutputMismatch) as mismatch:
        output.check_output(await entry_named("broken_output"), result)
    assert (mismatch.value.message, mismatch.value.detail) == (
        GENERIC_FAILURE,
        "returned output that does not match its output schema: 'not a number' is not of type 'integer'",
    )


def test_a_result_json_cannot_carry_is_refused() -> None:
    with pytest.raises(ResultRefused) as refused:
        output.encoded({"content": [], "structuredContent": {"x": math.nan}})
    assert refused.value.message == UNSENDABLE
    assert refused.value.detail.startswith("returned a value that cannot be sent as JSON: ")


def test_a_result_over_max_result_bytes_is_refused(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_RESULT_BYTES": 10}
    shaped = {"content": [{"type": "text", "text": "eleven char"}]}
    with pytest.raises(ResultRefused) as refused:
        output.check_size(shaped, output.encoded(shaped))
    assert (refused.value.message, refused.value.detail) == ("The result is larger than 10 bytes.", "")


def test_a_result_nested_deeper_than_clients_read_is_refused() -> None:
    deep: Any = []
    for _ in range(MAX_RESULT_DEPTH + 1):
        deep = [deep]
    shaped = {"structuredContent": {"deep": deep}}
    with pytest.raises(ResultRefused) as refused:
        output.check_size(shaped, output.encoded(shaped))
    assert refused.value.message == TOO_DEEP.format(MAX_RESULT_DEPTH)


def test_an_error_result_in_the_draft_is_its_wire_error() -> None:
    with pytest.raises(InvalidParams) as refused:
        output.shaped(CallResult([{"type": "text", "text": "no"}], is_error=True), v.DRAFT, "no")
    assert (refused.value.message, refused.value.data) == ("Tool execution failed", {"reason": "no"})


def test_an_error_results_text_is_its_text_blocks() -> None:
    result = CallResult([{"type": "text", "text": "one"}, {"type": "image"}, {"type": "text", "text": "two"}])
    assert output.error_text(result) == "one two"


# Record ----------------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_the_audit_keeps_a_tools_declared_parameters_first(tools: None) -> None:
    assert record.parameter_names(await entry_named("add")) == frozenset({"a", "b"})
    assert record.parameter_names(None) == frozenset()


@pytest.mark.django_db(transaction=True)
async def test_a_refusal_already_recorded_in_its_window_writes_no_row(user: Any) -> None:
    call = a_call(user, "add")
    call.recorded = False
    await record.record(call)
    assert await ToolCall.objects.acount() == 0


# The boundary ----------------------------------------------------------------------------------------

RESULT, AT_ONCE = Reply.RESULT, Reply.AT_ONCE
BOUNDARY = [
    (UnknownTool("x"), "denied", "Unknown tool: x", Reply.ERROR),
    (InvalidArguments("a: bad"), "invalid", "a: bad", Reply.ARGUMENTS),
    (ToolError(REFUSED), "error", REFUSED, RESULT),
    (RateLimited("Rate limit exceeded"), "rate_limited", "Rate limit exceeded", RESULT),
    (CallTimedOut(2), "timeout", "The tool did not finish within 2 s.", RESULT),
    (TooManyCalls("Too many calls"), "error", "Too many calls", RESULT),
    (ToolCrashed(), "error", GENERIC_FAILURE, RESULT),
    (OutputMismatch(detail="x"), "error", GENERIC_FAILURE, RESULT),
    (MalformedContent("a block lacks text"), "error", errors.MALFORMED, RESULT),
    (Unsendable("a set"), "error", UNSENDABLE, RESULT),
    (InterfaceError("gone"), "error", errors.DATABASE_UNAVAILABLE, RESULT),
    (lost_connection(), "error", errors.DATABASE_UNAVAILABLE, RESULT),
    (ResultRefused("The result is larger than 10 bytes."), "error", "The result is larger than 10 bytes.", AT_ONCE),
    (CancelledByAdmin(), "cancelled", "The call was cancelled by an administrator.", AT_ONCE),
]


@pytest.mark.parametrize(("exc", "outcome", "message", "reply"), BOUNDARY, ids=lambda p: type(p).__name__)
def test_the_boundary_maps_each_kind_of_failure(exc: Exception, outcome: str, message: str, reply: Reply) -> None:
    failure = errors.call_failure(exc, "tool")
    assert failure is not None
    assert (failure.outcome, failure.message, failure.reply, failure.recorded) == (outcome, message, reply, True)


@pytest.mark.parametrize("exc", [RuntimeError("boom"), OperationalError("syntax error"), KeyError("x")])
def test_the_boundary_leaves_what_is_no_calls_failure_to_the_request(exc: Exception) -> None:
    assert errors.call_failure(exc, "tool") is None


def test_every_outcome_in_the_table_is_an_audit_outcome() -> None:
    assert {rule.outcome for rule in CALL_FAILURES} <= set(ToolCall.Outcome.values)


def test_a_repeated_refusal_in_its_window_is_not_recorded_again() -> None:
    failure = errors.call_failure(RateLimited("Rate limit exceeded", first=False), "tool")
    assert failure is not None and not failure.recorded


def test_a_crash_is_logged_with_its_cause_and_a_mismatch_with_its_detail(caplog: pytest.LogCaptureFixture) -> None:
    try:
        raise ToolCrashed() from RuntimeError("hunter2")
    except ToolCrashed as exc:
        crash = exc
    with caplog.at_level(logging.ERROR, logger="mcp_tools"):
        errors.call_failure(crash, "crash")
        errors.call_failure(OutputMismatch(detail="returned output that does not match"), "broken")
    first, second = caplog.records
    assert (first.getMessage(), second.getMessage()) == (
        "Tool crash failed",
        "Tool broken returned output that does not match",
    )
    assert first.exc_info is not None and isinstance(first.exc_info[1], RuntimeError)


def test_invalid_arguments_are_in_band_from_2025_11_25_and_invalid_params_before() -> None:
    failure = Failure("invalid", "a: bad", Reply.ARGUMENTS)
    assert failure.answer(LATEST) == {
        "content": [{"type": "text", "text": "Invalid arguments: a: bad"}],
        "isError": True,
    }
    with pytest.raises(InvalidParams) as refused:
        failure.answer(v.V2025_06_18)
    assert (refused.value.message, refused.value.data) == ("Invalid arguments", {"reason": "a: bad"})


def test_a_wire_failure_raises_its_own_error_and_the_draft_has_no_in_band_one() -> None:
    unknown = UnknownTool("x")
    failure = errors.call_failure(unknown, "x")
    assert failure is not None
    with pytest.raises(UnknownTool) as raised:
        failure.answer(LATEST)
    assert raised.value is unknown
    with pytest.raises(InvalidParams) as draft:
        Failure("error", "", Reply.RESULT).answer(v.DRAFT)
    assert draft.value.data == {"reason": GENERIC_FAILURE}


def test_a_request_failure_is_its_own_error_a_lost_database_or_an_internal_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_tools"):
        own = errors.request_failure(1, InvalidParams("bad"), "tools/list")
        lost = errors.request_failure(2, lost_connection(), "tools/list")
        internal = errors.request_failure(3, RuntimeError("hunter2"), "tools/list")
    assert own == {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}}
    assert lost["error"] == {"code": -32030, "message": "The database is unavailable; retry shortly."}
    assert internal["error"] == {"code": -32603, "message": "Internal error"}
    assert (own.kind, internal.kind) == (InvalidParams, ProtocolError)
    assert caplog.messages[-1] == "Unexpected error answering tools/list"


def test_call_failures_are_one_family_the_table_orders_before_their_base() -> None:
    kinds = [rule.kind for rule in CALL_FAILURES]
    assert kinds.index(CallFailed) > max(kinds.index(k) for k in (RateLimited, CallTimedOut, ResultRefused))
    assert kinds.index(Unsendable) > kinds.index(MalformedContent)
