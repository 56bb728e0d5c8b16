"""MCP over stdio: newline-delimited JSON-RPC on stdin and stdout; everything else goes to stderr."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from typing import Any, BinaryIO

from mcp_tools.access.audit import audit_log
from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import InvalidRequest, MCPError
from mcp_tools.notify.hub import hub
from mcp_tools.protocol.errors import error_response
from mcp_tools.server.dispatch import server
from mcp_tools.server.session import Session
from mcp_tools.transports.outbox import Outbox


class LineWriter:
    """Writes one message per line to a binary stream."""

    def __init__(self, stream: BinaryIO) -> None:
        self.stream = stream

    async def write(self, text: str) -> None:
        self.stream.write(text.encode() + b"\n")
        self.stream.flush()


async def open_reader(stream: Any, limit: int) -> asyncio.StreamReader:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=limit)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stream)
    return reader


class SessionEnded(MCPError):
    """The user may no longer connect (deactivated or deleted while the session ran)."""


async def serve(user: Any, *, stdin: Any = None, stdout: BinaryIO | None = None) -> None:
    """Serve one session until stdin ends; requests still running then are answered, open listens ended.

    Raises SessionEnded, once what is queued is written, when the user is deactivated or deleted.
    """
    limit = int(mcp_settings.MAX_MESSAGE_BYTES)
    reader = await open_reader(stdin or sys.stdin, limit + 1)
    outbox = Outbox(LineWriter(stdout or sys.stdout.buffer).write)
    session = Session(transport="stdio", user=user, emit=outbox.put, can_notify=True, can_ask=True)
    # The hub hears the channel layer and reads the change counters, so edits made by any process reach here.
    # It knows the session before the first message is read (as a WebSocket is registered before it is
    # accepted), so no change made after the client's first answer goes unannounced.
    await hub().add(session)
    reading = asyncio.ensure_future(read_loop(reader, session, limit))
    session.on_end = lambda reason: reading.cancel()
    if session.ended_because:
        reading.cancel()
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await reading
        if session.ended_because:
            await outbox.drain()
            raise SessionEnded(session.ended_because)
        # A listen lasts as long as the input: it ends with its final result instead of holding the exit.
        # One turn of the loop first lets a listen read just before the end register itself.
        await asyncio.sleep(0)
        for listen in session.listens.values():
            listen.ended.set()
        running = [inflight.task for inflight in session.in_flight.values()]
        await asyncio.gather(*running, return_exceptions=True)
        await outbox.drain()
    finally:
        reading.cancel()
        hub().remove(session)
        await asyncio.gather(*session.close(), return_exceptions=True)
        await audit_log().flush()


async def read_loop(reader: asyncio.StreamReader, session: Session, limit: int) -> None:
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            line = exc.partial
            if not line.strip():
                return
        except asyncio.LimitOverrunError:
            await skip_line(reader)
            session.emit(error_response(None, InvalidRequest(f"Message larger than {limit} bytes")))
            continue
        if line.strip():
            await server.receive(session, line.rstrip(b"\r\n"))


async def skip_line(reader: asyncio.StreamReader) -> None:
    """Discard the rest of an oversized line."""
    while True:
        try:
            await reader.readuntil(b"\n")
            return
        except asyncio.LimitOverrunError as exc:
            await reader.readexactly(exc.consumed)
        except asyncio.IncompleteReadError:
            return


@contextlib.contextmanager
def stdout_reserved() -> Any:
    """Route stray prints to stderr while stdout carries the protocol."""
    original = sys.stdout
    sys.stdout = sys.stderr
    try:
        yield original
    finally:
        sys.stdout = original
