"""Streamable HTTP at 2026-07-28: the request ladder, status mapping, result stamps, progress and listen streams."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcp_tools import __version__
from mcp_tools.exceptions import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcp_tools.models import Tool
from mcp_tools.notify.hub import hub
from mcp_tools.server.session import Session
from tests.db import db_call
from tests.live.asgi_http import (
    CLIENT_CAPABILITIES_META,
    MODERN,
    PROTOCOL_VERSION_META,
    HttpClient,
    Response,
    modern_headers,
    modern_request,
    notification,
    request,
)
from tests.websocket import WSClient

pytestmark = pytest.mark.django_db(transaction=True)

JSON = {"content-type": "application/json"}
SSE_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache, no-transform",
    "x-accel-buffering": "no",
}
SERVER_INFO = {"io.modelcontextprotocol/serverInfo": {"name": "django-mcp-tools", "version": __version__}}
SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
LIST_CHANGED = "notifications/tools/list_changed"
UNSUPPORTED = "2099-01-01"


def error(code: int, message: str, request_id: Any = None, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def complete(request_id: Any, value: dict[str, Any]) -> dict[str, Any]:
    """A 2026-07-28 result: ``resultType`` and the server's identity in ``_meta`` stamped on."""
    return {"jsonrpc": "2.0", "id": request_id, "result": {**value, "resultType": "complete", "_meta": SERVER_INFO}}


def tagged(method: str, request_id: Any, **params: Any) -> dict[str, Any]:
    return notification(method, {**params, "_meta": {SUBSCRIPTION_ID: request_id}})


def edit_tool() -> None:
    tool = Tool.objects.get(name="greet")
    tool.title = "Say hello"
    tool.save()


@pytest.fixture
async def http(token: str, tools: None) -> AsyncIterator[HttpClient]:
    client = HttpClient(token)
    yield client
    await client.close()


async def post(
    http: HttpClient, message: dict[str, Any], repeated: list[tuple[bytes, bytes]] | None = None, **headers: str | None
) -> Response:
    """POST a modern message with the routing headers taken from its body, some replaced by ``headers``."""
    params = message.get("params", {})
    name = params.get("name") if message.get("method") == "tools/call" else None
    routing = {**modern_headers(message["method"], name), **{k.replace("_", "-"): v for k, v in headers.items()}}
    return await http.send(message, headers=routing, repeated=repeated)


def listen(request_id: Any, **notifications: bool) -> dict[str, Any]:
    return modern_request(request_id, "subscriptions/listen", {"notifications": notifications})


class TestResults:
    async def test_server_discover_describes_the_modern_server(self, http):
        reply = await post(http, modern_request(1, "server/discover"))

        assert (reply.status, reply.headers) == (200, JSON)
        assert reply.json() == complete(
            1,
            {
                "supportedVersions": [MODERN],
                "capabilities": {"tools": {"listChanged": True}},
                "ttlMs": 60000,
                "cacheScope": "private",
            },
        )

    async def test_tools_list_carries_cache_hints_and_matches_the_websocket_answer(self, http, ws: WSClient):
        reply = await post(http, modern_request(1, "tools/list"))
        over_websocket = await ws.request("tools/list", modern_request(1, "tools/list")["params"])

        assert (reply.status, reply.headers) == (200, JSON)
        assert reply.json() == over_websocket
        page = reply.json()["result"]
        assert [tool["name"] for tool in page["tools"]] == [
            "add",
            "add_category",
            "add_named_category",
            "ask_from_a_thread",
            "ask_many",
        ]
        assert {key: value for key, value in page.items() if key != "tools"} == {
            "nextCursor": page["nextCursor"],
            "ttlMs": 60000,
            "cacheScope": "private",
            "resultType": "complete",
            "_meta": SERVER_INFO,
        }

    async def test_tools_call_answers_a_complete_result(self, http):
        reply = await post(http, modern_request("a", "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}))

        assert (reply.status, reply.headers) == (200, JSON)
        assert reply.json() == complete(
            "a", {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}, "isError": False}
        )

    async def test_client_info_is_optional(self, http):
        message = modern_request(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
        message["params"]["_meta"]["io.modelcontextprotocol/clientInfo"] = {"name": "tests", "version": "1"}

        reply = await post(http, message)

        assert (reply.status, reply.json()["result"]["structuredContent"]) == (200, {"result": 2})

    async def test_an_unknown_tool_is_invalid_params_with_status_200(self, http):
        reply = await post(http, modern_request(2, "tools/call", {"name": "nope", "arguments": {}}))

        assert (reply.status, reply.json()) == (
            200,
            error(INVALID_PARAMS, "Unknown tool: nope", 2, {"reason": "Unknown tool: nope"}),
        )

    async def test_a_tool_failure_is_an_in_band_error_with_status_200(self, http):
        reply = await post(http, modern_request(3, "tools/call", {"name": "fail_politely", "arguments": {}}))

        assert (reply.status, reply.json()) == (
            200,
            complete(3, {"content": [{"type": "text", "text": "Refused: nope"}], "isError": True}),
        )

    async def test_invalid_arguments_are_an_in_band_error_with_status_200(self, http):
        reply = await post(http, modern_request(4, "tools/call", {"name": "add", "arguments": {"a": 1}}))

        assert (reply.status, reply.json()) == (
            200,
            complete(
                4,
                {
                    "content": [{"type": "text", "text": "Invalid arguments: 'b' is a required property"}],
                    "isError": True,
                },
            ),
        )

    async def test_no_session_id_is_ever_issued(self, http):
        reply = await post(http, modern_request(1, "server/discover"))

        assert "mcp-session-id" not in reply.headers


class TestLadder:
    @pytest.mark.parametrize(
        ("meta", "message", "missing"),
        [
            (None, "Missing _meta: 2026-07-28 requests carry the protocol version and client capabilities", None),
            ({CLIENT_CAPABILITIES_META: {}}, f"_meta lacks {PROTOCOL_VERSION_META}", [PROTOCOL_VERSION_META]),
            ({PROTOCOL_VERSION_META: MODERN}, f"_meta lacks {CLIENT_CAPABILITIES_META}", [CLIENT_CAPABILITIES_META]),
        ],
        ids=["no-meta", "no-version", "no-capabilities"],
    )
    async def test_an_incomplete_envelope_is_refused_with_400_invalid_params(self, http, meta, message, missing):
        body = request(101, "server/discover", {} if meta is None else {"_meta": meta})

        reply = await post(http, body)

        data = {"missing": missing or [PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META]}
        assert (reply.status, reply.headers) == (400, JSON)
        assert reply.json() == error(INVALID_PARAMS, message, 101, data)

    async def test_the_envelope_is_checked_before_the_headers(self, http):
        reply = await post(http, request(1, "tools/list", {}), mcp_method="prompts/list")

        assert (reply.status, reply.json()["error"]["code"]) == (400, INVALID_PARAMS)

    @pytest.mark.parametrize(
        ("body", "headers", "message"),
        [
            (
                modern_request(1, "tools/list", version=UNSUPPORTED),
                {},
                "MCP-Protocol-Version does not match _meta",
            ),
            (
                modern_request(1, "tools/list"),
                {"mcp_method": "prompts/list"},
                "Mcp-Method does not match the body's method",
            ),
            (
                modern_request(1, "tools/list"),
                {"mcp_method": "TOOLS/LIST"},
                "Mcp-Method does not match the body's method",
            ),
            (modern_request(1, "tools/list"), {"mcp_method": None}, "Mcp-Method does not match the body's method"),
            (
                modern_request(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
                {"mcp_name": "greet"},
                "Mcp-Name does not match the body's tool name",
            ),
            (
                modern_request(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}}),
                {"mcp_name": None},
                "Mcp-Name does not match the body's tool name",
            ),
        ],
        ids=["version", "method", "method-case", "no-method", "name", "no-name"],
    )
    async def test_routing_headers_that_differ_from_the_body_are_refused_with_400_header_mismatch(
        self, http, body, headers, message
    ):
        reply = await post(http, body, **headers)

        assert (reply.status, reply.headers) == (400, JSON)
        assert reply.json() == error(HEADER_MISMATCH, message, 1)

    async def test_a_duplicated_routing_header_is_refused_with_400_header_mismatch(self, http):
        reply = await post(http, modern_request(1, "tools/list"), repeated=[(b"mcp-method", b"tools/list")])

        assert (reply.status, reply.json()) == (400, error(HEADER_MISMATCH, "Duplicate mcp-method header", 1))

    async def test_headers_are_checked_before_the_version(self, http):
        body = modern_request(1, "tools/list", version=UNSUPPORTED)

        reply = await post(http, body, mcp_protocol_version=UNSUPPORTED, mcp_method="prompts/list")

        assert (reply.status, reply.json()) == (
            400,
            error(HEADER_MISMATCH, "Mcp-Method does not match the body's method", 1),
        )

    async def test_an_unsupported_version_is_refused_with_400_and_the_supported_list(self, http):
        body = modern_request(301, "tools/list", version=UNSUPPORTED)

        reply = await post(http, body, mcp_protocol_version=UNSUPPORTED)

        assert (reply.status, reply.headers) == (400, JSON)
        assert reply.json() == error(
            UNSUPPORTED_PROTOCOL_VERSION,
            "Unsupported protocol version",
            301,
            {"supported": [MODERN], "requested": UNSUPPORTED},
        )

    async def test_the_tool_name_header_may_carry_surrounding_whitespace(self, http):
        body = modern_request(1, "tools/call", {"name": "add", "arguments": {"a": 2, "b": 2}})

        reply = await post(http, body, mcp_name="  add  ")

        assert (reply.status, reply.json()["result"]["structuredContent"]) == (200, {"result": 4})

    async def test_without_a_protocol_version_header_the_request_is_taken_as_legacy(self, http):
        reply = await post(http, modern_request(1, "tools/list"), mcp_protocol_version=None)

        assert (reply.status, reply.json()) == (400, error(INVALID_REQUEST, "Missing Mcp-Session-Id header"))


class TestMethodsAndShapes:
    @pytest.mark.parametrize(
        "method", ["initialize", "ping", "logging/setLevel", "resources/subscribe", "prompts/list", "unknown/method"]
    )
    async def test_methods_outside_the_modern_tools_surface_are_answered_404(self, http, method):
        reply = await post(http, modern_request(500, method))

        assert (reply.status, reply.headers) == (404, JSON)
        assert reply.json() == error(METHOD_NOT_FOUND, f"Method not found: {method}", 500)

    @pytest.mark.parametrize("method", ["GET", "DELETE", "PUT"])
    async def test_methods_other_than_post_are_refused_with_405_allowing_post(self, http, method):
        reply = await http.send(method=method, headers=modern_headers("tools/list"))

        assert (reply.status, reply.headers) == (405, {**JSON, "allow": "POST"})
        assert reply.json() == error(INVALID_REQUEST, "Use POST")

    async def test_a_notification_is_accepted_with_202(self, http):
        message = notification(
            "notifications/cancelled", {"requestId": 1, "_meta": modern_request(0, "x")["params"]["_meta"]}
        )

        reply = await http.send(message, headers=modern_headers("notifications/cancelled"))

        assert (reply.status, reply.headers, reply.body) == (202, {}, b"")

    async def test_a_notification_without_the_envelope_is_refused_with_400(self, http):
        message = notification("notifications/cancelled", {"requestId": 1})

        reply = await http.send(message, headers=modern_headers("notifications/cancelled"))

        assert (reply.status, reply.json()) == (
            400,
            error(
                INVALID_PARAMS,
                "Missing _meta: 2026-07-28 requests carry the protocol version and client capabilities",
                None,
                {"missing": [PROTOCOL_VERSION_META, CLIENT_CAPABILITIES_META]},
            ),
        )

    @pytest.mark.parametrize(
        ("body", "message"),
        [
            ([modern_request(1, "tools/list")], "Send one message, not a batch"),
            ({"jsonrpc": "2.0", "id": 1, "result": {}}, "Body must be a single JSON-RPC request or notification"),
            ({"jsonrpc": "1.0", "id": 1, "method": "tools/list"}, '"jsonrpc" must be "2.0"'),
        ],
        ids=["batch", "response", "envelope"],
    )
    async def test_anything_but_one_request_or_notification_is_refused_with_400(self, http, body, message):
        reply = await http.send(body, headers=modern_headers("tools/list"))

        request_id = 1 if message == '"jsonrpc" must be "2.0"' else None
        assert (reply.status, reply.json()) == (400, error(INVALID_REQUEST, message, request_id))


class TestCapabilities:
    async def test_a_tool_needing_an_undeclared_capability_is_refused_with_400(self, http):
        reply = await post(http, modern_request(401, "tools/call", {"name": "needs_sampling", "arguments": {}}))

        assert (reply.status, reply.headers) == (400, JSON)
        assert reply.json() == error(
            MISSING_CLIENT_CAPABILITY,
            "The tool needs the client capabilities: sampling",
            401,
            {"requiredCapabilities": {"sampling": {}}},
        )

    async def test_a_tool_runs_once_the_client_declares_the_capability(self, http):
        body = modern_request(
            402, "tools/call", {"name": "needs_sampling", "arguments": {}}, capabilities={"sampling": {}}
        )

        reply = await post(http, body)

        assert (reply.status, reply.json()) == (
            200,
            complete(402, {"content": [{"type": "text", "text": "sampling declared"}], "isError": False}),
        )


class TestStreams:
    async def test_a_call_with_a_progress_token_streams_progress_then_the_result(self, http):
        body = modern_request(7, "tools/call", {"name": "sync_progress", "arguments": {"steps": 2}})
        body["params"]["_meta"]["progressToken"] = "p"

        reply = await post(http, body)

        assert (reply.status, reply.headers) == (200, SSE_HEADERS)
        assert reply.messages() == [
            notification("notifications/progress", {"progressToken": "p", "progress": 1, "total": 2}),
            notification("notifications/progress", {"progressToken": "p", "progress": 2, "total": 2}),
            complete(7, {"content": [{"type": "text", "text": "done"}], "isError": False}),
        ]

    async def test_without_sse_in_accept_the_progress_is_dropped_and_the_result_is_json(self, http):
        body = modern_request(8, "tools/call", {"name": "sync_progress", "arguments": {"steps": 2}})
        body["params"]["_meta"]["progressToken"] = "p"

        reply = await post(http, body, accept="application/json")

        assert (reply.status, reply.json()) == (
            200,
            complete(8, {"content": [{"type": "text", "text": "done"}], "isError": False}),
        )

    async def test_listen_acknowledges_first_then_sends_tagged_list_changed_after_an_edit(self, http):
        headers = modern_headers("subscriptions/listen")
        stream = await http.open(listen("L1", toolsListChanged=True), headers=headers)
        ack = await stream.message()
        await db_call(edit_tool)
        changed = await stream.message()
        await stream.disconnect()

        assert (stream.status, stream.headers) == (200, SSE_HEADERS)
        assert ack == tagged(ACKNOWLEDGED, "L1", notifications={"toolsListChanged": True})
        assert changed == tagged(LIST_CHANGED, "L1")

    async def test_listen_honours_its_filter(self, http):
        headers = modern_headers("subscriptions/listen")
        tools_stream = await http.open(listen(1, toolsListChanged=True), headers=headers)
        prompts_stream = await http.open(listen(2, promptsListChanged=True), headers=headers)
        acks = [await tools_stream.message(), await prompts_stream.message()]

        await db_call(edit_tool)
        heard = await tools_stream.message()

        assert acks == [
            tagged(ACKNOWLEDGED, 1, notifications={"toolsListChanged": True}),
            tagged(ACKNOWLEDGED, 2, notifications={}),
        ]
        assert heard == tagged(LIST_CHANGED, 1)
        assert await prompts_stream.nothing_more()

    async def test_listen_without_event_stream_in_accept_is_refused_with_406(self, http):
        reply = await post(http, listen(9, toolsListChanged=True), accept="application/json")

        assert (reply.status, reply.headers) == (406, JSON)
        assert reply.json() == error(INVALID_REQUEST, "subscriptions/listen answers text/event-stream", 9)

    async def test_listen_that_rules_the_event_stream_out_with_q0_is_refused_with_406(self, http):
        reply = await post(http, listen(9, toolsListChanged=True), accept="application/json, text/event-stream;q=0")

        assert (reply.status, reply.headers) == (406, JSON)
        assert reply.json() == error(INVALID_REQUEST, "subscriptions/listen answers text/event-stream", 9)

    async def test_listen_with_a_malformed_filter_is_refused_with_400(self, http):
        body = modern_request(10, "subscriptions/listen", {"notifications": True})

        reply = await post(http, body)

        assert (reply.status, reply.json()) == (400, error(INVALID_PARAMS, '"notifications" must be an object', 10))

    async def test_closing_a_listen_stream_ends_the_subscription(self, http):
        stream = await http.open(listen(11, toolsListChanged=True), headers=modern_headers("subscriptions/listen"))
        await stream.message()

        await stream.disconnect()

        assert stream.communicator.future.done()
        assert [listener for listener in hub().listeners if isinstance(listener, Session)] == []
