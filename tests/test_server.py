"""Server: the legacy handshake, tools/call errors, progress, cancellation and the modern request path.

``tests.wire.Wire`` drives one real Session through ``Server.receive`` and keeps what the server emits as
decoded wire JSON.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import pytest

from mcp_tools.exceptions import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    InvalidRequest,
)
from mcp_tools.protocol import jsonrpc
from mcp_tools.protocol import versions as v
from mcp_tools.server.calls import GENERIC_FAILURE
from mcp_tools.tools.catalog import catalog
from tests.messages import (
    DRAFTS,
    LEGACY,
    MISSING_META,
    MODERN,
    MODERN_SERVER_META,
    POST_DRAFT,
    SERVER_INFO,
    error,
    rpc,
    text_result,
)
from tests.testapp.mcp_tools import gate
from tests.wire import TIMEOUT, Wire, connected, is_notification, is_response_to, start_slow_count

pytestmark = pytest.mark.django_db(transaction=True)


# Lifecycle --------------------------------------------------------------------------------------


async def test_a_second_initialize_is_invalid_and_keeps_the_first_revision(tools: None, user: Any) -> None:
    wire = await connected(user, "2024-11-05")
    reply = await wire.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {}})
    assert reply == error(2, INVALID_REQUEST, "The session is already initialized")
    assert wire.session.revision == v.V2024_11_05
    listing = await wire.request("tools/list")
    assert "annotations" not in listing["result"]["tools"][0]


@pytest.mark.parametrize(
    ("method", "params"),
    [("tools/list", None), ("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})],
)
async def test_requests_other_than_ping_before_initialize_are_invalid(
    tools: None, user: Any, method: str, params: Any
) -> None:
    reply = await Wire(user).request(method, params)
    assert reply == error(1, INVALID_REQUEST, "The session is not initialized: send initialize first")


async def test_an_unknown_method_is_method_not_found_even_before_initialize(user: Any) -> None:
    reply = await Wire(user).request("foo/bar", {})
    assert reply == error(1, METHOD_NOT_FOUND, "Method not found: foo/bar")


@pytest.mark.parametrize("version", LEGACY)
async def test_ping_answers_an_empty_result_before_and_after_initialize(user: Any, version: Any) -> None:
    wire = Wire(user)
    assert await wire.request("ping") == {"jsonrpc": "2.0", "id": 1, "result": {}}
    await wire.initialize(version)
    assert await wire.request("ping") == {"jsonrpc": "2.0", "id": 3, "result": {}}


@pytest.mark.parametrize(("can_notify", "tools_capability"), [(True, {"listChanged": True}), (False, {})])
async def test_capabilities_advertise_list_changed_only_when_the_session_can_notify(
    user: Any, can_notify: bool, tools_capability: dict[str, Any]
) -> None:
    reply = await Wire(user, can_notify=can_notify).initialize()
    assert reply["result"]["capabilities"] == {"tools": tools_capability}


@pytest.mark.parametrize("version", LEGACY)
async def test_instructions_from_settings_are_sent_from_2024_11_05_on(settings: Any, user: Any, version: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "INSTRUCTIONS": "Prefer add for sums."}
    result = (await Wire(user).initialize(version))["result"]
    if v.lookup(version) >= v.V2024_11_05:
        assert result["instructions"] == "Prefer add for sums."
    else:
        assert "instructions" not in result


@pytest.mark.parametrize(
    ("version", "extra"),
    [
        (1, {}),
        ("2024-10-07", {}),
        ("2024-11-05", {}),
        ("2025-03-26", {}),
        ("2025-06-18", {"title": "Shop tools"}),
        ("2025-11-25", {"title": "Shop tools", "websiteUrl": "https://shop.example"}),
    ],
)
async def test_server_info_gains_title_in_2025_06_18_and_website_in_2025_11_25(
    settings: Any, user: Any, version: Any, extra: dict[str, str]
) -> None:
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "SERVER_NAME": "shop",
        "SERVER_VERSION": "9.9",
        "SERVER_TITLE": "Shop tools",
        "WEBSITE_URL": "https://shop.example",
    }
    result = (await Wire(user).initialize(version))["result"]
    assert result["serverInfo"] == {"name": "shop", "version": "9.9", **extra}


async def test_initialize_records_client_capabilities_and_info(user: Any) -> None:
    wire = Wire(user)
    params = {"protocolVersion": "2025-11-25", "capabilities": {"roots": {}}, "clientInfo": {"name": "c"}}
    await wire.request("initialize", params)
    assert (wire.session.client_capabilities, wire.session.client_info) == ({"roots": {}}, {"name": "c"})


async def test_handle_answers_a_decoded_message_directly(user: Any) -> None:
    wire = Wire(user)
    message = jsonrpc.classify(rpc("a", "initialize", {"protocolVersion": "2025-03-26"}))
    reply = await wire.server.handle(wire.session, message)
    expected = {"protocolVersion": "2025-03-26", "capabilities": {"tools": {}}, "serverInfo": SERVER_INFO}
    assert reply == {"jsonrpc": "2.0", "id": "a", "result": expected}
    assert await wire.server.handle(wire.session, jsonrpc.classify({"jsonrpc": "2.0", "method": "x"})) is None
    assert wire.sent == []


@pytest.mark.parametrize(
    ("message", "reply"),
    [
        (jsonrpc.Response(3), None),
        (jsonrpc.Notification("notifications/initialized", {}), None),
        (jsonrpc.Invalid(4, InvalidRequest("Nope")), error(4, INVALID_REQUEST, "Nope")),
        (jsonrpc.Request(5, "ping", {}), {"jsonrpc": "2.0", "id": 5, "result": {}}),
        (jsonrpc.Request(6, "nope", {}), error(6, METHOD_NOT_FOUND, "Method not found: nope")),
    ],
)
async def test_handle_returns_the_response_or_none_for_each_kind_of_message(
    user: Any, message: jsonrpc.Message, reply: Any
) -> None:
    wire = await connected(user)
    sent = list(wire.sent)
    assert await wire.server.handle(wire.session, message) == reply
    assert wire.sent == sent


async def test_an_unexpected_server_error_answers_internal_error_without_detail(
    tools: None, user: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    wire = await connected(user)

    async def broken() -> Any:
        raise RuntimeError("catalog password is hunter2")

    monkeypatch.setattr(catalog, "get", broken)
    with caplog.at_level(logging.ERROR, logger="mcp_tools"):
        reply = await wire.request("tools/list")
    assert reply == error(2, INTERNAL_ERROR, "Internal error")
    assert [r.getMessage() for r in caplog.records if r.name == "mcp_tools"] == [
        "Unexpected error answering tools/list"
    ]


# tools/call failures ----------------------------------------------------------------------------

INVALID_ARGUMENTS = [
    ("add", {"a": "x", "b": 1}, "a: 'x' is not of type 'integer'"),
    ("add", {"a": 1}, "'b' is a required property"),
    ("add", {"a": 1, "b": 2, "c": 3}, "Additional properties are not allowed ('c' was unexpected)"),
    ("greet", {"name": "Ann", "punctuation": "?"}, "punctuation: '?' is not one of ['!', '.']"),
    ("greet", {"name": "Ann", "shout": "yes"}, "shout: 'yes' is not of type 'boolean', 'null'"),
    ("tags", {"items": "x"}, "items: 'x' is not of type 'array'"),
    ("tags", {"items": [1]}, "items/0: 1 is not of type 'string'"),
    ("add", [1, 2], '"arguments" must be an object'),
    ("add", "a=1", '"arguments" must be an object'),
]


@pytest.mark.parametrize("version", LEGACY[:-1])
@pytest.mark.parametrize(("name", "arguments", "reason"), INVALID_ARGUMENTS)
async def test_invalid_arguments_are_invalid_params_up_to_2025_06_18(
    tools: None, user: Any, version: Any, name: str, arguments: Any, reason: str
) -> None:
    wire = await connected(user, version)
    reply = await wire.call(name, arguments)
    assert reply == error(2, INVALID_PARAMS, "Invalid arguments", {"reason": reason})


@pytest.mark.parametrize(("name", "arguments", "reason"), INVALID_ARGUMENTS)
async def test_invalid_arguments_are_an_in_band_error_from_2025_11_25(
    tools: None, user: Any, name: str, arguments: Any, reason: str
) -> None:
    wire = await connected(user, "2025-11-25")
    reply = await wire.call(name, arguments)
    assert reply["result"] == text_result(f"Invalid arguments: {reason}", is_error=True)


@pytest.mark.parametrize("version", LEGACY)
@pytest.mark.parametrize("name", ["nope", "ADD", "add "])
async def test_unknown_tool_is_invalid_params_in_every_legacy_revision(
    tools: None, user: Any, version: Any, name: str
) -> None:
    wire = await connected(user, version)
    reply = await wire.call(name, {})
    assert reply == error(2, INVALID_PARAMS, f"Unknown tool: {name}", {"reason": f"Unknown tool: {name}"})


@pytest.mark.parametrize("name", [None, 3, ["add"]])
async def test_a_tool_name_that_is_not_a_string_is_invalid_params(tools: None, user: Any, name: Any) -> None:
    wire = await connected(user)
    reply = await wire.request("tools/call", {} if name is None else {"name": name})
    assert reply == error(2, INVALID_PARAMS, '"name" must be a string')


@pytest.mark.parametrize("version", POST_DRAFT)
async def test_tool_error_text_reaches_the_client_in_band(tools: None, user: Any, version: Any) -> None:
    wire = await connected(user, version)
    reply = await wire.call("fail_politely", {"reason": "closed on Sundays"})
    assert reply["result"] == text_result("Refused: closed on Sundays", is_error=True)


@pytest.mark.parametrize("arguments", [None, {}])
async def test_omitted_arguments_mean_no_arguments(tools: None, user: Any, arguments: Any) -> None:
    wire = await connected(user)
    reply = await wire.request("tools/call", {"name": "fail_politely", "arguments": arguments})
    assert reply["result"] == text_result("Refused: nope", is_error=True)


@pytest.mark.parametrize("version", LEGACY)
async def test_an_unexpected_exception_answers_generic_text_and_logs_the_traceback(
    tools: None, user: Any, caplog: pytest.LogCaptureFixture, version: Any
) -> None:
    wire = await connected(user, version)
    with caplog.at_level(logging.ERROR, logger="mcp_tools"):
        reply = await wire.call("crash", {})
    if version in DRAFTS:
        assert reply == error(2, INVALID_PARAMS, "Tool execution failed", {"reason": GENERIC_FAILURE})
    else:
        assert reply["result"] == text_result(GENERIC_FAILURE, is_error=True)
    assert "hunter2" not in json.dumps(wire.sent)
    [record] = [r for r in caplog.records if r.name == "mcp_tools"]
    assert record.getMessage() == "Tool crash failed"
    assert record.exc_info is not None and isinstance(record.exc_info[1], RuntimeError)


@pytest.mark.parametrize("version", DRAFTS)
async def test_the_draft_answers_a_tool_error_with_invalid_params(tools: None, user: Any, version: Any) -> None:
    wire = await connected(user, version)
    reply = await wire.call("fail_politely", {})
    assert reply == error(2, INVALID_PARAMS, "Tool execution failed", {"reason": "Refused: nope"})


@pytest.mark.parametrize("version", LEGACY)
async def test_output_breaking_the_output_schema_becomes_a_generic_error(
    tools: None, user: Any, caplog: pytest.LogCaptureFixture, version: Any
) -> None:
    wire = await connected(user, version)
    with caplog.at_level(logging.ERROR, logger="mcp_tools"):
        reply = await wire.call("broken_output", {})
    if version in DRAFTS:
        assert reply == error(2, INVALID_PARAMS, "Tool execution failed", {"reason": GENERIC_FAILURE})
    else:
        assert reply["result"] == text_result(GENERIC_FAILURE, is_error=True)
    assert "not a number" not in json.dumps(wire.sent)
    assert [r.getMessage() for r in caplog.records if r.name == "mcp_tools"] == [
        "Tool broken_output returned output that does not match its output schema: "
        "'not a number' is not of type 'integer'"
    ]


async def test_a_caller_without_permission_sees_no_tools_and_calls_them_as_unknown(
    tools: None, user: Any, settings: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PERMISSION_CLASSES": []}
    wire = await connected(user)
    listing = await wire.request("tools/list")
    assert listing["result"] == {"tools": []}
    reply = await wire.call("add", {"a": 1, "b": 2})
    assert reply == error(3, INVALID_PARAMS, "Unknown tool: add", {"reason": "Unknown tool: add"})


async def test_a_tool_sees_the_session_user(tools: None, user: Any) -> None:
    wire = await connected(user)
    reply = await wire.call("whoami", {})
    assert reply["result"]["structuredContent"] == {"username": "alice"}


# Progress ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", LEGACY)
@pytest.mark.parametrize("token", ["job-1", 42])
async def test_progress_notifications_precede_the_response_in_order(
    tools: None, user: Any, version: Any, token: Any
) -> None:
    wire = await connected(user, version)
    reply = await wire.call("sync_progress", {"steps": 3}, _meta={"progressToken": token})
    progress = [
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": token, **step}}
        for step in ({"progress": 1, "total": 3}, {"progress": 2, "total": 3}, {"progress": 3, "total": 3})
    ]
    answer = {"toolResult": "done"} if version in DRAFTS else text_result("done")
    assert reply == {"jsonrpc": "2.0", "id": 2, "result": answer}
    assert wire.sent[-4:] == [*progress, reply]


@pytest.mark.parametrize("meta", [None, {}, {"progressToken": None}, {"progressToken": True}])
async def test_no_progress_is_sent_without_a_usable_progress_token(tools: None, user: Any, meta: Any) -> None:
    wire = await connected(user)
    params = {} if meta is None else {"_meta": meta}
    await wire.call("sync_progress", {"steps": 3}, **params)
    assert wire.notifications("notifications/progress") == []


async def test_an_async_tool_reports_progress_while_it_runs(tools: None, user: Any) -> None:
    gate.reset()
    wire = await connected(user)
    await wire.send(
        rpc(
            7,
            "tools/call",
            {"name": "slow_count", "arguments": {"steps": 2}, "_meta": {"progressToken": "p"}},
        )
    )
    first = await wire.wait_for(is_notification("notifications/progress"))
    assert first["params"] == {"progressToken": "p", "progress": 1, "total": 2, "message": "step 1"}
    assert wire.responses_to(7) == []
    gate.open()
    reply = await wire.response(7)
    assert reply["result"]["structuredContent"] == {"counted": 2}
    assert [n["params"]["progress"] for n in wire.notifications("notifications/progress")] == [1, 2]


# Cancellation -----------------------------------------------------------------------------------


@pytest.mark.parametrize("request_id", [7, "seven"])
async def test_a_cancelled_call_is_never_answered_and_leaves_nothing_in_flight(
    tools: None, user: Any, request_id: Any
) -> None:
    gate.reset()
    wire = await connected(user)
    task = await start_slow_count(wire, request_id)
    await wire.notify("notifications/cancelled", {"requestId": request_id, "reason": "no longer needed"})
    gate.open()
    await asyncio.wait_for(asyncio.wait({task}), TIMEOUT)
    pong = await wire.request("ping")
    assert pong == {"jsonrpc": "2.0", "id": 2, "result": {}}
    assert task.cancelled()
    assert wire.responses_to(request_id) == []
    assert len(wire.notifications("notifications/progress")) == 1
    assert wire.session.in_flight == {}


@pytest.mark.parametrize("request_id", [99, "2", True, None, [2]])
async def test_cancelling_an_unknown_request_changes_nothing(tools: None, user: Any, request_id: Any) -> None:
    gate.reset()
    wire = await connected(user)
    task = await start_slow_count(wire, 2)
    await wire.notify("notifications/cancelled", {"requestId": request_id})
    gate.open()
    reply = await wire.response(2)
    assert reply["result"]["structuredContent"] == {"counted": 2}
    assert task.done() and not task.cancelled()
    assert wire.session.in_flight == {}


async def test_cancelling_a_finished_call_is_ignored(tools: None, user: Any) -> None:
    wire = await connected(user)
    await wire.call("add", {"a": 1, "b": 2})
    await wire.notify("notifications/cancelled", {"requestId": 2})
    assert await wire.request("ping") == {"jsonrpc": "2.0", "id": 3, "result": {}}
    assert len(wire.responses_to(2)) == 1


async def test_a_request_id_held_by_a_running_call_is_refused(tools: None, user: Any) -> None:
    gate.reset()
    wire = await connected(user)
    await start_slow_count(wire, 5)
    await wire.send(rpc(5, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}))
    refused = await wire.response(5)
    assert refused == error(5, INVALID_REQUEST, "Request id 5 is already in use")
    gate.open()
    finished = await wire.wait_for(lambda m: is_response_to(5)(m) and "result" in m)
    assert finished["result"]["structuredContent"] == {"counted": 2}


async def test_other_requests_are_answered_while_a_call_runs(tools: None, user: Any) -> None:
    gate.reset()
    wire = await connected(user)
    await start_slow_count(wire, "slow")
    assert (await wire.call("add", {"a": 2, "b": 3}))["result"]["structuredContent"] == {"result": 5}
    assert (await wire.request("tools/list"))["result"]["tools"]
    assert wire.responses_to("slow") == []
    gate.open()
    await wire.response("slow")


async def test_closing_the_session_cancels_running_calls(tools: None, user: Any) -> None:
    gate.reset()
    wire = await connected(user)
    task = await start_slow_count(wire, 3)
    wire.session.close()
    gate.open()
    await asyncio.wait_for(asyncio.wait({task}), TIMEOUT)
    assert task.cancelled()
    assert wire.responses_to(3) == []
    assert wire.session.in_flight == {}


# The modern request path ------------------------------------------------------------------------


@pytest.mark.parametrize(("can_notify", "tools_capability"), [(False, {}), (True, {"listChanged": True})])
async def test_discover_describes_the_server_without_a_handshake(
    user: Any, can_notify: bool, tools_capability: dict[str, Any]
) -> None:
    wire = Wire(user, can_notify=can_notify)
    reply = await wire.modern("server/discover")
    result = reply["result"]
    assert result.pop("capabilities")["tools"] == tools_capability
    assert result == {
        "resultType": "complete",
        "supportedVersions": [MODERN],
        "ttlMs": 60_000,
        "cacheScope": "private",
        **MODERN_SERVER_META,
    }
    assert wire.session.revision is None


async def test_discover_carries_instructions_from_settings(settings: Any, user: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "INSTRUCTIONS": "Prefer add for sums.", "LIST_TTL_MS": 0}
    result = (await Wire(user).modern("server/discover"))["result"]
    assert (result["instructions"], result["ttlMs"]) == ("Prefer add for sums.", 0)


async def test_discover_without_request_meta_is_invalid_params(user: Any) -> None:
    reply = await Wire(user).request("server/discover", {})
    assert reply == error(
        1, INVALID_PARAMS, MISSING_META, {"missing": [v.PROTOCOL_VERSION_META, v.CLIENT_CAPABILITIES_META]}
    )


async def test_modern_tools_call_answers_a_complete_result(tools: None, user: Any) -> None:
    wire = Wire(user)
    reply = await wire.modern("tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}})
    assert reply["result"] == {
        **text_result("5"),
        "structuredContent": {"result": 5},
        "resultType": "complete",
        **MODERN_SERVER_META,
    }


async def test_modern_invalid_arguments_and_tool_failures_are_in_band(tools: None, user: Any) -> None:
    wire = Wire(user)
    invalid = await wire.modern("tools/call", {"name": "add", "arguments": {"a": "x", "b": 1}})
    failed = await wire.modern("tools/call", {"name": "fail_politely", "arguments": {}})
    complete = {"resultType": "complete", **MODERN_SERVER_META}
    message = "Invalid arguments: a: 'x' is not of type 'integer'"
    assert invalid["result"] == {**text_result(message, is_error=True), **complete}
    assert failed["result"] == {**text_result("Refused: nope", is_error=True), **complete}


async def test_modern_unknown_tool_is_invalid_params(tools: None, user: Any) -> None:
    reply = await Wire(user).modern("tools/call", {"name": "nope", "arguments": {}})
    assert reply == error(1, INVALID_PARAMS, "Unknown tool: nope", {"reason": "Unknown tool: nope"})
