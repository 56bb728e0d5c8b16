"""Who may open a connection: the admission step itself, and the same answer from the WebSocket handshake and
the Streamable HTTP endpoint for each refusal."""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import pytest
from django.db import OperationalError

from mcp_tools.exceptions import DATABASE_UNAVAILABLE, INVALID_REQUEST, DatabaseUnavailable, InvalidRequest
from mcp_tools.models import AccessToken
from mcp_tools.transports import admission
from mcp_tools.transports.admission import HANDSHAKE, REQUEST, Refused, admit, ensure_room, handshake
from tests.challenges import challenge, refused_token
from tests.db import db_call, lost_connection
from tests.live.asgi_http import HttpClient, initialize_params, request
from tests.websocket import Connect, denial, ws_headers

pytestmark = pytest.mark.django_db(transaction=True)

HOST = (b"host", b"testserver")
FOREIGN_ORIGIN = (b"origin", b"http://evil.example")
FOREIGN_HOST = (b"host", b"evil.example")
BAD_TOKEN = "The access token is invalid or expired."
RETRY_AFTER = [(b"retry-after", b"5")]


def connection(*headers: tuple[bytes, bytes], user: Any = None) -> Any:
    """Django's request for a handshake with these headers (and session user), as a transport hands it over."""
    scope: dict[str, Any] = {"type": "websocket", "headers": list(headers)}
    if user is not None:
        scope["user"] = user
    return handshake(scope)


def bearer(raw: str) -> tuple[bytes, bytes]:
    return (b"authorization", f"Bearer {raw}".encode())


def www_authenticate(value: str) -> list[tuple[bytes, bytes]]:
    return [(b"www-authenticate", value.encode())]


def answer(refusal: Refused) -> tuple[int, type, str, list[tuple[bytes, bytes]]]:
    return refusal.status, type(refusal.error), refusal.error.message, refusal.headers


async def refusal(door: admission.Door, *headers: tuple[bytes, bytes], user: Any = None) -> Refused:
    with pytest.raises(Refused) as refused:
        await admit(connection(*headers, user=user), door)
    return refused.value


@pytest.fixture
def database_lost(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Credentials that are not remembered meet a database connection the server ended; who asked, in order."""
    asked: list[str] = []

    def authenticate_anew(request: Any) -> Any:
        asked.append("credentials")
        raise lost_connection()

    monkeypatch.setattr(admission, "authenticate_anew", authenticate_anew)
    return asked


def allowance(settings: Any, connections: int) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CONNECTIONS_PER_USER": connections}


# The step itself -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("door", [HANDSHAKE, REQUEST], ids=["handshake", "request"])
async def test_a_valid_token_is_admitted_as_its_user_and_credential(door, user, token):
    admitted = await admit(connection(HOST, bearer(token)), door)

    stored = await db_call(AccessToken.objects.get)
    assert (admitted.user.pk, admitted.token.pk) == (user.pk, stored.pk)


@pytest.mark.parametrize("door", [HANDSHAKE, REQUEST], ids=["handshake", "request"])
async def test_a_foreign_origin_is_refused_403_without_a_challenge(door, token):
    refused = await refusal(door, HOST, bearer(token), FOREIGN_ORIGIN)

    assert answer(refused) == (403, InvalidRequest, "Invalid Origin header", [])


@pytest.mark.parametrize(("door", "status"), [(HANDSHAKE, 403), (REQUEST, 421)], ids=["handshake", "request"])
async def test_a_foreign_host_is_refused_with_the_doors_status(door, status, token):
    refused = await refusal(door, FOREIGN_HOST, bearer(token))

    assert answer(refused) == (status, InvalidRequest, "Invalid Host header", [])


@pytest.mark.parametrize("door", [HANDSHAKE, REQUEST], ids=["handshake", "request"])
async def test_bad_credentials_are_refused_401_with_why_in_the_challenge(door):
    refused = await refusal(door, HOST, bearer("mcp_wrong"))

    assert answer(refused) == (401, InvalidRequest, BAD_TOKEN, www_authenticate(refused_token()))


async def test_a_lost_database_is_refused_503_with_retry_after_and_logged_once(database_lost, token, caplog):
    with caplog.at_level(logging.WARNING, logger="mcp_tools"):
        refused = await refusal(HANDSHAKE, HOST, bearer(token))

    assert answer(refused) == (503, DatabaseUnavailable, DatabaseUnavailable.default_message, RETRY_AFTER)
    assert [record.getMessage() for record in caplog.records] == [
        "Lost the database connection authenticating a WebSocket: terminating connection due to administrator command"
    ]


async def test_a_database_error_that_is_no_lost_connection_is_not_a_refusal(monkeypatch, token):
    def authenticate_anew(request: Any) -> Any:
        raise OperationalError("no such table: mcp_tools_accesstoken")

    monkeypatch.setattr(admission, "authenticate_anew", authenticate_anew)

    with pytest.raises(OperationalError):
        await admit(connection(HOST, bearer(token)), REQUEST)


@pytest.mark.parametrize("door", [HANDSHAKE, REQUEST], ids=["handshake", "request"])
async def test_a_caller_who_may_not_connect_is_refused_401_with_a_bare_challenge(door):
    refused = await refusal(door, HOST)

    assert answer(refused) == (401, InvalidRequest, "Authentication required", www_authenticate(challenge()))


async def test_an_inactive_session_user_may_not_connect(user):
    user.is_active = False

    refused = await refusal(HANDSHAKE, HOST, user=user)

    assert answer(refused) == (401, InvalidRequest, "Authentication required", www_authenticate(challenge()))


async def test_anonymous_callers_are_admitted_where_the_site_allows_them(settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "ALLOW_ANONYMOUS": True}

    admitted = await admit(connection(HOST), HANDSHAKE)

    assert (admitted.user.is_authenticated, admitted.token) == (False, None)


async def test_a_handshake_past_the_users_allowance_is_refused_429_and_a_request_only_when_it_streams(
    ws_connect: Connect, token, tools, settings
):
    allowance(settings, 1)
    _communicator, accepted, _ = await ws_connect(ws_headers(token))
    assert accepted

    refused = await refusal(HANDSHAKE, HOST, bearer(token))
    admitted = await admit(connection(HOST, bearer(token)), REQUEST)
    with pytest.raises(Refused) as stream_refused:
        ensure_room(admitted.user)

    message = "Too many open connections (at most 1 per user)"
    assert answer(refused) == answer(stream_refused.value) == (429, InvalidRequest, message, [])


async def test_the_steps_run_host_and_origin_then_prepare_then_credentials(database_lost, token):
    async def prepare() -> None:
        database_lost.append("prepare")

    with pytest.raises(Refused):
        await admit(connection(FOREIGN_HOST, bearer(token)), REQUEST, prepare=prepare)
    with pytest.raises(Refused):
        await admit(connection(HOST, bearer(token), FOREIGN_ORIGIN), REQUEST, prepare=prepare)
    assert database_lost == []

    with pytest.raises(Refused):
        await admit(connection(HOST, bearer(token)), REQUEST, prepare=prepare)
    assert database_lost == ["prepare", "credentials"]


def test_a_handshake_django_cannot_read_is_refused_400():
    with pytest.raises(Refused) as refused:
        handshake({"type": "websocket", "headers": [HOST, (b"content-type", b"text/plain; charset*=x''y")]})

    assert answer(refused.value) == (400, InvalidRequest, "Malformed request headers", [])


# The same answer through both transports ---------------------------------------------------------------------


@dataclass(frozen=True)
class Answer:
    status: int
    challenge: str | None
    retry_after: str | None
    body: Any


async def through_handshake(headers: list[tuple[bytes, bytes]]) -> Answer:
    start, body = await denial(headers)
    found = {name.decode(): value.decode() for name, value in start["headers"]}
    assert found["content-type"] == "application/json"
    return Answer(start["status"], found.get("www-authenticate"), found.get("retry-after"), json.loads(body["body"]))


async def through_request(headers: list[tuple[bytes, bytes]], method: str = "POST", client: Any = None) -> Answer:
    client = client or HttpClient()
    overrides = {name.decode(): value.decode() for name, value in headers}
    body = request(0, "initialize", initialize_params()) if method == "POST" else None
    reply = await client.send(body, method=method, headers=overrides)
    assert reply.headers["content-type"] == "application/json"
    return Answer(reply.status, reply.headers.get("www-authenticate"), reply.headers.get("retry-after"), reply.json())


def refused_with(code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


# Each refusal: the handshake's headers for a caller holding ``token``, and the answer both transports give.
REFUSALS = {
    "foreign-origin": (
        lambda token: [HOST, bearer(token), FOREIGN_ORIGIN],
        Answer(403, None, None, refused_with(INVALID_REQUEST, "Invalid Origin header")),
    ),
    "bad-credentials": (
        lambda token: [HOST, bearer("mcp_wrong")],
        Answer(401, refused_token(), None, refused_with(INVALID_REQUEST, BAD_TOKEN)),
    ),
    "may-not-connect": (
        lambda token: [HOST],
        Answer(401, challenge(), None, refused_with(INVALID_REQUEST, "Authentication required")),
    ),
}


@pytest.mark.parametrize(("headers_for", "expected"), REFUSALS.values(), ids=REFUSALS.keys())
async def test_both_transports_refuse_alike(headers_for, expected, token, tools):
    headers = headers_for(token)

    assert [await through_handshake(headers), await through_request(headers)] == [expected, expected]


async def test_both_transports_refuse_a_foreign_host_alike_but_for_the_status(token, tools):
    headers = [FOREIGN_HOST, bearer(token)]
    body = refused_with(INVALID_REQUEST, "Invalid Host header")

    assert [await through_handshake(headers), await through_request(headers)] == [
        Answer(403, None, None, body),
        Answer(421, None, None, body),
    ]


async def test_both_transports_answer_a_lost_database_503_with_retry_after(database_lost, token, tools):
    headers = [HOST, bearer(token)]
    expected = Answer(503, None, "5", refused_with(DATABASE_UNAVAILABLE, DatabaseUnavailable.default_message))

    assert [await through_handshake(headers), await through_request(headers)] == [expected, expected]
    assert database_lost == ["credentials", "credentials"]


async def test_both_transports_refuse_a_connection_past_the_allowance_alike(
    ws_connect: Connect, token, tools, settings
):
    allowance(settings, 1)
    _communicator, accepted, _ = await ws_connect(ws_headers(token))
    assert accepted
    http = HttpClient(token)
    await http.initialize()  # a request that opens no stream takes no place
    expected = Answer(429, None, None, refused_with(INVALID_REQUEST, "Too many open connections (at most 1 per user)"))

    answers = [await through_handshake([HOST, bearer(token)]), await through_request([], method="GET", client=http)]

    assert answers == [expected, expected]
