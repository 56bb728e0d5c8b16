"""Legacy Streamable HTTP sessions: stored in the database, cached per process, ended everywhere at once."""

from __future__ import annotations

import secrets
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from channels.db import database_sync_to_async
from django.utils import timezone

from mcp_tools.conf import mcp_settings
from mcp_tools.hub import hub, on_event
from mcp_tools.notifications import channel_layer, group_name
from mcp_tools.protocol import versions
from mcp_tools.protocol.jsonrpc import RequestId
from mcp_tools.protocol.versions import Revision
from mcp_tools.session import Emit, InFlight, Session

SESSION_ENDED = "mcp.session_ended"
CACHE_SIZE = 10_000
# A cached session is confirmed against the database this often, which keeps its expiry and last use honest.
RECHECK_SECONDS = 60.0


@dataclass(frozen=True)
class SessionRecord:
    id: str
    user_id: Any
    revision: Revision
    client_capabilities: dict[str, Any] = field(default_factory=dict)
    client_info: dict[str, Any] = field(default_factory=dict)


class SessionStore:
    """Creates, finds and ends sessions; any worker process can serve any session."""

    def __init__(self) -> None:
        self._cache: OrderedDict[str, tuple[SessionRecord, float]] = OrderedDict()
        self._in_flight: dict[str, dict[RequestId, InFlight]] = {}

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
        await database_sync_to_async(_insert)(record)
        await self._remember(record)
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
        for inflight in self._in_flight.pop(session_id, {}).values():
            inflight.task.cancel()
        event = {"type": SESSION_ENDED, "id": session_id}
        await hub().deliver(event)  # this process at once, whatever the channel layer
        layer = channel_layer()
        if layer is not None:
            await layer.group_send(group_name(), event)

    def evict(self, session_id: str) -> None:
        self._cache.pop(session_id, None)

    async def _remember(self, record: SessionRecord) -> None:
        # The hub delivers session-ended events from other processes, which keep this cache honest.
        await hub().add(self)
        self._cache[record.id] = (record, time.monotonic())
        self._cache.move_to_end(record.id)
        while len(self._cache) > CACHE_SIZE:
            self._cache.popitem(last=False)

    def tools_changed(self, snapshot: Any) -> None:
        """The store listens on the hub only for session-ended events."""

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
        session.ready = True
        # Requests of one session share their in-flight table, so a later POST can cancel an earlier one.
        session.in_flight = self._in_flight.setdefault(record.id, {})
        return session

    def release(self, session: Session) -> None:
        if session.session_id and not session.in_flight:
            self._in_flight.pop(session.session_id, None)


store = SessionStore()


@on_event(SESSION_ENDED)
def _session_ended(event: dict[str, Any]) -> None:
    store.evict(str(event.get("id", "")))


def _user_id(user: Any) -> Any:
    return user.pk if user is not None and getattr(user, "is_authenticated", False) else None


def _insert(record: SessionRecord) -> None:
    from mcp_tools.models import ClientSession

    ClientSession.objects.create(
        id=record.id,
        user_id=record.user_id,
        revision=str(record.revision.wire),
        client_capabilities=record.client_capabilities,
        client_info=record.client_info,
    )


def _fetch(session_id: str) -> SessionRecord | None:
    from mcp_tools.models import ClientSession

    cutoff = timezone.now() - timedelta(seconds=int(mcp_settings.SESSION_TTL_SECONDS))
    row = ClientSession.objects.filter(id=session_id, ended_at__isnull=True, last_seen_at__gte=cutoff).first()
    revision = versions.lookup(row.revision) if row is not None else None
    if row is None or revision is None:
        return None
    ClientSession.objects.filter(pk=row.pk).update(last_seen_at=timezone.now())
    return SessionRecord(row.id, row.user_id, revision, row.client_capabilities, row.client_info)


def _mark_ended(session_id: str) -> None:
    from mcp_tools.models import ClientSession

    ClientSession.objects.filter(id=session_id, ended_at__isnull=True).update(ended_at=timezone.now())
