"""The audited reference: the bare consumers of ``baseline.py`` plus one audit row per ``tools/call``, committed
before the answer, as this project keeps its audit trail by default.

Each call's row goes into the bench database's real ``mcp_tools_toolcall`` table (every column and index the
project's migrations made) with a plain ``INSERT`` through Django's connection. One writer thread does every
write: it takes all the rows queued, inserts them in one transaction, then wakes their callers; the rows that
arrive while a write is under way go together in the next one (a group commit, as ``mcp_tools/access/audit.py``
does). Alone a call pays one commit; under load one commit serves many calls.

No authentication, no tool table, no schema checks: the row names alice (read once) and no token. Routes: those
of ``baseline_orm.py``, plus ``/mcp/audited-ws`` and ``/mcp/audited`` (WebSocket and HTTP, ``add`` audited).

    BENCH_DB=/tmp/…/db.sqlite3 DJANGO_DEBUG=0 \\
        .venv/bin/uvicorn baseline_audited:application --app-dir bench --port 8003 --no-access-log
    .venv/bin/python bench/load.py ws://127.0.0.1:8003/mcp/audited-ws --sessions 32 --calls 150
"""

from __future__ import annotations

import asyncio
import json
import logging
import queue
import threading
import time
import uuid
from typing import Any

import baseline_orm  # sets Django up on the demo's settings and database, before baseline would on its own

# isort: split
import baseline
from django.db import connection, transaction
from django.urls import path
from django.utils import timezone
from orders import USERNAME, manager_id

logger = logging.getLogger(__name__)

COLUMNS = (
    "created_at",
    "user_id",
    "username",
    "token_id",
    "client",
    "transport",
    "session_id",
    "tool_name",
    "arguments",
    "outcome",
    "message",
    "duration_ms",
    "result_bytes",
    "confirmation",
    "confirmed_by_id",
)
INSERT = f"INSERT INTO mcp_tools_toolcall ({', '.join(COLUMNS)}) VALUES ({', '.join(['%s'] * len(COLUMNS))})"
Row = tuple[Any, ...]
Waiter = tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]


class AuditWriter:
    """One thread that writes the rows queued meanwhile in one transaction, then wakes their callers."""

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Row, Waiter]] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None

    async def record(self, row: Row) -> None:
        """Queue one row (every column but ``user_id``, which the writer adds); return once it is committed (or
        its write failed, which is logged)."""
        loop = asyncio.get_running_loop()
        written: asyncio.Future[None] = loop.create_future()
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="audit-writer", daemon=True)
            self._thread.start()
        self._queue.put((row, (loop, written)))
        await written

    def _run(self) -> None:
        while True:
            batch = [self._queue.get()]
            while True:
                try:
                    batch.append(self._queue.get_nowait())
                except queue.Empty:
                    break
            try:
                insert([row for row, _waiter in batch])
            except Exception:
                # As the project does: a failed write is logged, and the calls are answered all the same.
                logger.exception("Could not write %d audit rows", len(batch))
            loop = batch[0][1][0]
            loop.call_soon_threadsafe(wake, [written for _row, (_loop, written) in batch])


def insert(rows: list[Row]) -> None:
    """One INSERT per batch; a batch of one commits on its own, a larger one in one transaction."""
    adapt_time, user = connection.ops.adapt_datetimefield_value, manager_id()
    values = [(adapt_time(row[0]), user, *row[1:]) for row in rows]
    if len(values) == 1:
        with connection.cursor() as cursor:
            cursor.execute(INSERT, values[0])
        return
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.executemany(INSERT, values)


def wake(waiting: list[asyncio.Future[None]]) -> None:
    for written in waiting:
        if not written.done():
            written.set_result(None)


writer = AuditWriter()


class AuditedReply:
    """The bare answer, then the call's audit row, committed before the answer goes out."""

    transport = ""

    def session_id(self) -> str:
        return ""

    async def reply(self, message: dict[str, Any]) -> dict[str, Any] | None:
        started = time.perf_counter()
        response = baseline.answer(message)
        if response is None or message.get("method") != "tools/call":
            return response
        params = message.get("params") or {}
        result = response.get("result")
        row = (
            timezone.now(),
            USERNAME,
            None,
            "",
            self.transport,
            self.session_id(),
            str(params.get("name", "")),
            json.dumps(params.get("arguments") or {}, separators=(",", ":")),
            "ok" if result is not None else "error",
            "",
            (time.perf_counter() - started) * 1000,
            len(baseline.encode(result)) if result is not None else 0,
            "",
            None,
        )
        await writer.record(row)
        return response


class AuditedWebsocketConsumer(AuditedReply, baseline.DirectConsumer):
    """The bare WebSocket consumer, auditing every call."""

    transport = "websocket"

    async def connect(self) -> None:
        self._session = uuid.uuid4().hex
        await super().connect()

    def session_id(self) -> str:
        return self._session


class AuditedHttpConsumer(AuditedReply, baseline.HttpConsumer):
    """The bare HTTP consumer, auditing every call."""

    transport = "http"

    def session_id(self) -> str:
        for name, value in self.scope["headers"]:
            if name == b"mcp-session-id":
                return str(value.decode("latin-1"))
        return ""


_websocket, _http = baseline_orm.routes()
application = baseline.make_application(
    [*_websocket, path("mcp/audited-ws", AuditedWebsocketConsumer.as_asgi())],
    [*_http, path("mcp/audited", AuditedHttpConsumer.as_asgi())],
)
