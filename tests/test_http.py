"""Streamable HTTP in the legacy era: sessions, content negotiation, SSE, guards, and cancellation."""

from __future__ import annotations

import asyncio
import json
import math
import re
from collections.abc import AsyncIterator, Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from django.test import Client

from mcp_tools import __version__
from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR
from mcp_tools.models import AccessToken, Tool
from mcp_tools.notify.hub import hub
from mcp_tools.tools.registry import registry
from mcp_tools.transports.http import StreamListener
from tests.challenges import challenge
from tests.db import db_call
from tests.live.asgi_http import HttpClient, notification, request
from tests.live.sse import Frame
from tests.live.tasks import tasks_running
from tests.origins import CSRF_ORIGIN_VERDICTS, LISTED_ORIGIN_VERDICTS, ORIGIN_CASES, ORIGIN_IDS, PROXY_CASES
from tests.testapp.mcp_tools import gate
from tests.websocket import TIMEOUT, WSClient

pytestmark = pytest.mark.django_db(transaction=True)

LATEST = "2025-11-25"
JSON = {"content-type": "application/json"}
SSE_HEADERS = {
    "content-type": "text/event-stream",
    "cache-control": "no-cache, no-transform",
    "x-accel-buffering": "no",
}
LIST_CHANGED = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}
ADD_RESULT = {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}, "isError": False}
VISIBLE_ASCII = re.compile(r"[\x21-\x7e]+")


def error(code: int, message: str, request_id: Any = None, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def result(request_id: Any, value: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def call(request_id: Any, name: str, arguments: dict[str, Any], progress_token: Any = None) -> dict[str, Any]:
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if progress_token is not None:
        params["_meta"] = {"progressToken": progress_token}
    return request(request_id, "tools/call", params)


def progress(token: Any, step: int, total: int, message: str | None = None) -> dict[str, Any]:
    params: dict[str, Any] = {"progressToken": token, "progress": step, "total": total}
    if message is not None:
        params["message"] = message
    return notification("notifications/progress", params)


def edit_tool() -> None:
    tool = Tool.objects.get(name="greet")
    tool.title = "Say hello"
    tool.save()


def issue_token(username: str) -> str:
    from django.contrib.auth import get_user_model

    other = get_user_model().objects.create_user(username, password="pw")
    return AccessToken.objects.issue(other, name="tests")[1]


def login_cookie(user: Any) -> str:
    browser = Client()
    browser.force_login(user)
    return f"sessionid={browser.cookies['sessionid'].value}"


@pytest.fixture
async def http(token: str, tools: None) -> AsyncIterator[HttpClient]:
    client = HttpClient(token)
    yield client
    await client.close()


@pytest.fixture
async def session(http: HttpClient) -> HttpClient:
    await http.initialize(LATEST)
    return http


@pytest.fixture
def held_gate(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """Holds ``slow_count`` at its first step; ``entered`` is set once a call waits there."""
    gate.reset()
    entered = asyncio.Event()
    original = gate.wait

    async def wait() -> None:
        entered.set()
        await original()

    monkeypatch.setattr(gate, "wait", wait)
    yield SimpleNamespace(entered=entered)
    gate.open()


class TestSessions:
    async def test_initialize_answers_json_with_a_random_visible_ascii_session_id(self, http):
        first = await http.initialize(LATEST)
        second = await HttpClient(http.token).initialize(LATEST)

        assert (first.status, first.headers) == (200, {**JSON, "mcp-session-id": http.session_id})
        assert first.json() == result(
            0,
            {
                "protocolVersion": LATEST,
                "capabilities": {"tools": {"listChanged": True}},
                "serverInfo": {"name": "django-mcp-tools", "version": __version__},
            },
        )
        assert VISIBLE_ASCII.fullmatch(first.headers["mcp-session-id"])
        assert len(first.headers["mcp-session-id"]) >= 32
        assert first.headers["mcp-session-id"] != second.headers["mcp-session-id"]

    async def test_a_failed_initialize_opens_no_session(self, http):
        reply = await http.send(request(1, "initialize", {"protocolVersion": "banana", "capabilities": {}}))

        assert (reply.status, reply.headers) == (400, JSON)
        assert reply.json() == error(
            INVALID_PARAMS,
            "Unsupported protocol version",
            1,
            {"supported": [1, "2024-10-07", "2024-11-05", "2025-03-26", "2025-06-18", LATEST], "requested": "banana"},
        )

    async def test_a_request_without_the_session_id_is_refused_with_400(self, session):
        reply = await session.send(request(1, "tools/list"), headers={"mcp-session-id": None})

        assert (reply.status, reply.headers) == (400, JSON)
        assert reply.json() == error(INVALID_REQUEST, "Missing Mcp-Session-Id header")

    async def test_an_unknown_session_id_is_answered_404(self, session):
        reply = await session.send(request(1, "tools/list"), headers={"mcp-session-id": "no-such-session"})

        assert (reply.status, reply.headers) == (404, JSON)
        assert reply.json() == error(INVALID_REQUEST, "Session not found")

    async def test_a_json_answer_states_its_length_so_it_is_not_sent_in_chunks(self, session):
        opened = await session.open(request(1, "tools/list"))
        body = b""
        while not opened.ended:
            body += await opened.chunk()

        assert opened.headers["content-length"] == str(len(body))
        assert "transfer-encoding" not in opened.headers
        assert [tool["name"] for tool in json.loads(body)["result"]["tools"]]

    async def test_delete_ends_the_session_and_its_id_then_answers_404(self, session):
        ended = await session.send(method="DELETE")
        listing = await session.send(request(1, "tools/list"))
        stream = await session.send(method="GET")
        again = await session.send(method="DELETE")

        assert (ended.status, ended.headers, ended.body) == (200, {}, b"")
        for reply in (listing, stream, again):
            assert (reply.status, reply.json()) == (404, error(INVALID_REQUEST, "Session not found"))

    async def test_a_session_id_presented_by_another_user_is_answered_404(self, session):
        other = HttpClient(await db_call(issue_token, "bob"), session_id=session.session_id)

        reply = await other.send(request(1, "tools/list"), headers={"mcp-protocol-version": LATEST})
        own = await session.send(request(2, "tools/list"))

        assert (reply.status, reply.json()) == (404, error(INVALID_REQUEST, "Session not found"))
        assert own.status == 200

    @pytest.mark.parametrize("header", ["2025-06-18", "2024-11-05"])
    async def test_a_protocol_version_header_other_than_the_sessions_is_refused_with_400(self, session, header):
        reply = await session.send(request(1, "tools/list"), headers={"mcp-protocol-version": header})

        assert (reply.status, reply.headers) == (400, JSON)
        assert reply.json() == error(INVALID_REQUEST, f"MCP-Protocol-Version must be {LATEST}")

    async def test_without_a_protocol_version_header_the_session_revision_applies(self, session):
        reply = await session.send(call(1, "add", {"a": 2, "b": 3}), headers={"mcp-protocol-version": None})

        assert reply.json() == result(1, ADD_RESULT)

    @pytest.mark.parametrize(
        "message",
        [
            notification("notifications/initialized"),
            notification("notifications/cancelled", {"requestId": 99}),
            {"jsonrpc": "2.0", "id": 7, "result": {}},
            {"jsonrpc": "2.0", "id": 7, "error": {"code": -1, "message": "no"}},
        ],
        ids=["initialized", "cancelled", "result", "error"],
    )
    async def test_notifications_and_responses_are_accepted_with_202_and_no_body(self, session, message):
        reply = await session.send(message)

        assert (reply.status, reply.headers, reply.body) == (202, {}, b"")

    async def test_an_invalid_message_is_refused_with_400(self, session):
        reply = await session.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": [1]})

        assert (reply.status, reply.json()) == (400, error(INVALID_REQUEST, '"params" must be an object', 3))


class TestRequests:
    async def test_tools_list_pages_match_the_websocket_answers(self, session, ws: WSClient):
        await ws.initialize(LATEST)
        names: list[str] = []
        params: dict[str, Any] = {}
        for page in range(1, 10):
            reply = await session.send(request(page, "tools/list", params))
            over_websocket = await ws.request("tools/list", params)
            assert (reply.status, reply.headers) == (200, {**JSON, "mcp-session-id": session.session_id})
            assert reply.json() == {**over_websocket, "id": page}
            names += [tool["name"] for tool in reply.json()["result"]["tools"]]
            if "nextCursor" not in reply.json()["result"]:
                break
            params = {"cursor": reply.json()["result"]["nextCursor"]}

        assert names == [registered.key for registered in registry.all()]
        assert page == math.ceil(len(registry.all()) / mcp_settings.PAGE_SIZE) >= 3

    async def test_tools_call_answers_json(self, session):
        reply = await session.send(call("c", "add", {"a": 2, "b": 3}))

        assert (reply.status, reply.headers) == (200, {**JSON, "mcp-session-id": session.session_id})
        assert reply.json() == result("c", ADD_RESULT)

    async def test_request_errors_are_json_rpc_errors_with_status_200(self, session):
        unknown = await session.send(call(1, "nope", {}))
        pong = await session.send(request(2, "ping"))

        assert (unknown.status, unknown.json()) == (
            200,
            error(INVALID_PARAMS, "Unknown tool: nope", 1, {"reason": "Unknown tool: nope"}),
        )
        assert (pong.status, pong.json()) == (200, result(2, {}))

    async def test_a_call_with_a_progress_token_streams_progress_then_the_response(self, session):
        reply = await session.send(call(4, "sync_progress", {"steps": 3}, progress_token="p"))

        assert (reply.status, reply.headers) == (200, {**SSE_HEADERS, "mcp-session-id": session.session_id})
        assert reply.body.decode() == "".join(
            f"event: message\ndata: {line}\n\n"
            for line in (
                '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1,"total":3}}',
                '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":2,"total":3}}',
                '{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":3,"total":3}}',
                '{"jsonrpc":"2.0","id":4,"result":{"content":[{"type":"text","text":"done"}],"isError":false}}',
            )
        )

    async def test_progress_events_arrive_while_the_call_runs(self, session, held_gate):
        stream = await session.open(call(5, "slow_count", {"steps": 2}, progress_token=1))
        first = await stream.message()
        gate.open()

        assert (stream.status, stream.headers) == (200, {**SSE_HEADERS, "mcp-session-id": session.session_id})
        assert first == progress(1, 1, 2, "step 1")
        assert await stream.rest() == [
            progress(1, 2, 2, "step 2"),
            result(
                5,
                {
                    "content": [{"type": "text", "text": '{"counted":2}'}],
                    "structuredContent": {"counted": 2},
                    "isError": False,
                },
            ),
        ]

    async def test_without_sse_in_accept_a_progress_call_answers_json_only(self, session):
        reply = await session.send(
            call(6, "sync_progress", {"steps": 2}, progress_token="p"), headers={"accept": "application/json"}
        )

        assert (reply.status, reply.headers) == (200, {**JSON, "mcp-session-id": session.session_id})
        assert reply.json() == result(6, {"content": [{"type": "text", "text": "done"}], "isError": False})


class TestBatches:
    async def test_a_2025_03_26_session_answers_a_batch_with_an_array(self, http):
        await http.initialize("2025-03-26")

        reply = await http.send(
            [
                call(1, "add", {"a": 2, "b": 3}, progress_token="ignored"),
                notification("notifications/initialized"),
                call(2, "sync_progress", {"steps": 2}, progress_token="also"),
            ]
        )

        assert (reply.status, reply.headers) == (200, JSON)
        assert reply.json() == [
            result(1, {"content": [{"type": "text", "text": "5"}], "isError": False}),
            result(2, {"content": [{"type": "text", "text": "done"}], "isError": False}),
        ]

    async def test_a_batch_of_notifications_only_is_accepted_with_202(self, http):
        await http.initialize("2025-03-26")

        reply = await http.send([notification("notifications/initialized")])

        assert (reply.status, reply.body) == (202, b"")

    @pytest.mark.parametrize(
        ("version", "batch", "message"),
        [
            (LATEST, [request(1, "ping")], "Batches are not supported by the negotiated revision"),
            ("2025-06-18", [request(1, "ping")], "Batches are not supported by the negotiated revision"),
            ("2025-03-26", [], "Empty batch"),
            ("2025-03-26", [request(1, "initialize", {})], "initialize must not be part of a batch"),
        ],
        ids=["2025-11-25", "2025-06-18", "empty", "initialize"],
    )
    async def test_a_refused_batch_is_answered_400(self, http, version, batch, message):
        await http.initialize(version)

        reply = await http.send(batch)

        assert (reply.status, reply.json()) == (400, error(INVALID_REQUEST, message))


class TestStandaloneStream:
    async def test_get_opens_a_stream_that_carries_list_changed_after_a_tool_edit(self, session):
        stream = await session.open(method="GET")
        await db_call(edit_tool)

        assert (stream.status, stream.headers) == (200, {**SSE_HEADERS, "mcp-session-id": session.session_id})
        assert await stream.message() == LIST_CHANGED

    async def test_an_idle_stream_sends_keep_alive_comments(self, session, settings):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "SSE_KEEPALIVE_SECONDS": 0.01}

        stream = await session.open(method="GET")

        assert await stream.frame() == Frame(comments=("keep-alive",))

    async def test_the_client_going_away_ends_the_stream_and_its_subscription(self, session):
        stream = await session.open(method="GET")

        await stream.disconnect()

        assert stream.communicator.future.done()
        assert [listener for listener in hub().listeners if isinstance(listener, StreamListener)] == []

    @pytest.mark.parametrize("accept", ["application/json", "text/html"])
    async def test_get_without_event_stream_in_accept_is_refused_with_406(self, session, accept):
        reply = await session.send(method="GET", headers={"accept": accept})

        assert (reply.status, reply.json()) == (406, error(INVALID_REQUEST, "GET opens a text/event-stream"))

    async def test_get_that_rules_the_event_stream_out_with_q0_is_refused_with_406(self, session):
        reply = await session.send(method="GET", headers={"accept": "text/event-stream;q=0, */*"})

        assert (reply.status, reply.json()) == (406, error(INVALID_REQUEST, "GET opens a text/event-stream"))

    async def test_get_without_a_session_is_refused_with_400(self, session):
        reply = await session.send(method="GET", headers={"mcp-session-id": None})

        assert (reply.status, reply.json()) == (400, error(INVALID_REQUEST, "Missing Mcp-Session-Id header"))


class TestGuards:
    @pytest.mark.parametrize("method", ["PUT", "PATCH", "HEAD"])
    async def test_other_methods_are_refused_with_405_and_allow(self, session, method):
        reply = await session.send(method=method)

        assert (reply.status, reply.headers) == (405, {**JSON, "allow": "GET, POST, DELETE"})
        assert reply.json() == error(INVALID_REQUEST, "Use POST, GET or DELETE")

    @pytest.mark.parametrize("content_type", [None, "text/plain", "application/x-www-form-urlencoded"])
    async def test_a_post_that_is_not_json_is_refused_with_415(self, session, content_type):
        reply = await session.send(request(1, "ping"), headers={"content-type": content_type})

        assert (reply.status, reply.json()) == (415, error(INVALID_REQUEST, "Content-Type must be application/json"))

    async def test_a_json_content_type_with_parameters_is_accepted(self, session):
        reply = await session.send(request(1, "ping"), headers={"content-type": "application/json; charset=utf-8"})

        assert (reply.status, reply.json()) == (200, result(1, {}))

    async def test_a_post_whose_accept_excludes_json_is_refused_with_406(self, session):
        reply = await session.send(request(1, "ping"), headers={"accept": "text/event-stream"})

        assert (reply.status, reply.json()) == (406, error(INVALID_REQUEST, "Accept must include application/json"))

    async def test_a_post_that_rules_json_out_with_q0_is_refused_with_406(self, session):
        reply = await session.send(request(1, "ping"), headers={"accept": "application/json;q=0, */*"})

        assert (reply.status, reply.json()) == (406, error(INVALID_REQUEST, "Accept must include application/json"))

    async def test_a_progress_call_that_rules_the_event_stream_out_with_q0_answers_json_only(self, session):
        reply = await session.send(
            call(6, "sync_progress", {"steps": 2}, progress_token="p"),
            headers={"accept": "application/json, text/event-stream;q=0"},
        )

        assert (reply.status, reply.headers) == (200, {**JSON, "mcp-session-id": session.session_id})
        assert reply.json() == result(6, {"content": [{"type": "text", "text": "done"}], "isError": False})

    async def test_a_content_type_parameter_django_cannot_read_is_ignored_or_refused_400_never_a_500(self, session):
        malformed = {"content-type": "application/json; charset*=x''y"}

        plain = await session.send(request(1, "ping"), headers=malformed)
        # A browser Origin is checked with Django's own reading of the request, which refuses the header.
        from_browser = await session.send(request(2, "ping"), headers={**malformed, "origin": "http://testserver"})

        assert (plain.status, plain.json()) == (200, result(1, {}))
        assert (from_browser.status, from_browser.json()) == (400, error(INVALID_REQUEST, "Malformed request headers"))

    @pytest.mark.parametrize(
        ("body", "expected"),
        [
            (b'{"jsonrpc": "2.0", "id": 1, "method": ', error(PARSE_ERROR, "Parse error")),
            (b"\xff\xfe", error(PARSE_ERROR, "Parse error")),
            (b"[" * 40 + b"]" * 40, error(INVALID_REQUEST, "Message nested deeper than 32 levels")),
        ],
        ids=["truncated", "not-utf8", "too-deep"],
    )
    async def test_a_body_that_is_not_acceptable_json_is_refused_with_400(self, session, body, expected):
        reply = await session.send(body)

        assert (reply.status, reply.json()) == (400, expected)

    @pytest.mark.parametrize("chunks", [[b"x" * 101], [b"x" * 60, b"x" * 60]], ids=["one-chunk", "two-chunks"])
    async def test_a_body_over_the_size_limit_is_refused_with_413(self, session, settings, chunks):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_MESSAGE_BYTES": 100}

        reply = await session.send(chunks=chunks)

        assert (reply.status, reply.json()) == (413, error(INVALID_REQUEST, "Message larger than 100 bytes"))

    async def test_a_foreign_host_is_refused_with_421(self, session):
        reply = await session.send(request(1, "ping"), headers={"host": "evil.example"})

        assert (reply.status, reply.json()) == (421, error(INVALID_REQUEST, "Invalid Host header"))

    @pytest.mark.parametrize(("secure", "host", "origin", "accepted"), ORIGIN_CASES, ids=ORIGIN_IDS)
    async def test_origin_must_be_absent_or_the_connections_own_scheme_host_and_port(
        self, session, secure, host, origin, accepted
    ):
        session.scheme = "https" if secure else "http"

        reply = await session.send(request(1, "ping"), headers={"host": host, "origin": origin})

        if accepted:
            assert (reply.status, reply.json()) == (200, result(1, {}))
        else:
            assert (reply.status, reply.headers) == (403, JSON)
            assert reply.json() == error(INVALID_REQUEST, "Invalid Origin header")

    async def test_allowed_origins_and_csrf_trusted_origins_admit_their_origins_only(self, session, settings):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "ALLOWED_ORIGINS": ["https://app.example", "http://[::1]:3000"]}
        settings.CSRF_TRUSTED_ORIGINS = ["https://shop.example", "https://*.example.com"]
        verdicts = [*LISTED_ORIGIN_VERDICTS, *CSRF_ORIGIN_VERDICTS]

        statuses = [(await session.send(request(1, "ping"), headers={"origin": o})).status for o, _ in verdicts]

        assert statuses == [200 if accepted else 403 for _origin, accepted in verdicts]

    @pytest.mark.parametrize(("forwarded", "origin", "accepted"), PROXY_CASES)
    async def test_secure_proxy_ssl_header_decides_the_scheme_of_the_own_origin(
        self, session, settings, forwarded, origin, accepted
    ):
        settings.SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

        reply = await session.send(request(1, "ping"), headers={"origin": origin, "x-forwarded-proto": forwarded})

        assert reply.status == (200 if accepted else 403)


class TestAuthentication:
    @pytest.mark.parametrize(
        ("authorization", "message", "oauth_error"),
        [
            (None, "Authentication required", ""),
            ("Bearer mcp_not-a-token", "The access token is invalid or expired.", "invalid_token"),
            ("Basic YWxpY2U6cHc=", "Use 'Authorization: Bearer <token>'.", "invalid_request"),
        ],
        ids=["none", "invalid", "basic"],
    )
    async def test_without_valid_credentials_the_answer_is_401_with_a_challenge(
        self, http, authorization, message, oauth_error
    ):
        reply = await http.send(request(0, "initialize", {}), headers={"authorization": authorization})

        expected = challenge(oauth_error, message if oauth_error else "")
        assert (reply.status, reply.headers) == (401, {**JSON, "www-authenticate": expected})
        assert reply.json() == error(INVALID_REQUEST, message)

    async def test_a_stranger_is_refused_401_before_any_body_is_read(self, http, settings):
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_MESSAGE_BYTES": 100}

        reply = await http.send(chunks=[b"x" * 101], headers={"authorization": "Bearer mcp_not-a-token"})

        assert (reply.status, reply.json()["error"]["message"]) == (401, "The access token is invalid or expired.")

    async def test_with_drf_classes_an_oversized_body_is_refused_with_413_before_credentials_are_looked_at(
        self, http, settings
    ):
        # DRF classes may sign the body, so it is read (within the limit) before they run.
        settings.MCP_TOOLS = {
            **settings.MCP_TOOLS,
            "MAX_MESSAGE_BYTES": 100,
            "AUTHENTICATION_CLASSES": ["rest_framework.authentication.TokenAuthentication"],
        }

        reply = await http.send(chunks=[b"x" * 101], headers={"authorization": "Token not-a-token"})

        assert (reply.status, reply.json()) == (413, error(INVALID_REQUEST, "Message larger than 100 bytes"))

    async def test_a_logged_in_session_cookie_authenticates_the_caller(self, user, tools, http_door):
        browser = HttpClient(door=http_door)
        cookie = {"cookie": await db_call(login_cookie, user)}

        opened = await browser.send(
            request(0, "initialize", {"protocolVersion": LATEST, "capabilities": {}}), headers=cookie
        )
        browser.session_id = opened.headers["mcp-session-id"]
        caller = await browser.send(call(1, "whoami", {}), headers=cookie)
        anonymous = await browser.send(call(2, "whoami", {}))

        assert (opened.status, caller.status) == (200, 200)
        assert caller.json() == result(
            1,
            {
                "content": [{"type": "text", "text": '{"username":"alice"}'}],
                "structuredContent": {"username": "alice"},
                "isError": False,
            },
        )
        assert (anonymous.status, anonymous.json()) == (401, error(INVALID_REQUEST, "Authentication required"))


class TestCancellation:
    async def test_notifications_cancelled_on_the_session_ends_a_streaming_call_without_a_response(
        self, session, held_gate
    ):
        stream = await session.open(call("c1", "slow_count", {"steps": 3}, progress_token="t"))
        assert await stream.message() == progress("t", 1, 3, "step 1")
        [running] = tasks_running("slow_count")

        accepted = await session.send(notification("notifications/cancelled", {"requestId": "c1", "reason": "enough"}))
        rest = await stream.rest()
        await asyncio.wait([running], timeout=TIMEOUT)

        assert (accepted.status, accepted.body) == (202, b"")
        assert rest == []
        assert running.cancelled()

    async def test_notifications_cancelled_ends_a_json_call_with_202_and_no_response(self, session, held_gate):
        pending = asyncio.ensure_future(
            session.send(call("c2", "slow_count", {"steps": 3}), headers={"accept": "application/json"})
        )
        await asyncio.wait_for(held_gate.entered.wait(), TIMEOUT)
        [running] = tasks_running("slow_count")

        accepted = await session.send(notification("notifications/cancelled", {"requestId": "c2"}))
        reply = await asyncio.wait_for(pending, TIMEOUT)

        assert (accepted.status, accepted.body) == (202, b"")
        assert (reply.status, reply.headers, reply.body) == (202, {"mcp-session-id": session.session_id}, b"")
        assert running.cancelled()

    async def test_cancelling_in_another_session_leaves_the_call_running(self, session, held_gate):
        stream = await session.open(call("c3", "slow_count", {"steps": 1}, progress_token="t"))
        assert await stream.message() == progress("t", 1, 1, "step 1")
        other = HttpClient(session.token)
        await other.initialize(LATEST)

        await other.send(notification("notifications/cancelled", {"requestId": "c3"}))
        gate.open()

        assert await stream.rest() == [
            result(
                "c3",
                {
                    "content": [{"type": "text", "text": '{"counted":1}'}],
                    "structuredContent": {"counted": 1},
                    "isError": False,
                },
            )
        ]
