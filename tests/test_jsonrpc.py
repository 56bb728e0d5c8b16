"""JSON-RPC 2.0 to the letter: decoding, classification, encoding, and how the server answers each case."""

from __future__ import annotations

import json
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_tools.exceptions import (
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    PARSE_ERROR,
    InvalidParams,
    InvalidRequest,
    ParseError,
)
from mcp_tools.protocol import jsonrpc
from mcp_tools.protocol.errors import error_response
from mcp_tools.protocol.jsonrpc import Invalid, Notification, RawJSON, Request, Response
from tests.messages import LEGACY, error, rpc
from tests.wire import Wire, connected

db = pytest.mark.django_db(transaction=True)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=20,
)


# parse ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["{", "", "nul", "{'a': 1}", "[1,]", b"\xff\xfe", b'{"a": "\xc3"}'])
def test_parse_raises_parse_error_for_text_that_is_not_json(text: str | bytes) -> None:
    with pytest.raises(ParseError):
        jsonrpc.parse(text)


def test_parse_turns_runaway_nesting_into_an_invalid_request() -> None:
    with pytest.raises(InvalidRequest, match="nested too deeply"):
        jsonrpc.parse("[" * 200_000 + "]" * 200_000)


# classify ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": "ping"}, Request(1, "ping", {})),
        ({"jsonrpc": "2.0", "id": "a", "method": "m", "params": {"x": 1}}, Request("a", "m", {"x": 1})),
        ({"jsonrpc": "2.0", "id": 0, "method": "m"}, Request(0, "m", {})),
        ({"jsonrpc": "2.0", "id": "", "method": "m"}, Request("", "m", {})),
        ({"jsonrpc": "2.0", "method": "n"}, Notification("n", {})),
        ({"jsonrpc": "2.0", "method": "n", "params": {"k": []}}, Notification("n", {"k": []})),
        ({"jsonrpc": "2.0", "id": 4, "result": {}}, Response(4, {})),
        (
            {"jsonrpc": "2.0", "id": "x", "error": {"code": 1, "message": "no"}},
            Response("x", None, {"code": 1, "message": "no"}),
        ),
        (
            {"jsonrpc": "2.0", "id": None, "error": {"code": 1, "message": "no"}},
            Response(None, None, {"code": 1, "message": "no"}),
        ),
    ],
)
def test_classify_recognises_requests_notifications_and_responses(obj: Any, expected: Any) -> None:
    assert jsonrpc.classify(obj) == expected


@pytest.mark.parametrize(
    ("obj", "recovered_id"),
    [
        (1, None),
        ("ping", None),
        (None, None),
        ([], None),
        ({"id": 1, "method": "ping"}, 1),
        ({"jsonrpc": "1.0", "id": "a", "method": "ping"}, "a"),
        ({"jsonrpc": 2.0, "id": 1, "method": "ping"}, 1),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 1.0, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": {"n": 1}, "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": [1], "method": "ping"}, None),
        ({"jsonrpc": "2.0", "id": 2, "method": 7}, 2),
        ({"jsonrpc": "2.0", "id": 2, "method": None}, 2),
        ({"jsonrpc": "2.0", "id": 3, "method": "m", "params": [1]}, 3),
        ({"jsonrpc": "2.0", "id": 3, "method": "m", "params": None}, 3),
        ({"jsonrpc": "2.0", "id": 3, "method": "m", "params": "x"}, 3),
        ({"jsonrpc": "2.0", "method": "n", "params": [1]}, None),
        ({"jsonrpc": "2.0", "id": 5}, 5),
        ({"jsonrpc": "2.0", "id": 5, "result": {}, "error": {}}, 5),
        ({"jsonrpc": "2.0", "id": True, "result": {}}, None),
    ],
)
def test_classify_marks_malformed_messages_invalid_keeping_a_usable_id(obj: Any, recovered_id: Any) -> None:
    message = jsonrpc.classify(obj)
    assert isinstance(message, Invalid)
    assert type(message.id) is type(recovered_id) and message.id == recovered_id
    assert message.error.code == INVALID_REQUEST


@given(json_values)
def test_classify_never_raises(value: Any) -> None:
    jsonrpc.classify(value)
    jsonrpc.classify({"jsonrpc": "2.0", "id": value, "method": "m", "params": value})


# depth_exceeds ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "limit", "exceeds"),
    [
        (1, 0, False),
        ("deep", 1, False),
        ({}, 1, False),
        ({}, 0, True),
        ([[1]], 2, False),
        ([[[1]]], 2, True),
        ({"a": {"b": [None]}}, 3, False),
        ({"a": {"b": [None, []]}}, 3, True),
        ([1] * 1000, 1, False),
        ([[], [[]], [[[]]]], 3, True),
    ],
)
def test_depth_exceeds_counts_nested_containers(value: Any, limit: int, exceeds: bool) -> None:
    assert jsonrpc.depth_exceeds(value, limit) is exceeds


def test_depth_exceeds_handles_nesting_far_beyond_the_recursion_limit() -> None:
    value: Any = []
    for _ in range(100_000):
        value = [value]
    assert jsonrpc.depth_exceeds(value, 32) is True
    assert jsonrpc.depth_exceeds(value, 200_000) is False


# encode and builders ----------------------------------------------------------------------------


def test_builders_make_the_three_outgoing_envelopes() -> None:
    assert jsonrpc.result(1, {}) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert error_response(None, InvalidParams("Bad", {"reason": "r"})) == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32602, "message": "Bad", "data": {"reason": "r"}},
    }
    assert jsonrpc.notification("n") == {"jsonrpc": "2.0", "method": "n"}
    assert jsonrpc.notification("n", {}) == {"jsonrpc": "2.0", "method": "n", "params": {}}


@pytest.mark.parametrize(
    ("message", "text"),
    [
        ({"a": RawJSON("[1, 2]")}, '{"a":[1, 2]}'),
        (jsonrpc.result(1, {"tools": RawJSON("[]")}), '{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}'),
        (
            jsonrpc.result("x", {"tools": RawJSON('[{"name":"a"}]'), "nextCursor": "c"}),
            '{"jsonrpc":"2.0","id":"x","result":{"tools":[{"name":"a"}],"nextCursor":"c"}}',
        ),
        (
            [jsonrpc.result(1, {"t": RawJSON("{}")}), {"b": 2}],
            '[{"jsonrpc":"2.0","id":1,"result":{"t":{}}},{"b":2}]',
        ),
        (RawJSON('{"as":"is"}'), '{"as":"is"}'),
        ({"nested": {"plain": [1, {"x": None}]}}, '{"nested":{"plain":[1,{"x":null}]}}'),
    ],
)
def test_encode_splices_raw_json_verbatim(message: Any, text: str) -> None:
    assert jsonrpc.encode(message) == text


def test_encode_is_compact_escapes_non_ascii_and_stringifies_other_types() -> None:
    encoded = jsonrpc.encode({"name": "Zoë ✓", "price": Decimal("1.50")})
    assert encoded == '{"name":"Zo\\u00eb \\u2713","price":"1.50"}'
    assert json.loads(encoded) == {"name": "Zoë ✓", "price": "1.50"}


def test_encode_keeps_a_lone_surrogate_as_an_escape_so_the_frame_stays_valid_utf8() -> None:
    encoded = jsonrpc.encode({"text": "\ud800"})
    assert encoded == '{"text":"\\ud800"}'
    encoded.encode("utf-8")


@given(json_values)
def test_encode_round_trips_any_json_value(value: Any) -> None:
    assert json.loads(jsonrpc.encode(value)) == value
    spliced = {"jsonrpc": "2.0", "id": 1, "result": {"raw": RawJSON(json.dumps(value)), "plain": value}}
    assert json.loads(jsonrpc.encode(spliced)) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"raw": value, "plain": value},
    }


# The server's answers ---------------------------------------------------------------------------

NOT_INITIALIZED = "The session is not initialized: send initialize first"


@db
@pytest.mark.parametrize("text", ["{", '{"jsonrpc": "2.0", "id": 1, "method": "ping"', "", b"\xff", "NaN]"])
async def test_text_that_is_not_json_gets_a_parse_error_with_a_null_id(user: Any, text: str | bytes) -> None:
    wire = await connected(user)
    await wire.send_text(text)
    assert wire.sent[-1] == error(None, PARSE_ERROR, "Parse error")


@db
@pytest.mark.parametrize("value", [1, "ping", None, True, 2.5])
async def test_a_message_that_is_not_an_object_is_an_invalid_request(user: Any, value: Any) -> None:
    wire = await connected(user)
    await wire.send(value)
    assert wire.sent[-1] == error(None, INVALID_REQUEST, "Message must be a JSON object")


@db
@pytest.mark.parametrize("version", [None, "1.0", "2", 2.0, 2])
async def test_a_wrong_jsonrpc_member_is_an_invalid_request(user: Any, version: Any) -> None:
    wire = await connected(user)
    message: dict[str, Any] = {"id": 9, "method": "ping"}
    if version is not None:
        message["jsonrpc"] = version
    await wire.send(message)
    assert wire.sent[-1] == error(9, INVALID_REQUEST, '"jsonrpc" must be "2.0"')


@db
@pytest.mark.parametrize("request_id", [None, True, False, 1.0, 1.5, {"n": 1}, [1]])
async def test_an_id_that_is_not_a_string_or_integer_is_an_invalid_request(user: Any, request_id: Any) -> None:
    wire = await connected(user)
    await wire.send(rpc(request_id, "ping"))
    assert wire.sent[-1] == error(None, INVALID_REQUEST, '"id" must be a string or an integer')


@db
@pytest.mark.parametrize("params", [[], [1], "x", 3, None, True])
async def test_params_that_are_not_an_object_are_an_invalid_request(user: Any, params: Any) -> None:
    wire = await connected(user)
    await wire.send({"jsonrpc": "2.0", "id": "p", "method": "tools/list", "params": params})
    assert wire.sent[-1] == error("p", INVALID_REQUEST, '"params" must be an object')


@db
@pytest.mark.parametrize("method", [None, 7, ["ping"]])
async def test_a_method_that_is_not_a_string_is_an_invalid_request(user: Any, method: Any) -> None:
    wire = await connected(user)
    await wire.send({"jsonrpc": "2.0", "id": 4, "method": method})
    assert wire.sent[-1] == error(4, INVALID_REQUEST, '"method" must be a string')


@db
@pytest.mark.parametrize("method", ["foo/bar", "tools/lists", "resources/list", "prompts/list", ""])
async def test_an_unknown_method_is_method_not_found(user: Any, method: str) -> None:
    wire = await connected(user)
    reply = await wire.request(method, {})
    assert reply == error(2, METHOD_NOT_FOUND, f"Method not found: {method}")


@db
@pytest.mark.parametrize(
    "notification",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/roots/list_changed", "params": {}},
        {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": 1, "progress": 1}},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 12345}},
        {"jsonrpc": "2.0", "method": "no/such/notification"},
        {"jsonrpc": "2.0", "method": "tools/list"},
        {"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": "2025-11-25"}},
    ],
)
async def test_notifications_never_get_a_response(user: Any, notification: dict[str, Any]) -> None:
    wire = await connected(user)
    before = len(wire.sent)
    await wire.send(notification)
    pong = await wire.request("ping")
    assert wire.sent[before:] == [pong]


@db
async def test_notifications_before_initialize_get_no_response_either(user: Any) -> None:
    wire = Wire(user)
    await wire.notify("notifications/initialized")
    await wire.notify("something/else", {"x": 1})
    assert wire.sent == []
    assert wire.session.revision is None


@db
@pytest.mark.parametrize("request_id", ["abc", "", "0", "1", " 1", "ид", 0, -1, 2**31, 2**53 + 1, 10**20])
async def test_request_ids_are_echoed_exactly(user: Any, request_id: Any) -> None:
    wire = await connected(user)
    reply = await wire.request("ping", request_id=request_id)
    assert reply == {"jsonrpc": "2.0", "id": request_id, "result": {}}
    assert type(reply["id"]) is type(request_id)


@db
@pytest.mark.parametrize(
    "response",
    [
        {"jsonrpc": "2.0", "id": 1, "result": {}},
        {"jsonrpc": "2.0", "id": "srv-1", "result": {"roots": []}},
        {"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "Method not found"}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": "Parse error"}},
    ],
)
async def test_responses_from_the_client_are_ignored(user: Any, response: dict[str, Any]) -> None:
    wire = await connected(user)
    before = len(wire.sent)
    await wire.send(response)
    assert wire.sent[before:] == []


@db
async def test_a_message_over_the_size_limit_is_refused_unread(settings: Any, user: Any) -> None:
    wire = await connected(user)
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_MESSAGE_BYTES": 100}
    await wire.send(rpc(5, "ping", {"padding": "x" * 100}))
    assert wire.sent[-1] == error(None, INVALID_REQUEST, "Message larger than 100 bytes")
    assert await wire.request("ping") == {"jsonrpc": "2.0", "id": 2, "result": {}}


@db
async def test_a_message_nested_beyond_the_depth_limit_is_refused(settings: Any, user: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_DEPTH": 4}
    wire = await connected(user)
    await wire.send(rpc(5, "ping", {"a": {"b": {"c": {}}}}))
    assert wire.sent[-1] == error(None, INVALID_REQUEST, "Message nested deeper than 4 levels")
    assert await wire.request("ping", {"a": {"b": 1}}) == {"jsonrpc": "2.0", "id": 2, "result": {}}


@db
async def test_runaway_nesting_is_an_invalid_request_not_a_crash(user: Any) -> None:
    wire = await connected(user)
    await wire.send_text("[" * 200_000 + "]" * 200_000)
    assert wire.sent[-1] == error(None, INVALID_REQUEST, "Message nested too deeply")


# Batches ----------------------------------------------------------------------------------------

BATCH_REFUSED = "Batches are not supported by the negotiated revision"


@db
@pytest.mark.parametrize("version", [version for version in LEGACY if version != "2025-03-26"])
async def test_batches_are_refused_outside_2025_03_26(tools: None, user: Any, version: Any) -> None:
    wire = await connected(user, version)
    await wire.send([rpc(10, "ping"), rpc(11, "tools/list")])
    assert wire.sent[-1] == error(None, INVALID_REQUEST, BATCH_REFUSED)
    assert wire.responses_to(10) == wire.responses_to(11) == []


@db
async def test_a_batch_before_initialize_is_refused(user: Any) -> None:
    wire = Wire(user)
    await wire.send([rpc(1, "ping")])
    assert wire.sent == [error(None, INVALID_REQUEST, BATCH_REFUSED)]


@db
async def test_2025_03_26_answers_a_batch_with_an_array_of_responses(tools: None, user: Any) -> None:
    wire = await connected(user, "2025-03-26")
    await wire.send(
        [
            rpc("a", "ping"),
            {
                "jsonrpc": "2.0",
                "method": "notifications/progress",
                "params": {"progressToken": 1, "progress": 1},
            },
            rpc("b", "tools/call", {"name": "add", "arguments": {"a": 2, "b": 3}}),
            rpc("c", "no/such"),
            {"jsonrpc": "2.0", "id": "d", "result": {}},
            {"jsonrpc": "1.0", "id": "e", "method": "ping"},
            rpc(None, "ping"),
            7,
        ]
    )
    assert wire.sent[-1] == [
        {"jsonrpc": "2.0", "id": "a", "result": {}},
        {
            "jsonrpc": "2.0",
            "id": "b",
            "result": {"content": [{"type": "text", "text": "5"}], "isError": False},
        },
        error("c", METHOD_NOT_FOUND, "Method not found: no/such"),
        error("e", INVALID_REQUEST, '"jsonrpc" must be "2.0"'),
        error(None, INVALID_REQUEST, '"id" must be a string or an integer'),
        error(None, INVALID_REQUEST, "Message must be a JSON object"),
    ]


@db
async def test_a_batch_of_notifications_gets_no_response(user: Any) -> None:
    wire = await connected(user, "2025-03-26")
    before = len(wire.sent)
    await wire.send([{"jsonrpc": "2.0", "method": "a"}, {"jsonrpc": "2.0", "method": "notifications/initialized"}])
    await wire.send([{"jsonrpc": "2.0", "id": 1, "result": {}}])
    assert wire.sent[before:] == []


@db
@pytest.mark.parametrize("version", [None, *LEGACY])
async def test_an_empty_batch_is_a_single_invalid_request(user: Any, version: Any) -> None:
    wire = Wire(user) if version is None else await connected(user, version)
    await wire.send_text("[]")
    assert wire.sent[-1] == error(None, INVALID_REQUEST, "Empty batch")


@db
async def test_initialize_inside_a_batch_is_refused(user: Any) -> None:
    wire = await connected(user, "2025-03-26")
    await wire.send([rpc(8, "ping"), rpc(9, "initialize", {"protocolVersion": "2025-03-26"})])
    assert wire.sent[-1] == error(None, INVALID_REQUEST, "initialize must not be part of a batch")
    assert wire.responses_to(8) == []


def test_an_encoded_object_is_sent_as_its_text_and_compares_as_its_value():
    value = {"content": [{"type": "text", "text": "3"}], "isError": False}
    encoded = jsonrpc.Encoded(value, jsonrpc.encode(value))

    assert encoded == value
    assert jsonrpc.encode(jsonrpc.result(7, encoded)) == '{"jsonrpc":"2.0","id":7,"result":' + encoded.text + "}"
    assert jsonrpc.encode([jsonrpc.result(1, encoded)]) == '[{"jsonrpc":"2.0","id":1,"result":' + encoded.text + "}]"
