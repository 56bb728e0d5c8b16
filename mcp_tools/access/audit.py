"""The audit trail: one ToolCall row per tools/call, committed before the call is answered by default.

A call waits for its own row; the rows of calls finishing while a write is under way go together in the
next insert (a group commit), so under load one write serves many calls and alone it serves one. A worker
process killed at any moment has lost no row of a call it answered. ``AUDIT_FLUSH_SECONDS`` trades that
for speed: rows then wait off the response path for up to that long (or a full batch), and the rows
waiting when a process is killed are lost. A write that finds its connection lost (a database restart)
is made once more on a fresh one; one that still fails (the database down) is logged, and its rows lost.

Writes run in one thread of their own per process (:data:`writing_thread`, a :class:`~mcp_tools.handoff.HandoffThread`):
a call alone, the usual case at low load, pays one hand-over to that thread for its row and nothing of
asgiref's per-call machinery (context copies, thread-sensitive dispatch, closing every alias's old
connections).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from datetime import timedelta
from functools import lru_cache
from typing import Any

from django.contrib.auth import get_user_model
from django.db import IntegrityError, connections, router, transaction
from django.utils import timezone

from mcp_tools.access.audit_arguments import UNSTORABLE, storable_text
from mcp_tools.conf import mcp_settings
from mcp_tools.connections import retried
from mcp_tools.handoff import HandoffThread
from mcp_tools.loops import PerLoop
from mcp_tools.models import AccessToken, ToolCall

logger = logging.getLogger("mcp_tools")


#: The columns of a row, in the order of the tuples the log keeps and writes.
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
USER, TOKEN, CONFIRMED_BY = COLUMNS.index("user_id"), COLUMNS.index("token_id"), COLUMNS.index("confirmed_by_id")
TEXTS = ("username", "client", "transport", "session_id", "tool_name", "outcome", "message", "confirmation")
Row = tuple[Any, ...]


class AuditLog:
    """Writes the rows recorded meanwhile with one bulk insert per batch of up to ``AUDIT_BATCH_SIZE``."""

    def __init__(self) -> None:
        self.pending: list[tuple[Row, asyncio.Future[None]]] = []
        self._writer: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    async def record(self, **row: Any) -> None:
        """Store one row (``arguments`` as the JSON text ``stored_arguments`` made); returns once it is committed
        (or its write failed, which is logged), unless AUDIT_FLUSH_SECONDS lets it wait."""
        if not mcp_settings.AUDIT:
            return
        written = asyncio.get_running_loop().create_future()
        self.pending.append((as_values(row), written))
        delay = float(mcp_settings.AUDIT_FLUSH_SECONDS or 0)
        if delay <= 0:
            self._write_soon()
            # A caller cancelled while it waits cancels only its wait: the row is in ``pending``, and is written.
            await written
        elif len(self.pending) >= int(mcp_settings.AUDIT_BATCH_SIZE):
            self._write_soon()
        elif self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(delay, self._write_soon)

    async def flush(self) -> None:
        """Write every row recorded so far; returns once they are written."""
        if self.pending:
            self._write_soon()
        if self._writer is not None and not self._writer.done():
            await asyncio.shield(self._writer)

    def _write_soon(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write_pending())

    async def _write_pending(self) -> None:
        while self.pending:
            size = max(1, int(mcp_settings.AUDIT_BATCH_SIZE))
            batch, self.pending = self.pending[:size], self.pending[size:]
            try:
                await writing_thread.run(_insert, [row for row, _written in batch])
            except Exception:
                # Recording must never turn a call that worked into one that failed.
                logger.exception("Could not write %d audit rows", len(batch))
            for _row, written in batch:
                if not written.done():
                    written.set_result(None)


def as_values(row: dict[str, Any]) -> Row:
    """``row`` as the tuple the insert takes, every text storable: built once, on the event loop.

    ``arguments`` is compact JSON with every non-ASCII character escaped (``stored_arguments``): ASCII, storable.
    """
    get = row.get
    texts = [get(name, "") for name in TEXTS]
    if UNSTORABLE.search("".join(texts)):
        texts = [storable_text(text) for text in texts]
    username, client, transport, session_id, tool_name, outcome, message, confirmation = texts
    return (
        get("created_at") or timezone.now(),
        get("user_id"),
        username,
        get("token_id"),
        client,
        transport,
        session_id,
        tool_name,
        get("arguments", "{}"),
        outcome,
        message,
        get("duration_ms", 0.0),
        get("result_bytes", 0),
        confirmation,
        get("confirmed_by_id"),
    )


#: The process's audit-writing thread.
writing_thread = HandoffThread("mcp-audit")


# How often the writing thread lets its connection go as a request's end would: each check costs a query
# (``CONN_HEALTH_CHECKS``), and at one call at a time that would be a round trip more per row.
CONNECTION_CHECK_SECONDS = 1.0
_checked = threading.local()


def _insert(rows: list[Row]) -> None:
    """Insert ``rows``; a connection lost since the last write (a database restart) is replaced once. The
    connection is let go as a request's would be, at most once a second and after any failed write: closed
    when unusable or older than ``CONN_MAX_AGE``."""
    alias = router.db_for_write(ToolCall)
    connection = connections[alias]
    now = time.monotonic()
    if now - getattr(_checked, alias, float("-inf")) >= CONNECTION_CHECK_SECONDS:
        setattr(_checked, alias, now)
        connection.close_if_unusable_or_obsolete()
    try:
        retried(_insert_on, alias)(rows)
    except BaseException:
        connection.close_if_unusable_or_obsolete()
        raise


def _insert_on(rows: list[Row]) -> None:
    try:
        _execute_many(rows)
    except IntegrityError:
        # A user or token deleted since its call (a revoked token's open session): keep the rows.
        _execute_many(_without_dangling_links(rows))


def _execute_many(rows: list[Row]) -> None:
    """The rows in as few statements as the backend takes, each a multi-row INSERT (one per batch on
    PostgreSQL): the database parses and plans once per statement, and the driver sends and waits once, where
    an ``executemany`` does both for every row. Model instances and per-field preparation would cost more
    than the insert, so the values go as they are."""
    alias = router.db_for_write(ToolCall)
    connection = connections[alias]
    adapt_time = connection.ops.adapt_datetimefield_value
    per_statement = max(1, connection.ops.bulk_batch_size(_fields(), rows))
    statements = [rows[start : start + per_statement] for start in range(0, len(rows), per_statement)]
    with contextlib.ExitStack() as stack:
        # One statement commits on its own (every batch of a call alone, the usual case at low load). Inside a
        # transaction, a savepoint keeps a refused insert from breaking it before the retry without links.
        if len(statements) > 1 or connection.in_atomic_block:
            stack.enter_context(transaction.atomic(using=alias))
        cursor = stack.enter_context(connection.cursor())
        for statement in statements:
            values = [value for row in statement for value in (adapt_time(row[0]), *row[1:])]
            cursor.execute(_insert_sql(alias, len(statement)), values)


@lru_cache(maxsize=1)
def _fields() -> list[Any]:
    """The ToolCall fields of ``COLUMNS``, in their order."""
    by_attname = {field.attname: field for field in ToolCall._meta.concrete_fields}
    return [by_attname[name] for name in COLUMNS]


@lru_cache(maxsize=256)
def _insert_sql(alias: str, rows: int) -> str:
    """The INSERT of ``rows`` rows, written as the backend writes ``bulk_create``'s."""
    connection = connections[alias]
    quote, fields = connection.ops.quote_name, _fields()
    columns = ", ".join(quote(str(field.column)) for field in fields)
    # A row of placeholders per row, as bulk_create passes them (django-stubs has each row a string).
    placeholders: Any = [["%s"] * len(fields)] * rows
    values = connection.ops.bulk_insert_sql(fields, placeholders)
    return f"INSERT INTO {quote(ToolCall._meta.db_table)} ({columns}) {values}"


def _without_dangling_links(rows: list[Row]) -> list[Row]:
    users = _existing(get_user_model(), {row[USER] for row in rows} | {row[CONFIRMED_BY] for row in rows})
    tokens = _existing(AccessToken, {row[TOKEN] for row in rows})
    kept = []
    for row in rows:
        values = list(row)
        values[USER] = row[USER] if row[USER] in users else None
        values[TOKEN] = row[TOKEN] if row[TOKEN] in tokens else None
        values[CONFIRMED_BY] = row[CONFIRMED_BY] if row[CONFIRMED_BY] in users else None
        kept.append(tuple(values))
    return kept


def _existing(model: Any, ids: set[Any]) -> set[Any]:
    return set(model._default_manager.filter(pk__in=ids - {None}).values_list("pk", flat=True))


def prune(days: int | None = None) -> int:
    """Delete rows older than the retention period; returns how many went."""
    keep = int(days if days is not None else mcp_settings.AUDIT_RETENTION_DAYS)
    deleted, _ = ToolCall.objects.filter(created_at__lt=timezone.now() - timedelta(days=keep)).delete()
    return deleted


#: The audit log of the running event loop: its batch timer and writes belong to that loop.
audit_log = PerLoop(AuditLog)
