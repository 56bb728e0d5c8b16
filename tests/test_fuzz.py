"""Generated hostile input: every request answered exactly once with a known code, nothing escapes, no session harmed.

The oracle follows JSON-RPC 2.0: a frame the server cannot read (too big, too deep, not JSON, an empty or
unsupported batch) gets one error without an id; each message that is a request, or an invalid message
whose id can be read, gets exactly one response with that id; notifications and client responses get none.
Hostile input is always the client's fault, so no answer is ever an Internal error.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcp_tools.exceptions import (
    HEADER_MISMATCH,
    INVALID_PARAMS,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    MISSING_CLIENT_CAPABILITY,
    PARSE_ERROR,
    UNSUPPORTED_PROTOCOL_VERSION,
)
from mcp_tools.protocol import versions as v
from mcp_tools.protocol.jsonrpc import encode
from mcp_tools.server.dispatch import Server
from mcp_tools.server.session import Session
from tests.messages import error, text_result
from tests.websocket import TIMEOUT, WSClient, ws_headers
from tests.wire import connected

pytestmark = pytest.mark.django_db(transaction=True)

ANSWER_CODES = frozenset(
    {
        PARSE_ERROR,
        INVALID_REQUEST,
        METHOD_NOT_FOUND,
        INVALID_PARAMS,
        HEADER_MISMATCH,
        MISSING_CLIENT_CAPABILITY,
        UNSUPPORTED_PROTOCOL_VERSION,
    }
)
MAX_BYTES = 20_000
MAX_DEPTH = 32
FUZZ_SETTINGS = {"MAX_MESSAGE_BYTES": MAX_BYTES, "MAX_DEPTH": MAX_DEPTH, "LOG_TRACEBACKS": False}
FUZZ = {
    "deadline": None,
    "database": None,
    "suppress_health_check": [
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.large_base_example,
    ],
}
NULL = ("null", None)  # the key of a response whose id is null
PING = '{"jsonrpc":"2.0","id":"after","method":"ping"}'
REVISIONS: list[Any] = [None, 1, "2024-10-07", "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
METHODS = [
    "initialize",
    "ping",
    "tools/list",
    "tools/call",
    "server/discover",
    "subscriptions/listen",
    "notifications/initialized",
    "notifications/cancelled",
    "notifications/progress",
    "resources/list",
    "",
]
# Tools whose run time and memory do not grow with their arguments.
TOOLS = [
    "add",
    "multiply",
    "greet",
    "whoami",
    "fail_politely",
    "crash",
    "tags",
    "picture",
    "broken_output",
    "needs_sampling",
    "ask_twice",
]
ARGUMENT_NAMES = ["a", "b", "x", "y", "name", "punctuation", "shout", "reason", "items", "password", "nested"]


# Strategies --------------------------------------------------------------------------------------

# Any text a JSON string can carry once escaped, with the characters databases and encoders choke on often.
awkward_characters = ["\x00", "\ud800", "\udfff", "\ud83d", "\u2028", "é", "💥", "a", '"', "\\"]
any_text = st.one_of(
    st.text(st.characters(exclude_categories=()), max_size=12),
    st.text(st.sampled_from(awkward_characters), max_size=6),
    st.sampled_from(["", "__proto__", "2.0", "null", "mcp_", "add", "x" * 300]),
)
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),
    any_text,
)
keys = (
    st.sampled_from(
        [
            "jsonrpc",
            "id",
            "method",
            "params",
            "result",
            "error",
            "_meta",
            "inputResponses",
            "requestState",
            *ARGUMENT_NAMES,
        ]
    )
    | any_text
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=10,
)
request_ids = st.one_of(
    st.integers(-(2**63), 2**63),
    st.integers(2**63, 2**100),
    any_text,
    st.none(),
    st.booleans(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(scalars, max_size=2),
    st.dictionaries(any_text, scalars, max_size=2),
)
valid_ids = st.integers(-(2**63), 2**63) | any_text
wire_versions = st.sampled_from([*REVISIONS[1:], "2026-07-28", "2099-01-01", "2025-11-25 "]) | json_values


def nested(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value] if levels % 2 else {"k": value}
    return value


sized = st.one_of(
    st.integers(1, MAX_DEPTH + 8).map(nested),
    st.integers(0, MAX_BYTES + 500).map(lambda size: "x" * size),
    st.integers(0, 3000).map(lambda size: list(range(size))),
)
metas = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            v.PROTOCOL_VERSION_META: wire_versions,
            v.CLIENT_CAPABILITIES_META: st.just({}) | json_values,
            v.CLIENT_INFO_META: json_values,
            "progressToken": request_ids,
        },
    ),
)
arguments = json_values | st.dictionaries(st.sampled_from(ARGUMENT_NAMES) | any_text, json_values | sized, max_size=4)
tool_calls = st.fixed_dictionaries(
    {"name": st.sampled_from(TOOLS) | any_text | json_values},
    optional={"arguments": arguments, "_meta": metas, "inputResponses": json_values, "requestState": json_values},
)
params = st.one_of(
    json_values,
    tool_calls,
    st.fixed_dictionaries(
        {}, optional={"protocolVersion": wire_versions, "capabilities": json_values, "clientInfo": json_values}
    ),
    st.fixed_dictionaries({}, optional={"cursor": json_values | st.just("bWNwLXRvb2xzOjU="), "_meta": metas}),
    st.fixed_dictionaries({"requestId": request_ids}, optional={"reason": json_values}),
    st.fixed_dictionaries({"notifications": json_values | st.just({"toolsListChanged": True}), "_meta": metas}),
    st.fixed_dictionaries({"pad": sized}, optional={"_meta": metas}),
)
methods = st.sampled_from(METHODS) | any_text | json_values
envelopes = st.fixed_dictionaries(
    {},
    optional={
        "jsonrpc": st.just("2.0") | json_values,
        "id": request_ids,
        "method": methods,
        "params": params,
        "result": json_values,
        "error": json_values,
        "extra": json_values,
    },
)
requests = st.builds(
    lambda request_id, method, body: {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body},
    valid_ids,
    st.sampled_from(METHODS),
    params,
)
notifications = st.builds(
    lambda method, body: {"jsonrpc": "2.0", "method": method, "params": body}, st.sampled_from(METHODS), params
)
messages = st.one_of(envelopes, requests, notifications)


def serialized(value: Any) -> str:
    return json.dumps(value)


def rpc_text(request_id: Any, method: str, body: dict[str, Any]) -> str:
    return serialized({"jsonrpc": "2.0", "id": request_id, "method": method, "params": body})


INSERTIONS = ['"', "{", "]", ",", ":", "\\", "\\u", "\x00", "NaN", "1e999"]


@st.composite
def mutated(draw: st.DrawFn) -> str:
    """Valid message text with a cut, an insertion, or a number JSON cannot hold."""
    text = serialized(draw(messages))
    at = draw(st.integers(0, len(text)))
    change = draw(st.sampled_from(["cut", "insert", "constant"]))
    if change == "cut":
        return text[:at]
    if change == "insert":
        return (
            text[:at]
            + draw(st.sampled_from(['"', "{", "]", ",", ":", "\\", "\\u", "\x00", "NaN", "1e999"]))
            + text[at:]
        )
    return text.replace('"2.0"', draw(st.sampled_from(["NaN", "Infinity", "-Infinity", "1e400", "9" * 5000])), 1)


raw_frames = st.one_of(
    st.text(max_size=60),
    st.binary(max_size=60),
    mutated(),
    st.integers(1, 1200).map(lambda n: "[" * n + "]" * n),
    st.integers(1, 1200).map(lambda n: '{"a":' * n + "1" + "}" * n),
    st.sampled_from(["", " ", "null", "[]", "{}", "[[]]", '"x"', "0", "[null]", "\ufeff{}", "[" * 100_000]),
)


# The oracle --------------------------------------------------------------------------------------


def valid_id(value: Any) -> bool:
    return isinstance(value, int | str) and not isinstance(value, bool)


def id_key(value: Any) -> tuple[str, Any]:
    return (type(value).__name__, value) if valid_id(value) else NULL


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(text)
    return number


def _not_json(name: str) -> Any:
    raise ValueError(name)


def decoded(frame: str | bytes) -> tuple[bool, Any]:
    """(True, value) for strict JSON within the limits; (False, None) for a frame refused as a whole."""
    size = len(frame) if isinstance(frame, bytes) else len(frame.encode())
    if size > MAX_BYTES:
        return False, None
    try:
        value = json.loads(frame, parse_float=_finite, parse_constant=_not_json)
    except (RecursionError, ValueError):
        return False, None
    return depth(value) <= MAX_DEPTH, value


def depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in (item.values() if isinstance(item, dict) else item))
    return deepest


def reply_to(message: Any) -> tuple[str, Any] | None:
    """The id key of the one response ``message`` deserves, or None when it deserves none."""
    if not isinstance(message, dict):
        return NULL
    readable = id_key(message.get("id"))
    if message.get("jsonrpc") != "2.0":
        return readable
    if "method" not in message:
        is_response = ("result" in message) != ("error" in message)
        return None if is_response and (message.get("id") is None or valid_id(message.get("id"))) else readable
    if not isinstance(message["method"], str) or not isinstance(message.get("params", {}), dict):
        return readable
    if "id" not in message:
        return None
    return readable


def is_request(message: Any, method: str) -> bool:
    """Whether ``message`` is a well-formed request for ``method``."""
    return (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and message.get("method") == method
        and isinstance(message.get("params", {}), dict)
        and valid_id(message.get("id"))
    )


def expected_replies(frame: str | bytes, revision: Any) -> Counter[tuple[str, Any]]:
    readable, value = decoded(frame)
    if not readable:
        return Counter([NULL])
    if not isinstance(value, list):
        key = reply_to(value)
        return Counter() if key is None else Counter([key])
    if not value or revision != "2025-03-26":
        return Counter([NULL])
    if any(is_request(m, "initialize") or is_request(m, "subscriptions/listen") for m in value):
        return Counter([NULL])
    return Counter(key for key in map(reply_to, value) if key is not None)


def responses_in(sent: list[Any]) -> list[dict[str, Any]]:
    items = [item for message in sent for item in (message if isinstance(message, list) else [message])]
    return [item for item in items if isinstance(item, dict) and "method" not in item]


def check_response(response: dict[str, Any]) -> None:
    text = encode(response)
    try:
        json.loads(text, parse_float=_finite, parse_constant=_not_json)
    except ValueError:
        raise AssertionError(f"not strict JSON: {text[:300]}") from None
    assert response.get("jsonrpc") == "2.0", response
    assert response.get("id") is None or valid_id(response.get("id")), response
    if "error" in response:
        assert set(response) == {"jsonrpc", "id", "error"}, response
        body = response["error"]
        assert set(body) <= {"code", "message", "data"} and isinstance(body.get("message"), str), response
        assert body.get("code") in ANSWER_CODES, response
    else:
        assert set(response) == {"jsonrpc", "id", "result"} and isinstance(response["result"], dict), response


def check_answers(sent: list[Any], expected: Counter[tuple[str, Any]], frame: str | bytes) -> None:
    responses = responses_in(sent)
    for response in responses:
        check_response(response)
    assert Counter(id_key(r.get("id")) for r in responses) == expected, (frame[:500], responses[:5])


# Driving the server core -------------------------------------------------------------------------


class Core:
    """Feeds frames to ``Server.receive`` on fresh sessions of one user, next to a bystander session."""

    def __init__(self, user: Any, loop: asyncio.AbstractEventLoop) -> None:
        self.server, self.user, self.loop = Server(), user, loop
        self.sent: list[Any] = []
        self.arrived = asyncio.Event()
        self.bystander = self.session()

    def session(self) -> Session:
        return Session(transport="fuzz", user=self.user, emit=self.emit)

    def emit(self, message: Any) -> None:
        self.sent.append(json.loads(encode(message)))
        self.arrived.set()

    def run(self, frame: str | bytes, revision: Any) -> None:
        self.loop.run_until_complete(asyncio.wait_for(self.exercise(frame, revision), TIMEOUT))

    async def exercise(self, frame: str | bytes, revision: Any) -> None:
        session = self.session()
        if revision is not None:
            await self.initialize(session, revision)
        self.sent.clear()
        await self.server.receive(session, frame)
        await self.settle(session)
        check_answers(self.sent, expected_replies(frame, revision), frame)
        for each in (session, self.bystander):
            self.sent.clear()
            await self.server.receive(each, PING)
            assert self.sent == [{"jsonrpc": "2.0", "id": "after", "result": {}}], self.sent
        session.close()

    async def initialize(self, session: Session, revision: Any) -> None:
        hello = {"protocolVersion": revision, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}
        await self.server.receive(session, rpc_text(0, "initialize", hello))
        await self.server.receive(session, '{"jsonrpc":"2.0","method":"notifications/initialized"}')

    async def settle(self, session: Session) -> None:
        """Wait for every spawned request to be answered; a listen is ended as a client's input would end it."""
        tasks = [running.task for running in session.in_flight.values()]
        while not all(task.done() for task in tasks):
            for listen in list(session.listens.values()):
                listen.ended.set()
            self.arrived.clear()
            arrival = asyncio.ensure_future(self.arrived.wait())
            await asyncio.wait([*tasks, arrival], return_when=asyncio.FIRST_COMPLETED)
            arrival.cancel()
        for task in tasks:
            assert not task.cancelled() and task.exception() is None, task

    async def still_calls_tools(self) -> None:
        session = self.session()
        await self.initialize(session, "2025-11-25")
        self.sent.clear()
        call = {"name": "add", "arguments": {"a": 1, "b": 2}}
        await self.server.receive(session, rpc_text(1, "tools/call", call))
        await self.settle(session)
        assert self.sent[-1]["result"]["structuredContent"] == {"result": 3}


@pytest.fixture
def loop() -> Iterator[asyncio.AbstractEventLoop]:
    running = asyncio.new_event_loop()
    yield running
    left = asyncio.all_tasks(running)
    if left:
        for task in left:
            task.cancel()
        running.run_until_complete(asyncio.wait(left))
    running.run_until_complete(running.shutdown_default_executor())
    running.close()


@pytest.fixture
def core(tools: None, user: Any, settings: Any, loop: asyncio.AbstractEventLoop) -> Iterator[Core]:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, **FUZZ_SETTINGS}
    driver = Core(user, loop)
    yield driver
    loop.run_until_complete(asyncio.wait_for(driver.still_calls_tools(), TIMEOUT))


@settings(max_examples=3000, **FUZZ)
@given(message=messages, revision=st.sampled_from(REVISIONS))
def test_generated_messages_are_each_answered_once_with_a_known_code(core: Core, message: Any, revision: Any) -> None:
    core.run(serialized(message), revision)


@settings(max_examples=2500, **FUZZ)
@given(method=st.sampled_from(METHODS), body=params, request_id=valid_ids, revision=st.sampled_from(REVISIONS))
def test_generated_params_for_every_method_are_answered_once_with_a_known_code(
    core: Core, method: str, body: Any, request_id: Any, revision: Any
) -> None:
    core.run(serialized({"jsonrpc": "2.0", "id": request_id, "method": method, "params": body}), revision)


@settings(max_examples=2000, **FUZZ)
@given(body=tool_calls, request_id=valid_ids, revision=st.sampled_from(REVISIONS))
def test_generated_tool_calls_are_answered_once_with_a_known_code(
    core: Core, body: Any, request_id: Any, revision: Any
) -> None:
    core.run(rpc_text(request_id, "tools/call", body), revision)


@settings(max_examples=1500, **FUZZ)
@given(frame=raw_frames, revision=st.sampled_from(REVISIONS))
def test_generated_frames_that_are_not_messages_get_one_error_without_an_id(
    core: Core, frame: str | bytes, revision: Any
) -> None:
    core.run(frame, revision)


@settings(max_examples=1000, **FUZZ)
@given(
    batch=st.lists(st.one_of(messages, json_values), max_size=6),
    revision=st.sampled_from(["2025-03-26", "2025-03-26", *REVISIONS]),
)
def test_generated_batches_are_answered_member_by_member_or_refused_whole(
    core: Core, batch: list[Any], revision: Any
) -> None:
    core.run(serialized(batch), revision)


# Driving the WebSocket ---------------------------------------------------------------------------


class Socket:
    """Opens a fresh authenticated WebSocket per frame, next to a bystander connection that stays open."""

    def __init__(self, token: str, loop: asyncio.AbstractEventLoop) -> None:
        self.token, self.loop = token, loop
        self.bystander: WSClient | None = None

    async def connect(self) -> WSClient:
        from tests.asgi import application

        communicator = WebsocketCommunicator(
            application, "/mcp/ws", headers=ws_headers(self.token), subprotocols=["mcp"]
        )
        accepted, _ = await communicator.connect(timeout=TIMEOUT)
        assert accepted
        return WSClient(communicator)

    def run(self, frame: str | bytes, revision: Any) -> None:
        self.loop.run_until_complete(asyncio.wait_for(self.exercise(frame, revision), 3 * TIMEOUT))

    async def exercise(self, frame: str | bytes, revision: Any) -> None:
        if self.bystander is None:
            self.bystander = await self.connect()
            await self.bystander.initialize()
        client = await self.connect()
        try:
            await self.check(client, frame, revision)
        finally:
            await client.communicator.disconnect(timeout=TIMEOUT)
        assert (await self.bystander.request("ping"))["result"] == {}

    async def check(self, client: WSClient, frame: str | bytes, revision: Any) -> None:
        if revision is not None:
            await client.initialize(revision)
        # Straight to the application: the communicator's send_to refuses an empty frame.
        kind = "bytes" if isinstance(frame, bytes) else "text"
        await client.communicator.send_input({"type": "websocket.receive", kind: frame})
        expected = Counter([NULL]) if isinstance(frame, bytes) else expected_replies(frame, revision)
        sent = await self.until_answered(client, expected, "sentinel-1")
        sent += await self.until_answered(client, Counter(), "sentinel-2")
        check_answers(sent, expected, frame)
        assert await client.request("ping") == {"jsonrpc": "2.0", "id": client.next_id, "result": {}}

    async def until_answered(self, client: WSClient, expected: Counter[tuple[str, Any]], sentinel: str) -> list[Any]:
        """Messages up to the sentinel ping's answer and, before or after it, every expected response."""
        await client.send({"jsonrpc": "2.0", "id": sentinel, "method": "ping"})
        sent: list[Any] = []
        pinged = False
        while not pinged or Counter(id_key(r.get("id")) for r in responses_in(sent)) < expected:
            message = await client.receive()
            if isinstance(message, dict) and message.get("id") == sentinel:
                assert message == {"jsonrpc": "2.0", "id": sentinel, "result": {}}, message
                pinged = True
            else:
                sent.append(message)
        return sent


@pytest.fixture
def socket(token: str, tools: None, settings: Any, loop: asyncio.AbstractEventLoop) -> Iterator[Socket]:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, **FUZZ_SETTINGS}
    driver = Socket(token, loop)
    yield driver
    if driver.bystander is not None:
        loop.run_until_complete(driver.bystander.communicator.disconnect(timeout=TIMEOUT))


# A listen over the WebSocket lasts until the connection ends, unanswered: it is left out here.
ws_methods = [method for method in METHODS if method != "subscriptions/listen"]
ws_messages = st.one_of(
    envelopes.filter(lambda m: m.get("method") != "subscriptions/listen"),
    st.builds(
        lambda request_id, method, body: {"jsonrpc": "2.0", "id": request_id, "method": method, "params": body},
        valid_ids,
        st.sampled_from(ws_methods),
        params,
    ),
)
ws_frames = st.one_of(
    ws_messages.map(serialized),
    st.lists(ws_messages, max_size=4).map(serialized),
    raw_frames.filter(lambda frame: "subscriptions/listen" not in str(frame)),
)


@settings(max_examples=600, **FUZZ)
@given(frame=ws_frames, revision=st.sampled_from(REVISIONS))
def test_generated_websocket_frames_are_answered_once_and_harm_no_connection(
    socket: Socket, frame: str | bytes, revision: Any
) -> None:
    socket.run(frame, revision)


# Strict JSON both ways ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "frame",
    [
        '{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":NaN}}',
        '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":Infinity}}',
        '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":-Infinity}}',
        '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":1e400}}',
    ],
    ids=["nan", "infinity", "minus-infinity", "out-of-range"],
)
async def test_numbers_json_cannot_hold_are_a_parse_error_not_echoed(tools: None, user: Any, frame: str) -> None:
    wire = await connected(user)

    await wire.send_text(frame)

    assert wire.sent[-1] == error(None, PARSE_ERROR, "Parse error")


async def test_a_tool_result_json_cannot_hold_is_a_clear_tool_failure(tools: None, user: Any) -> None:
    wire = await connected(user)

    reply = await wire.call("multiply", {"x": 1e308, "y": 10})

    assert reply["result"] == text_result("The tool returned a value that cannot be sent as JSON.", is_error=True)
    assert "Infinity" not in encode(wire.sent[-1])
