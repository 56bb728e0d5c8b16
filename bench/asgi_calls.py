"""``tools/call add`` requests straight into the ASGI application (Streamable HTTP or WebSocket): no socket,
no client.

Counting instructions with valgrind's callgrind (the same count for the same code and inputs, whatever
else the machine is doing) compares two versions of the server even on a busy machine::

    export DJANGO_SETTINGS_MODULE=bench.settings_tmpdb BENCH_DB=/tmp/mb/db.sqlite3 DJANGO_DEBUG=0
    python manage.py migrate && python manage.py mcp_sync --enable && python manage.py seed_demo
    TOKEN=$(python manage.py mcp_token create alice)
    valgrind --tool=callgrind python bench/asgi_calls.py --token "$TOKEN" --calls 0 --era legacy
    valgrind --tool=callgrind python bench/asgi_calls.py --token "$TOKEN" --calls 300 --era legacy

The difference of the two totals, over 300, is the cost of one request. ``--root`` runs another checkout.
``--transport ws`` sends the calls as frames of one WebSocket connection instead. ``--cpu N`` prints the
process's CPU time per call (``time.process_time``, every thread, so audit inserts in database threads
too), the least of N rounds of ``--calls`` calls; add ``BENCH_AUDIT=0`` to the environment for audit off.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def scope(kind: str, path: str, headers: dict[str, str], **extra: Any) -> dict[str, Any]:
    """An ASGI scope of ``kind`` ("http" or "websocket") from a loopback client."""
    return {
        "type": kind,
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "scheme": "http" if kind == "http" else "ws",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5000),
        "headers": [(name.encode(), value.encode()) for name, value in headers.items()],
        **extra,
    }


async def post(application: Any, headers: dict[str, str], body: dict[str, Any]) -> list[dict[str, Any]]:
    """One request through the application; returns the messages it sent."""
    sent: list[dict[str, Any]] = []
    pending = [{"type": "http.request", "body": json.dumps(body).encode(), "more_body": False}]

    async def receive() -> dict[str, Any]:
        if pending:
            return pending.pop(0)
        await asyncio.Event().wait()  # the client never goes away
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await application(scope("http", "/mcp", headers, http_version="1.1", method="POST"), receive, send)
    return sent


class Connection:
    """One WebSocket connection into the application, a frame at a time."""

    def __init__(self, application: Any, token: str) -> None:
        self.inbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.replies: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        headers = {"host": "127.0.0.1:8000", "authorization": f"Bearer {token}"}
        opening = scope("websocket", "/mcp/ws", headers, subprotocols=["mcp"])
        self.task = asyncio.ensure_future(application(opening, self.inbox.get, self.replies.put))

    async def open(self) -> None:
        await self.inbox.put({"type": "websocket.connect"})
        accepted = await self.replies.get()
        if accepted["type"] != "websocket.accept":
            raise SystemExit(f"Refused: {accepted}")

    async def ask(self, text: str) -> str:
        self.inbox.put_nowait({"type": "websocket.receive", "text": text})
        reply = await self.replies.get()
        return str(reply.get("text"))

    async def close(self) -> None:
        await self.inbox.put({"type": "websocket.disconnect", "code": 1000})
        await self.task


async def websocket_calls(application: Any, token: str) -> tuple[Callable[[], Awaitable[None]], Connection]:
    """One initialized connection and a function sending it one ``add``, waiting for the answer."""
    connection = Connection(application, token)
    await connection.open()
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
    await connection.ask(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params}))
    connection.inbox.put_nowait(
        {"type": "websocket.receive", "text": json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"})}
    )
    frame = json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    )

    async def one() -> None:
        answer = await connection.ask(frame)
        if '"isError":false' not in answer:
            raise SystemExit(f"Unexpected answer: {answer}")

    return one, connection


async def http_calls(application: Any, token: str, era: str) -> Callable[[], Awaitable[None]]:
    """A function posting one ``add`` (in a legacy session, or stateless), waiting for the answer."""
    headers = {
        "host": "127.0.0.1:8000",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "authorization": f"Bearer {token}",
    }
    call: dict[str, Any] = {"name": "add", "arguments": {"a": 1, "b": 2}}
    if era == "legacy":
        params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}
        opened = await post(application, headers, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params})
        session_id = dict(opened[0]["headers"])[b"mcp-session-id"].decode()
        headers |= {"mcp-session-id": session_id, "mcp-protocol-version": "2025-11-25"}
    else:
        headers |= {"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call", "mcp-name": "add"}
        call["_meta"] = MODERN_META
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}

    async def one() -> None:
        await post(application, headers, body)

    return one


async def run(application: Any, token: str, calls: int, era: str, transport: str, rounds: int) -> None:
    connection = None
    if transport == "ws":
        one, connection = await websocket_calls(application, token)
    else:
        one = await http_calls(application, token, era)
    for _ in range(50):  # warm every cache up, whatever --calls says
        await one()
    if not rounds:
        for _ in range(calls):
            await one()
    best = float("inf")
    for _ in range(rounds):
        started = time.process_time()
        for _ in range(calls):
            await one()
        best = min(best, time.process_time() - started)
    if rounds:
        print(f"{best / calls * 1e6:.1f} us CPU per call (least of {rounds} rounds of {calls})")
    if connection is not None:
        await connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="the checkout to run (default: this one)")
    parser.add_argument("--token", required=True)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--era", choices=("legacy", "modern"), default="legacy")
    parser.add_argument("--transport", choices=("http", "ws"), default="http")
    parser.add_argument("--baseline", action="store_true", help="run bench/baseline.py's bare consumers instead")
    parser.add_argument("--cpu", type=int, default=0, metavar="N", help="print CPU per call, least of N rounds")
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.root))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings_tmpdb")
    import django

    django.setup()
    if args.baseline:
        sys.path.insert(0, os.path.join(os.path.abspath(args.root), "bench"))
        from baseline import application
    else:
        from project.asgi import application

    asyncio.run(run(application, args.token, args.calls, args.era, args.transport, args.cpu))


if __name__ == "__main__":
    main()
