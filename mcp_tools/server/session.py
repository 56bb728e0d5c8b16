"""Per-connection state: negotiated revision, client capabilities, user, in-flight calls, listens."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from mcp_tools.access.concurrency import SessionCalls
from mcp_tools.access.credentials import credentials_problem
from mcp_tools.access.reach import reach_of
from mcp_tools.protocol.jsonrpc import RequestId, notification
from mcp_tools.protocol.versions import SUBSCRIPTION_ID_META, Revision
from mcp_tools.server.questions import Questions
from mcp_tools.tools.context import Context
from mcp_tools.tools.snapshot import Snapshot, View

LIST_CHANGED = "notifications/tools/list_changed"
Emit = Callable[[Any], None]
Respond = Callable[[Any], Awaitable[None]]
OnEnd = Callable[[str], object]
# Asks whichever other process runs a request of this session to cancel it: (request id, reason).
CancelElsewhere = Callable[[RequestId, str], Awaitable[None]]


@dataclass
class InFlight:
    task: asyncio.Task[Any]
    ctx: Context | None = None


@dataclass
class Listen:
    """A modern ``subscriptions/listen`` request held open until cancelled or closed."""

    request_id: RequestId
    tools: bool
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class ListWatcher:
    """Something told about tool changes that matter to one caller: it announces only real changes.

    The hub also ends it (:meth:`end`) once its caller's credentials stop working: a revoked or expired
    token, a deactivated or deleted user.
    """

    user: Any = None
    token: Any = None
    fingerprint: frozenset[Any] | None = None
    ended_because: str = ""  # why the hub ended it; empty while its credentials work

    def view(self, snapshot: Snapshot) -> View:
        """The tools this caller may list and call: its user's, within its credential's reach."""
        return snapshot.view(self.user, reach_of(self.token))

    def remember(self, snapshot: Any) -> None:
        self.fingerprint = self.view(snapshot).fingerprint

    def tools_changed(self, snapshot: Any) -> None:
        """Announce list_changed when, and only when, this caller's list differs from the last one seen."""
        current = self.view(snapshot).fingerprint
        if current != self.fingerprint:
            self.fingerprint = current
            self.announce()

    def announce(self) -> None:
        raise NotImplementedError

    def end(self, reason: str) -> None:
        """Stop serving this caller: its credentials no longer work. Ending twice does nothing more."""
        if not self.ended_because:
            self.ended_because = reason
            self.ended(reason)

    def ended(self, reason: str) -> None:
        """What the transport does once the caller is cut off (close the socket, end the stream)."""

    def credentials_problem(self) -> str | None:
        """Why this caller may do nothing more (checked on every request), or None while all is well."""
        if self.ended_because:
            return self.ended_because
        return credentials_problem(self.user, self.token)


def cancel_running(in_flight: dict[RequestId, InFlight], request_id: RequestId, reason: str = "") -> bool:
    """Stop the request ``request_id`` of an in-flight table, tool and task; returns whether it was there."""
    running = in_flight.pop(request_id, None)
    if running is None:
        return False
    if running.ctx is not None:
        running.ctx.cancel()
    running.task.cancel(reason or None)
    return True


class Session(ListWatcher):
    """What the server knows of one client connection (or, for stateless HTTP, one request)."""

    def __init__(
        self,
        *,
        transport: str,
        user: Any,
        emit: Emit,
        session_id: str = "",
        can_notify: bool = False,
        token: Any = None,
        can_ask: bool = False,
    ) -> None:
        self.transport = transport
        self.user = user
        self.token = token
        self.emit = emit
        # Where a finished request's response goes when its task can wait for the write itself (no task of
        # the transport's own per response); None: through ``emit``.
        self.respond: Respond | None = None
        self.session_id = session_id
        self.can_notify = can_notify
        self.revision: Revision | None = None
        self.client_capabilities: dict[str, Any] = {}
        self.client_info: dict[str, Any] = {}
        # What the audit trail names as the client instead of the credential's (an admin trying a tool).
        self.audit_client = ""
        self.on_end: OnEnd | None = None  # set by transports that can cut the connection off
        self.cancel_elsewhere: CancelElsewhere | None = None  # set where requests may run in other processes
        self.shared_calls: SessionCalls | None = None  # counts calls in every process, where they may run there
        self.in_flight: dict[RequestId, InFlight] = {}
        self.batched_calls = 0  # tools/call members of a batch now running (in_flight holds spawned requests only)
        self.listens: dict[RequestId, Listen] = {}
        # The questions this session's client is asked (elicitation); None where nothing can carry one.
        self.questions: Questions | None = Questions() if can_ask else None

    @property
    def initialized(self) -> bool:
        return self.revision is not None

    def announce(self) -> None:
        """Tell the client its tool list changed: on the session (legacy) and on each listen (modern)."""
        if self.initialized and self.can_notify:
            self.emit(notification(LIST_CHANGED))
        for listen in self.listens.values():
            if listen.tools:
                self.emit(notification(LIST_CHANGED, {"_meta": {SUBSCRIPTION_ID_META: listen.request_id}}))

    def cancel(self, request_id: Any, reason: str = "") -> bool:
        """Stop an in-flight request; returns whether one was running."""
        listen = self.listens.pop(request_id, None)
        if listen is not None:
            listen.ended.set()
        return cancel_running(self.in_flight, request_id, reason) or listen is not None

    def ended(self, reason: str) -> None:
        for listen in self.listens.values():
            listen.ended.set()
        if self.on_end is not None:
            self.on_end(reason)

    def close(self) -> list[asyncio.Task[Any]]:
        """Cancel everything in flight; returns the tasks, which still finish (and audit) after this."""
        tasks = [running.task for running in self.in_flight.values()]
        for request_id in list(self.in_flight):
            self.cancel(request_id, "connection closed")
        for listen in self.listens.values():
            listen.ended.set()
        self.listens.clear()
        if self.questions is not None:
            self.questions.close()
        return tasks
