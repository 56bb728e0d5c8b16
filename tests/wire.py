"""An in-process session driver: ``Wire`` feeds a real Server text frames and keeps what it emits.

Emitted results of 2025-11-25 sessions and of modern requests are checked against the official SDK's wire
models as they arrive, and every wait is bounded by ``TIMEOUT``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from mcp_types import _v2025_11_25 as sdk
from mcp_types import _v2026_07_28 as sdk_modern
from pydantic import BaseModel, ValidationError

from mcp_tools.exceptions import UNSUPPORTED_PROTOCOL_VERSION
from mcp_tools.protocol import jsonrpc
from mcp_tools.protocol import versions as v
from mcp_tools.server.dispatch import Server
from mcp_tools.server.session import Session
from tests.messages import modern_meta, rpc

TIMEOUT = 5

LEGACY_RESULTS: dict[str, type[BaseModel]] = {
    "initialize": sdk.InitializeResult,
    "ping": sdk.Result,
    "tools/list": sdk.ListToolsResult,
    "tools/call": sdk.CallToolResult,
}
MODERN_RESULTS: dict[str, type[BaseModel]] = {
    "server/discover": sdk_modern.DiscoverResult,
    "tools/list": sdk_modern.ListToolsResult,
    "tools/call": sdk_modern.CallToolResult,
}
LEGACY_NOTIFICATIONS: dict[str, type[BaseModel]] = {
    "notifications/progress": sdk.ProgressNotification,
    "notifications/tools/list_changed": sdk.ToolListChangedNotification,
    "elicitation/create": sdk.ElicitRequest,  # a request the server sends, checked as its notifications are
}


def conforms(model: type[BaseModel], value: Any) -> None:
    """``value`` validates against the SDK model and carries no key the model does not know."""
    dumped = model.model_validate(value).model_dump(mode="json", by_alias=True, exclude_unset=True)
    if isinstance(value, dict) and "capabilities" in value:
        # Server capabilities are an open set in the schema.
        dumped["capabilities"] = {**value["capabilities"], **dumped["capabilities"]}
    assert dumped == value


def is_response_to(request_id: Any) -> Callable[[Any], bool]:
    def matches(message: Any) -> bool:
        return (
            isinstance(message, dict)
            and ("result" in message or "error" in message)
            and type(message.get("id")) is type(request_id)
            and message.get("id") == request_id
        )

    return matches


def is_notification(method: str) -> Callable[[Any], bool]:
    return lambda message: isinstance(message, dict) and message.get("method") == method


class Wire:
    """One session on a real Server, fed text frames; every emitted message is kept as wire JSON.

    Results for a 2025-11-25 session and for modern requests are checked against the official SDK's
    wire models as they are emitted.
    """

    def __init__(self, user: Any, *, can_notify: bool = False, can_ask: bool = False) -> None:
        self.server = Server()
        self.session = Session(transport="test", user=user, emit=self._emit, can_notify=can_notify, can_ask=can_ask)
        self.sent: list[Any] = []
        self.problems: list[str] = []
        self._methods: dict[int | str, tuple[str, bool]] = {}
        self._arrived = asyncio.Event()
        self._last_id = 0

    # What the server emits ----------------------------------------------------------------------

    def _emit(self, message: Any) -> None:
        decoded = json.loads(jsonrpc.encode(message))
        for item in decoded if isinstance(decoded, list) else [decoded]:
            model = self._model_for(item)
            if model is None:
                continue
            try:
                conforms(model, item if "error" in item or "method" in item else item["result"])
            except (ValidationError, AssertionError) as exc:
                self.problems.append(f"{item!r} does not conform to {model.__name__}: {exc}")
        self.sent.append(decoded)
        self._arrived.set()

    def _model_for(self, item: dict[str, Any]) -> type[BaseModel] | None:
        if "error" in item:
            if item["error"]["code"] == UNSUPPORTED_PROTOCOL_VERSION:
                return sdk_modern.UnsupportedProtocolVersionError
            return sdk.JSONRPCErrorResponse
        legacy = self.session.revision == v.V2025_11_25
        if "method" in item:
            return LEGACY_NOTIFICATIONS.get(item["method"]) if legacy else None
        method, modern = self._methods.get(item.get("id", ""), ("", False))
        if modern and item.get("result", {}).get("resultType") == "input_required":
            return sdk_modern.InputRequiredResult
        if modern:
            return MODERN_RESULTS[method]
        return LEGACY_RESULTS.get(method) if legacy else None

    async def wait_for(self, matches: Callable[[Any], bool]) -> Any:
        """The first emitted message that ``matches``, waiting (bounded) for it to arrive."""

        async def scan() -> Any:
            seen = 0
            while True:
                for message in self.sent[seen:]:
                    if matches(message):
                        return message
                seen = len(self.sent)
                self._arrived.clear()
                await self._arrived.wait()

        found = await asyncio.wait_for(scan(), TIMEOUT)
        assert not self.problems, self.problems
        return found

    async def response(self, request_id: Any) -> dict[str, Any]:
        return await self.wait_for(is_response_to(request_id))

    def responses_to(self, request_id: Any) -> list[Any]:
        return [m for m in self.sent if is_response_to(request_id)(m)]

    def notifications(self, method: str) -> list[dict[str, Any]]:
        return [m for m in self.sent if is_notification(method)(m)]

    # What the client sends ----------------------------------------------------------------------

    def new_id(self) -> int:
        self._last_id += 1
        return self._last_id

    async def send(self, message: Any) -> None:
        for item in message if isinstance(message, list) else [message]:
            if isinstance(item, dict) and isinstance(item.get("id"), int | str) and "method" in item:
                modern = v.is_modern_request(item.get("params"))
                self._methods[item["id"]] = (item["method"], modern)
        await self.send_text(json.dumps(message))

    async def send_text(self, text: str | bytes) -> None:
        await self.server.receive(self.session, text)

    async def request(
        self, method: str, params: dict[str, Any] | None = None, *, request_id: Any = None
    ) -> dict[str, Any]:
        request_id = self.new_id() if request_id is None else request_id
        await self.send(rpc(request_id, method, params))
        return await self.response(request_id)

    async def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)

    async def initialize(
        self, version: Any = "2025-11-25", capabilities: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        params = {
            "protocolVersion": version,
            "capabilities": capabilities or {},
            "clientInfo": {"name": "t", "version": "1"},
        }
        reply = await self.request("initialize", params)
        assert "result" in reply, reply
        await self.notify("notifications/initialized")
        return reply

    async def call(self, name: Any, arguments: Any = None, **params: Any) -> dict[str, Any]:
        body = {"name": name, **params}
        if arguments is not None:
            body["arguments"] = arguments
        return await self.request("tools/call", body)

    async def modern(
        self, method: str, params: dict[str, Any] | None = None, *, meta: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        return await self.request(method, {**(params or {}), "_meta": meta or modern_meta()})


async def connected(
    user: Any,
    version: Any = "2025-11-25",
    *,
    can_notify: bool = False,
    can_ask: bool = False,
    capabilities: dict[str, Any] | None = None,
) -> Wire:
    wire = Wire(user, can_notify=can_notify, can_ask=can_ask)
    await wire.initialize(version, capabilities)
    return wire


async def start_slow_count(wire: Wire, request_id: Any) -> asyncio.Task[Any]:
    params = {"name": "slow_count", "arguments": {"steps": 2}, "_meta": {"progressToken": request_id}}
    await wire.send(rpc(request_id, "tools/call", params))
    await wire.wait_for(
        lambda m: is_notification("notifications/progress")(m) and m["params"]["progressToken"] == request_id
    )
    return wire.session.in_flight[request_id].task


async def listed(wire: Wire) -> dict[str, dict[str, Any]]:
    """Every tool definition the session may see, walking the pages of tools/list."""
    tools: dict[str, dict[str, Any]] = {}
    params: dict[str, Any] = {}
    while True:
        page = (await wire.request("tools/list", params))["result"]
        tools.update((tool["name"], tool) for tool in page["tools"])
        if "nextCursor" not in page:
            return tools
        params = {"cursor": page["nextCursor"]}
