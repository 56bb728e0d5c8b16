"""Streamable HTTP ``tools/call add`` requests straight into the ASGI application: no socket, no client.

Counting instructions with valgrind's callgrind (the same count for the same code and inputs, whatever
else the machine is doing) compares two versions of the server even on a busy machine::

    export DJANGO_SETTINGS_MODULE=bench.settings_tmpdb BENCH_DB=/tmp/mb/db.sqlite3 DJANGO_DEBUG=0
    python manage.py migrate && python manage.py mcp_sync --enable && python manage.py seed_demo
    TOKEN=$(python manage.py mcp_token create alice)
    valgrind --tool=callgrind python bench/asgi_calls.py --token "$TOKEN" --calls 0 --era legacy
    valgrind --tool=callgrind python bench/asgi_calls.py --token "$TOKEN" --calls 300 --era legacy

The difference of the two totals, over 300, is the cost of one request. ``--root`` runs another checkout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from typing import Any

MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientCapabilities": {},
}


def http_scope(headers: dict[str, str]) -> dict[str, Any]:
    return {
        "type": "http",
        "http_version": "1.1",
        "method": "POST",
        "path": "/mcp",
        "raw_path": b"/mcp",
        "query_string": b"",
        "scheme": "http",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 5000),
        "headers": [(name.encode(), value.encode()) for name, value in headers.items()],
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

    await application(http_scope(headers), receive, send)
    return sent


async def run(application: Any, token: str, calls: int, era: str) -> None:
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
    for _ in range(50 + calls):  # the first 50 warm every cache up, whatever --calls says
        await post(application, headers, body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", default=".", help="the checkout to run (default: this one)")
    parser.add_argument("--token", required=True)
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--era", choices=("legacy", "modern"), default="legacy")
    args = parser.parse_args()
    sys.path.insert(0, os.path.abspath(args.root))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "bench.settings_tmpdb")
    import django

    django.setup()
    from project.asgi import application

    asyncio.run(run(application, args.token, args.calls, args.era))


if __name__ == "__main__":
    main()
