"""``manage.py mcp_stdio`` as a client runs it: a child process spoken to in JSON lines on its stdin/stdout."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from tests.live.servers import ROOT

TIMEOUT = 20


@asynccontextmanager
async def stdio_session(
    env: dict[str, str], user: str, version: str, stderr: int = asyncio.subprocess.DEVNULL
) -> AsyncIterator[asyncio.subprocess.Process]:
    """``mcp_stdio --user USER`` with ``env``, initialized at ``version``; killed on exit if still running.
    ``stderr=asyncio.subprocess.PIPE`` keeps what the process says there, for a test to read."""
    process = await asyncio.create_subprocess_exec(
        sys.executable, "manage.py", "mcp_stdio", "--user", user,
        cwd=ROOT, env=env,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=stderr,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:
        initialize = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        await send(process, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": initialize})
        reply = json.loads(await asyncio.wait_for(process.stdout.readline(), TIMEOUT))
        assert "result" in reply, reply
        await send(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def send(process: asyncio.subprocess.Process, message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    await process.stdin.drain()


async def next_message(process: asyncio.subprocess.Process, method: str, wait: float = TIMEOUT) -> dict[str, Any]:
    """The next message named ``method`` (others are skipped), within ``wait`` seconds."""
    assert process.stdout is not None
    async with asyncio.timeout(wait):
        while True:
            message = json.loads(await process.stdout.readline())
            if message.get("method") == method:
                return dict(message)
