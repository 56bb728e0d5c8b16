"""Who may open a connection: the one admission step the WebSocket and HTTP transports run before serving.

In order: the Host and Origin (``origins.py``); what the transport must do before credentials are read; the
caller's credentials, from memory when recently seen, else on a database thread; ``permissions.may_connect``;
and, for a connection that stays open, the user's allowance of open connections. A database connection
lost on the way is a 503. Every refusal is one ``Refused`` carrying the HTTP status, the JSON-RPC error and
the headers of its answer, so that a transport only frames it (an HTTP response, a handshake's denial).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from channels.db import database_sync_to_async
from django.core.handlers.asgi import ASGIRequest
from django.db import InterfaceError, OperationalError

from mcp_tools.access import permissions
from mcp_tools.access.authentication import AuthenticationFailed, authenticate_anew, from_memory, refusal_challenge
from mcp_tools.connections import connection_lost, log_lost
from mcp_tools.exceptions import DatabaseUnavailable, InvalidRequest, ProtocolError
from mcp_tools.notify.hub import hub
from mcp_tools.notify.listeners import too_many_connections
from mcp_tools.transports.http_request import connection_request
from mcp_tools.transports.origins import Connection, connection_problem

Headers = list[tuple[bytes, bytes]]
RETRY_AFTER = b"5"  # seconds: about how long a database restart or failover takes


class Refused(Exception):
    """A connection that is not served: the HTTP status, JSON-RPC error and headers of the answer refusing it."""

    def __init__(self, status: int, error: ProtocolError, headers: Iterable[tuple[bytes, bytes]] = ()) -> None:
        super().__init__(error.message)
        self.status, self.error, self.headers = status, error, list(headers)


@dataclass(frozen=True)
class Admitted:
    """The caller of an admitted connection, and the credential it presented (None for a session user)."""

    user: Any
    token: Any


@dataclass(frozen=True)
class Door:
    """How one transport's connections differ at admission; every other step and answer is the same."""

    name: str  # names the connection in log lines
    foreign_host: int  # the status refusing a Host outside ALLOWED_HOSTS
    stays_open: bool  # whether admission takes one of the user's MAX_CONNECTIONS_PER_USER


# A handshake answers a foreign Host 403, as Channels' own AllowedHostsOriginValidator does; a request 421.
HANDSHAKE = Door("a WebSocket", foreign_host=403, stays_open=True)
# A request holds no connection until it opens a stream, which asks ``ensure_room`` then.
REQUEST = Door("a request", foreign_host=421, stays_open=False)


def handshake(scope: Mapping[str, Any]) -> ASGIRequest:
    """Django's request for a WebSocket handshake; Refused (400) when Django cannot read its headers."""
    try:
        return connection_request(scope)
    except InvalidRequest as exc:
        raise Refused(400, exc) from None


async def admit(
    connection: Connection, door: Door, *, prepare: Callable[[], Awaitable[object]] | None = None
) -> Admitted:
    """Admit ``connection`` through ``door``, or raise Refused.

    ``prepare`` runs once the connection is known to come from a host and origin of ours, before its
    credentials are read.
    """
    problem = connection_problem(connection)
    if problem == "host":
        raise Refused(door.foreign_host, InvalidRequest("Invalid Host header"))
    if problem is not None:
        raise Refused(403, InvalidRequest(f"Invalid {problem.capitalize()} header"))
    with unavailable_when_lost(f"authenticating {door.name}"):
        if prepare is not None:
            await prepare()
        user, token = await credentials(connection)
    if not permissions.may_connect(user):
        raise Refused(401, InvalidRequest("Authentication required"), challenge(connection))
    if door.stays_open:
        ensure_room(user)
    return Admitted(user, token)


async def credentials(connection: Connection) -> tuple[Any, Any]:
    """The caller and credential of ``connection``; Refused (401 or 403, with a challenge) when they fail."""
    try:
        # A client that keeps calling is known from memory; only a new or stale credential costs a trip to
        # a database thread.
        known = from_memory(connection)
        return known if known is not None else await database_sync_to_async(authenticate_anew)(connection)
    except AuthenticationFailed as exc:
        raise Refused(exc.status, InvalidRequest(str(exc)), challenge(connection, exc)) from None


def ensure_room(user: Any) -> None:
    """Refused (429) when ``user`` already holds MAX_CONNECTIONS_PER_USER streams and sockets in this process."""
    if not hub().admits(user):
        raise Refused(429, InvalidRequest(too_many_connections()))


@contextmanager
def unavailable_when_lost(doing: str) -> Iterator[None]:
    """Refused (503, with Retry-After) for a lost database connection met inside; other database errors pass."""
    try:
        yield
    except (OperationalError, InterfaceError) as exc:
        if not connection_lost(exc):
            raise
        log_lost(exc, doing)
        raise Refused(503, DatabaseUnavailable(), [(b"retry-after", RETRY_AFTER)]) from None


def challenge(connection: Connection, failure: AuthenticationFailed | None = None) -> Headers:
    """The ``WWW-Authenticate`` header refusing ``connection``: why its credentials failed, if it had any."""
    return [(b"www-authenticate", refusal_challenge(connection, failure).encode("latin-1", "replace"))]


def lapsed_challenge(connection: Connection) -> Headers:
    """The challenge answering a request whose credentials stopped working while it ran."""
    return challenge(connection, AuthenticationFailed(""))
