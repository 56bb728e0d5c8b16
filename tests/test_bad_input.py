"""Malformed, oversized, deeply nested and mistyped frames: answered, and harmless to every session."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import pytest

from mcp_tools.conf import DEFAULTS
from mcp_tools.exceptions import INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND, PARSE_ERROR

pytestmark = pytest.mark.django_db(transaction=True)

MAX_BYTES = DEFAULTS["MAX_MESSAGE_BYTES"]
MAX_DEPTH = DEFAULTS["MAX_DEPTH"]


@dataclass(frozen=True)
class Case:
    id: str
    frame: str | bytes
    reply: Any  # the whole next frame, or None when nothing may be answered
    settings: dict[str, Any] = field(default_factory=dict)
    revision: str = "2025-11-25"


def message(**fields: Any) -> str:
    return json.dumps({"jsonrpc": "2.0", **fields})


def error(request_id: Any, code: int, text: str, data: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": code, "message": text}
    if data is not None:
        body["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": body}


def result(request_id: Any, value: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": value}


def ping_nested_in_lists(levels: int) -> str:
    """A ping whose params hold ``levels`` nested arrays (the message itself is 2 levels deep)."""
    return '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":' + "[" * levels + "]" * levels + "}}"


def ping_padded_to(size: int, char: str = "x") -> str:
    head, tail = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"', '"}}'
    return head + char * (size - len(head) - len(tail)) + tail


NOT_A_STRING_OR_INTEGER = '"id" must be a string or an integer'

CASES = [
    Case(
        "truncated JSON",
        '{"jsonrpc": "2.0", "id": 1, "method": "ping"',
        error(None, PARSE_ERROR, "Parse error"),
    ),
    Case("not JSON at all", "ping me", error(None, PARSE_ERROR, "Parse error")),
    Case(
        "binary frame",
        b'{"jsonrpc":"2.0","id":1,"method":"ping"}',
        error(None, INVALID_REQUEST, "Binary frames are not supported; send text"),
    ),
    Case("frame of exactly MAX_MESSAGE_BYTES", ping_padded_to(MAX_BYTES), result(1, {})),
    Case(
        "frame over MAX_MESSAGE_BYTES",
        ping_padded_to(MAX_BYTES + 1),
        error(None, INVALID_REQUEST, f"Message larger than {MAX_BYTES} bytes"),
    ),
    Case(
        "frame over MAX_MESSAGE_BYTES in UTF-8 though not in characters",
        ping_padded_to(250, "é"),
        error(None, INVALID_REQUEST, "Message larger than 300 bytes"),
        settings={"MAX_MESSAGE_BYTES": 300},
    ),
    Case(
        "10,000 nested arrays",
        "[" * 10_000 + "]" * 10_000,
        error(None, INVALID_REQUEST, "Message nested too deeply"),
    ),
    Case(
        "10,000 nested objects",
        '{"a":' * 10_000 + "1" + "}" * 10_000,
        error(None, INVALID_REQUEST, "Message nested too deeply"),
    ),
    Case(
        "100 levels against MAX_DEPTH",
        ping_nested_in_lists(100),
        error(None, INVALID_REQUEST, f"Message nested deeper than {MAX_DEPTH} levels"),
    ),
    Case(
        "one level past MAX_DEPTH",
        ping_nested_in_lists(MAX_DEPTH - 1),
        error(None, INVALID_REQUEST, f"Message nested deeper than {MAX_DEPTH} levels"),
    ),
    Case("exactly MAX_DEPTH levels", ping_nested_in_lists(MAX_DEPTH - 2), result(1, {})),
    Case(
        "id as object",
        message(id={"n": 1}, method="ping"),
        error(None, INVALID_REQUEST, NOT_A_STRING_OR_INTEGER),
    ),
    Case("id as list", message(id=[1], method="ping"), error(None, INVALID_REQUEST, NOT_A_STRING_OR_INTEGER)),
    Case("id as true", message(id=True, method="ping"), error(None, INVALID_REQUEST, NOT_A_STRING_OR_INTEGER)),
    Case("id as float", message(id=1.5, method="ping"), error(None, INVALID_REQUEST, NOT_A_STRING_OR_INTEGER)),
    Case("id as null", message(id=None, method="ping"), error(None, INVALID_REQUEST, NOT_A_STRING_OR_INTEGER)),
    Case("method as number", message(id=3, method=42), error(3, INVALID_REQUEST, '"method" must be a string')),
    Case("method as null", message(id=3, method=None), error(3, INVALID_REQUEST, '"method" must be a string')),
    Case(
        "params as list",
        message(id=4, method="ping", params=[1, 2]),
        error(4, INVALID_REQUEST, '"params" must be an object'),
    ),
    Case(
        "params as null",
        message(id=4, method="ping", params=None),
        error(4, INVALID_REQUEST, '"params" must be an object'),
    ),
    Case(
        "params as string on a notification",
        message(method="notifications/initialized", params="x"),
        error(None, INVALID_REQUEST, '"params" must be an object'),
    ),
    Case(
        "jsonrpc missing",
        json.dumps({"id": 5, "method": "ping"}),
        error(5, INVALID_REQUEST, '"jsonrpc" must be "2.0"'),
    ),
    Case(
        "jsonrpc 1.0",
        json.dumps({"jsonrpc": "1.0", "id": 5, "method": "ping"}),
        error(5, INVALID_REQUEST, '"jsonrpc" must be "2.0"'),
    ),
    Case("a number", "42", error(None, INVALID_REQUEST, "Message must be a JSON object")),
    Case("a string", '"ping"', error(None, INVALID_REQUEST, "Message must be a JSON object")),
    Case("null", "null", error(None, INVALID_REQUEST, "Message must be a JSON object")),
    Case(
        "neither request nor response",
        message(id=7),
        error(7, INVALID_REQUEST, "Message is neither request, notification nor response"),
    ),
    Case(
        "both result and error",
        message(id=7, result={}, error={"code": 1, "message": "x"}),
        error(7, INVALID_REQUEST, "Message is neither request, notification nor response"),
    ),
    Case("empty batch", "[]", error(None, INVALID_REQUEST, "Empty batch")),
    Case(
        "batch where the revision has none",
        "[" + message(id=1, method="ping") + "]",
        error(None, INVALID_REQUEST, "Batches are not supported by the negotiated revision"),
    ),
    Case(
        "batch with a bad member",
        "[" + message(id=1, method="ping") + ", 5]",
        [result(1, {}), error(None, INVALID_REQUEST, "Message must be a JSON object")],
        revision="2025-03-26",
    ),
    Case(
        "initialize inside a batch",
        "[" + message(id=1, method="initialize", params={"protocolVersion": "2025-03-26"}) + "]",
        error(None, INVALID_REQUEST, "initialize must not be part of a batch"),
        revision="2025-03-26",
    ),
    Case(
        "unknown method",
        message(id=8, method="resources/list"),
        error(8, METHOD_NOT_FOUND, "Method not found: resources/list"),
    ),
    Case(
        "second initialize",
        message(id=8, method="initialize", params={"protocolVersion": "2025-11-25"}),
        error(8, INVALID_REQUEST, "The session is already initialized"),
    ),
    Case(
        "tool name as number",
        message(id=9, method="tools/call", params={"name": 5}),
        error(9, INVALID_PARAMS, '"name" must be a string'),
    ),
    Case(
        "arguments as list",
        message(id=9, method="tools/call", params={"name": "add", "arguments": [1, 2]}),
        result(
            9,
            {
                "content": [{"type": "text", "text": 'Invalid arguments: "arguments" must be an object'}],
                "isError": True,
            },
        ),
    ),
    Case(
        "argument of the wrong type",
        message(id=9, method="tools/call", params={"name": "add", "arguments": {"a": "1", "b": 2}}),
        result(
            9,
            {
                "content": [{"type": "text", "text": "Invalid arguments: a: '1' is not of type 'integer'"}],
                "isError": True,
            },
        ),
    ),
    Case(
        "cursor as number",
        message(id=10, method="tools/list", params={"cursor": 5}),
        error(10, INVALID_PARAMS, "Invalid cursor", {"reason": "The cursor is not one this server issued."}),
    ),
    Case(
        "progress token as object is ignored",
        message(
            id=11,
            method="tools/call",
            params={"name": "add", "arguments": {"a": 1, "b": 2}, "_meta": {"progressToken": {}}},
        ),
        result(
            11,
            {
                "content": [{"type": "text", "text": "3"}],
                "structuredContent": {"result": 3},
                "isError": False,
            },
        ),
    ),
    Case(
        "unknown fields are ignored",
        message(id=12, method="ping", params={"extra": [1]}, extension=True, more={"a": None}),
        result(12, {}),
    ),
    Case("a client response", message(id=99, result={}), None),
    Case("a client error response", message(id=None, error={"code": -1, "message": "no"}), None),
    Case("an unknown notification", message(method="notifications/whatever", params={"x": 1}), None),
    Case(
        "cancelling an unknown request",
        message(method="notifications/cancelled", params={"requestId": 404}),
        None,
    ),
    Case(
        "cancelling with an object id",
        message(method="notifications/cancelled", params={"requestId": {}}),
        None,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
async def test_bad_input_is_answered_and_leaves_every_session_working(ws_session, settings, case):
    if case.settings:
        settings.MCP_TOOLS = {**settings.MCP_TOOLS, **case.settings}
    client, bystander = await ws_session(initialize=False), await ws_session()
    await client.initialize(case.revision)

    if isinstance(case.frame, bytes):
        await client.communicator.send_to(bytes_data=case.frame)
    else:
        await client.communicator.send_to(text_data=case.frame)
    replies = [] if case.reply is None else [await client.receive()]
    await client.send({"jsonrpc": "2.0", "id": "after", "method": "ping"})
    after = await client.receive()
    await bystander.send({"jsonrpc": "2.0", "id": "bystander", "method": "ping"})
    unaffected = await bystander.receive()

    assert replies == ([] if case.reply is None else [case.reply])
    assert after == result("after", {})
    assert unaffected == result("bystander", {})
