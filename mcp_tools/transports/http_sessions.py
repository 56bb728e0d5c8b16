"""Legacy Streamable HTTP sessions: stored in the database, cached per process, ended everywhere at once.

Any worker process may serve any request of a session. Ending a session, cancelling one of its
requests, or answering a question one of its requests asked (elicitation), reaches the process that runs
the request through the Channels group the hub listens on.

Each user (anonymous callers together) keeps at most ``MAX_SESSIONS_PER_USER`` live sessions: opening
one more ends the least recently used. Rows of ended and expired sessions are deleted, a user's own when
they open a session and everyone's at most once per ``SESSION_PRUNE_SECONDS``; the process cache is
bounded by the memory its records hold (``SESSION_CACHE_BYTES``) as well as by entries.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import sys
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import timedelta
from functools import cached_property, partial
from typing import Any

from channels.db import database_sync_to_async
from django.db import router
from django.db.models import Q
from django.utils import timezone

from mcp_tools.access import concurrency
from mcp_tools.conf import mcp_settings
from mcp_tools.connections import retried
from mcp_tools.models import ClientSession
from mcp_tools.notify.events import channel_layer, group_send
from mcp_tools.notify.group import cross_process, on_event
from mcp_tools.notify.hub import hub
from mcp_tools.protocol import versions
from mcp_tools.protocol.jsonrpc import RequestId, Response
from mcp_tools.protocol.versions import Revision
from mcp_tools.server.questions import Questions
from mcp_tools.server.session import Emit, InFlight, Session, cancel_running

logger = logging.getLogger("mcp_tools")
SESSION_ENDED = "mcp.session_ended"
SESSION_CANCEL = "mcp.session_cancel"
SESSION_ANSWER = "mcp.session_answer"
# An answer travels between processes only as large as a confirmation's ever is.
MAX_FORWARDED_ANSWER_BYTES = 16_384
# Request ids and reasons are the client's: only ids a worker could hold in its table, and a short reason,
# travel between processes.
MAX_REQUEST_ID_CHARS = 200
MAX_REQUEST_ID_INT = 2**63
MAX_REASON_CHARS = 200
CACHE_SIZE = 10_000
# What a cached session costs besides its client state: the record, its id, the cache slot.
ENTRY_BYTES = 512
# Rows deleted per statement, so that pruning a backlog never holds the database thread for long.
PRUNE_CHUNK = 1000
# A cached session is confirmed against the database this often, which keeps its expiry and last use honest.
RECHECK_SECONDS = 60.0


@dataclass(frozen=True)
class SessionRecord:
    id: str
    user_id: Any
    revision: Revision
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def cost(self) -> int:
        """What the record counts for against SESSION_CACHE_BYTES: the memory of its client state, and a slot."""
        return ENTRY_BYTES + memory_size(self.client_capabilities) + memory_size(self.client_info)


class SessionStore:
    """Creates, finds and ends sessions; any worker process can serve any session.

    ``cache_bytes`` is what the cached records cost; ``pruning`` is the prune under way, if any, and
    ``pruned_at`` the ``time.monotonic()`` at which this process last started one.
    """

    def __init__(self) -> None:
        self._cache: OrderedDict[str, tuple[SessionRecord, float]] = OrderedDict()
        self._in_flight: dict[str, dict[RequestId, InFlight]] = {}
        self._questions: dict[str, Questions] = {}
        self.cache_bytes = 0
        self.pruning: asyncio.Task[None] | None = None
        self.pruned_at = float("-inf")

    async def create(self, session: Session) -> str:
        assert session.revision is not None
        session_id = secrets.token_urlsafe(24)
        record = SessionRecord(
            session_id,
            _user_id(session.user),
            session.revision,
            session.client_capabilities,
            session.client_info,
        )
        surplus = await database_sync_to_async(_insert)(record, int(mcp_settings.MAX_SESSIONS_PER_USER))
        for old in surplus:
            await self.end(old)
        if surplus:
            await database_sync_to_async(_delete)(surplus)
        await self._remember(record)
        self.prune_soon()
        return session_id

    async def get(self, session_id: str, user: Any) -> SessionRecord | None:
        """The live session ``session_id`` of ``user``; None when unknown, ended or someone else's."""
        cached = self._cache.get(session_id)
        if cached is not None and time.monotonic() - cached[1] < RECHECK_SECONDS:
            record = cached[0]
        else:
            found = await database_sync_to_async(_fetch)(session_id)
            if found is None:
                self.evict(session_id)
                return None
            record = found
            await self._remember(record)
        return record if record.user_id == _user_id(user) else None

    async def end(self, session_id: str) -> None:
        """End a session everywhere: its row, its cached copies, its calls in flight and its GET streams."""
        await database_sync_to_async(_mark_ended)(session_id)
        event = {"type": SESSION_ENDED, "id": session_id}
        await hub().deliver(event)  # this process at once, whatever the channel layer
        await _tell_other_processes(event)

    async def cancel_elsewhere(self, session_id: str, request_id: RequestId, reason: str = "") -> None:
        """Ask the other processes to cancel request ``request_id`` of the session, should one of them run it.

        The caller has found the session to be its own (:meth:`get`), which is what entitles it to cancel.
        """
        if isinstance(request_id, str) and len(request_id) > MAX_REQUEST_ID_CHARS:
            return
        if isinstance(request_id, int) and not -MAX_REQUEST_ID_INT <= request_id < MAX_REQUEST_ID_INT:
            return
        event = {"type": SESSION_CANCEL, "id": session_id, "request": request_id, "reason": reason[:MAX_REASON_CHARS]}
        await _tell_other_processes(event)

    def cancel_here(self, session_id: str, request_id: Any, reason: str = "") -> None:
        """Cancel request ``request_id`` of the session if this process runs it."""
        running = self._in_flight.get(session_id)
        if running is not None and isinstance(request_id, int | str):
            cancel_running(running, request_id, reason)

    def questions(self, session_id: str) -> Questions:
        """The questions the session's requests running here have asked, which its later POSTs answer."""
        return self._questions.setdefault(session_id, Questions())

    async def answer(self, session_id: str, response: Response) -> None:
        """Hand a client's answer to the question it answers, here or in whichever process asked it.

        The caller has found the session to be its own (:meth:`get`), which is what entitles it to answer.
        """
        questions = self._questions.get(session_id)
        if questions is not None and questions.answer(response):
            return
        if not isinstance(response.id, str) or len(response.id) > MAX_REQUEST_ID_CHARS:
            return  # the server's question ids are short strings: this answers none of them
        event = {"type": SESSION_ANSWER, "id": session_id, "request": response.id, "result": response.result}
        if response.error is not None or len(json.dumps(response.result, default=str)) > MAX_FORWARDED_ANSWER_BYTES:
            event["result"] = None  # read as a refusal: an answer this large is no confirmation
        await _tell_other_processes(event)

    def answer_here(self, session_id: str, request_id: Any, result: Any) -> None:
        questions = self._questions.get(session_id)
        if questions is not None and isinstance(request_id, str):
            questions.answer(Response(request_id, result if isinstance(result, dict) else None))

    def forget(self, session_id: str) -> None:
        """Drop what this process holds of a session ended anywhere: its cached record, its calls running here."""
        self.evict(session_id)
        running = self._in_flight.pop(session_id, {})
        for request_id in list(running):
            cancel_running(running, request_id, "The session was deleted.")
        questions = self._questions.pop(session_id, None)
        if questions is not None:
            questions.close()

    def evict(self, session_id: str) -> None:
        cached = self._cache.pop(session_id, None)
        if cached is not None:
            self.cache_bytes -= cached[0].cost

    async def _remember(self, record: SessionRecord) -> None:
        # The hub delivers session-ended events from other processes, which keep this cache honest.
        await hub().retain(self)
        self.evict(record.id)
        self._cache[record.id] = (record, time.monotonic())
        self.cache_bytes += record.cost
        limit = int(mcp_settings.SESSION_CACHE_BYTES)
        while self._cache and (len(self._cache) > CACHE_SIZE or self.cache_bytes > limit):
            _id, (dropped, _seen) = self._cache.popitem(last=False)
            self.cache_bytes -= dropped.cost

    def prune_soon(self) -> None:
        """Delete dead session rows in the background, unless this process did within SESSION_PRUNE_SECONDS."""
        interval = float(mcp_settings.SESSION_PRUNE_SECONDS)
        now = time.monotonic()
        if interval <= 0 or self.pruning is not None or now - self.pruned_at < interval:
            return
        self.pruned_at = now
        self.pruning = asyncio.ensure_future(self._prune())

    async def _prune(self) -> None:
        try:
            # One chunk per trip to the database thread, so that other queries get their turn in between.
            while await database_sync_to_async(_prune_chunk)() == PRUNE_CHUNK:
                pass
        except Exception:
            logger.exception("Could not delete the rows of ended sessions")
        finally:
            self.pruning = None

    def session_for(self, record: SessionRecord, *, user: Any, token: Any, emit: Emit) -> Session:
        session = Session(
            transport="http",
            user=user,
            token=token,
            emit=emit,
            session_id=record.id,
            can_notify=True,
        )
        session.revision = record.revision
        session.client_capabilities = dict(record.client_capabilities)
        session.client_info = dict(record.client_info)
        # Requests of one session share their in-flight table, so a later POST can cancel an earlier one; a
        # request run by another process is cancelled there.
        session.in_flight = self._in_flight.setdefault(record.id, {})
        session.cancel_elsewhere = partial(self.cancel_elsewhere, record.id)
        if concurrency.shared():
            session.shared_calls = concurrency.SessionCalls(record.id)
        return session

    def release(self, session: Session) -> None:
        if session.session_id and not session.in_flight:
            self._in_flight.pop(session.session_id, None)
            questions = self._questions.get(session.session_id)
            if questions is not None and not questions.pending:
                del self._questions[session.session_id]


store = SessionStore()


@on_event(SESSION_ENDED)
def _session_ended(event: dict[str, Any]) -> None:
    store.forget(str(event.get("id", "")))


@on_event(SESSION_ANSWER)
def _answer_arrived(event: dict[str, Any]) -> None:
    store.answer_here(str(event.get("id", "")), event.get("request"), event.get("result"))


@on_event(SESSION_CANCEL)
def _cancel_requested(event: dict[str, Any]) -> None:
    store.cancel_here(str(event.get("id", "")), event.get("request"), str(event.get("reason", "")))


async def _tell_other_processes(event: dict[str, Any]) -> None:
    # Without the layer, other processes learn of an ended session from its row (RECHECK_SECONDS).
    layer = channel_layer()
    if cross_process(layer):
        assert layer is not None
        await group_send(layer, event)


def _user_id(user: Any) -> Any:
    return user.pk if user is not None and getattr(user, "is_authenticated", False) else None


def memory_size(value: Any) -> int:
    """The memory a decoded JSON value holds: every object in it, as ``sys.getsizeof`` counts them.

    Its JSON text says little: 9 KB of small keys decode into some 90 KB of dicts, ints and strings.
    """
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        total += sys.getsizeof(item)
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return total


def _dead() -> Q:
    """Sessions that can never be used again: ended, or idle past SESSION_TTL_SECONDS."""
    cutoff = timezone.now() - timedelta(seconds=int(mcp_settings.SESSION_TTL_SECONDS))
    return Q(ended_at__isnull=False) | Q(last_seen_at__lt=cutoff)


def _insert(record: SessionRecord, cap: int) -> list[str]:
    """Store the session; the ids of its user's live sessions beyond ``cap``, least recently used first."""
    ClientSession.objects.create(
        id=record.id,
        user_id=record.user_id,
        revision=str(record.revision.wire),
        client_capabilities=record.client_capabilities,
        client_info=record.client_info,
    )
    mine = ClientSession.objects.filter(user_id=record.user_id)
    mine.filter(_dead()).delete()
    older = mine.exclude(id=record.id).order_by("-last_seen_at", "-created_at").values_list("id", flat=True)
    return list(reversed(older[max(cap - 1, 0) :]))


def _delete(session_ids: list[str]) -> None:
    ClientSession.objects.filter(id__in=session_ids).delete()


def _prune_chunk() -> int:
    ids = list(ClientSession.objects.filter(_dead()).values_list("id", flat=True)[:PRUNE_CHUNK])
    if not ids:
        return 0
    ClientSession.objects.filter(id__in=ids).delete()
    return len(ids)


def prune() -> int:
    """Delete the rows of every ended or expired session; returns how many went."""
    deleted = 0
    while True:
        done = _prune_chunk()
        deleted += done
        if done < PRUNE_CHUNK:
            return deleted


def _fetch(session_id: str) -> SessionRecord | None:
    """The live session's record, its last use noted; once more on a fresh connection if the kept one was lost."""
    return retried(_fetch_on, router.db_for_write(ClientSession))(session_id)


def _fetch_on(session_id: str) -> SessionRecord | None:
    cutoff = timezone.now() - timedelta(seconds=int(mcp_settings.SESSION_TTL_SECONDS))
    row = ClientSession.objects.filter(id=session_id, ended_at__isnull=True, last_seen_at__gte=cutoff).first()
    revision = versions.lookup(row.revision) if row is not None else None
    if row is None or revision is None:
        return None
    ClientSession.objects.filter(pk=row.pk).update(last_seen_at=timezone.now())
    return SessionRecord(row.id, row.user_id, revision, row.client_capabilities, row.client_info)


def _mark_ended(session_id: str) -> None:
    ClientSession.objects.filter(id=session_id, ended_at__isnull=True).update(ended_at=timezone.now())
