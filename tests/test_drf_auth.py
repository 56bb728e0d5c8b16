"""DRF authentication classes: a site's own DRF tokens open MCP sessions next to MCP bearer tokens."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core.handlers.asgi import ASGIRequest
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication
from rest_framework.authtoken.models import Token

from mcp_tools.exceptions import INVALID_REQUEST
from mcp_tools.models import ToolCall
from tests.challenges import refused_token
from tests.db import db_call
from tests.live.asgi_http import Headers, HttpClient, modern_headers, modern_request, request
from tests.messages import rpc_error
from tests.websocket import HOST, WSClient, denial, login_cookie, whoami, ws_headers

pytestmark = pytest.mark.django_db(transaction=True)

DRF_TOKEN_AUTHENTICATION = "rest_framework.authentication.TokenAuthentication"
SIGNED_BODY_AUTHENTICATION = "tests.test_drf_auth.SignedBodyAuthentication"
BAD_SCHEME = "Use 'Authorization: Bearer <token>'."


@pytest.fixture
def drf(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTHENTICATION_CLASSES": [DRF_TOKEN_AUTHENTICATION]}


@pytest.fixture
def drf_key(user: Any) -> str:
    return str(Token.objects.create(user=user).key)


class SignedBodyAuthentication(BaseAuthentication):
    """``Authorization: Signed alice`` with ``X-Signature`` the SHA-256 of the body; records each request it saw."""

    seen: list[tuple[type, str, str, bytes, str]] = []

    def authenticate(self, request: Any) -> tuple[Any, None] | None:
        scheme, _, username = request.headers.get("Authorization", "").partition(" ")
        if scheme != "Signed":
            return None
        body = request.body
        self.seen.append((type(request._request), request.method, request.path, body, request.META["HTTP_HOST"]))
        if request.headers.get("X-Signature") != hashlib.sha256(body).hexdigest():
            raise exceptions.AuthenticationFailed("The signature does not match the body.")
        return get_user_model().objects.get(username=username), None


@pytest.fixture
def signed(settings: Any) -> list[tuple[type, str, str, bytes, str]]:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "AUTHENTICATION_CLASSES": [SIGNED_BODY_AUTHENTICATION]}
    SignedBodyAuthentication.seen = []
    return SignedBodyAuthentication.seen


def authorization(value: str) -> tuple[bytes, bytes]:
    return (b"authorization", value.encode())


@dataclass
class DRFClient(HttpClient):
    """An HTTP client that sends its own Authorization header on every request."""

    authorization: str = ""

    def header_list(
        self,
        method: str,
        overrides: Headers | None,
        repeated: list[tuple[bytes, bytes]] | None = None,
        length: int = 0,
    ) -> list[tuple[bytes, bytes]]:
        headers = {"authorization": self.authorization, **(overrides or {})}
        return super().header_list(method, headers, repeated, length)


def http_error(message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}


async def http_whoami(client: HttpClient) -> Any:
    await client.initialize("2025-11-25")
    reply = await client.send(request(1, "tools/call", {"name": "whoami"}))
    return reply.json()["result"]["structuredContent"]


# Over the WebSocket ------------------------------------------------------------------------------


class TestWebSocket:
    async def test_a_drf_token_opens_a_session_as_its_user(self, ws_connect, tools, drf, drf_key):
        communicator, accepted, _ = await ws_connect([HOST, authorization(f"Token {drf_key}")])

        assert accepted
        assert await whoami(communicator) == {"username": "alice"}

    @pytest.mark.parametrize(
        ("value", "message"),
        [
            ("Token 0123456789abcdef0123456789abcdef01234567", "Invalid token."),
            ("Token", "Invalid token header. No credentials provided."),
            ("Token a b", "Invalid token header. Token string should not contain spaces."),
            ("Bearer not-one-of-ours", "The credentials were not accepted."),
            ("Bearer mcp_not-a-token-we-issued", "The access token is invalid or expired."),
        ],
        ids=["unknown-key", "no-key", "spaces", "foreign-bearer", "bad-mcp-token"],
    )
    async def test_bad_credentials_are_refused_with_401(self, tools, drf, value, message):
        start, body = await denial([HOST, authorization(value)])

        expected = (b"www-authenticate", refused_token(message).encode())
        assert (start["status"], start["headers"][-1], body["body"]) == (401, expected, rpc_error(message))

    async def test_a_drf_token_of_an_inactive_user_is_refused(self, tools, drf, drf_key, user):
        user.is_active = False
        await db_call(user.save)

        start, body = await denial([HOST, authorization(f"Token {drf_key}")])

        assert (start["status"], body["body"]) == (401, rpc_error("User inactive or deleted."))

    async def test_mcp_bearer_tokens_still_work(self, ws_connect, tools, drf, token):
        communicator, accepted, _ = await ws_connect(ws_headers(token))

        assert accepted
        assert await whoami(communicator) == {"username": "alice"}

    async def test_a_session_cookie_still_works(self, ws_connect, tools, drf, user):
        cookie = await db_call(login_cookie, user)

        communicator, accepted, _ = await ws_connect([HOST, cookie])

        assert accepted
        assert await whoami(communicator) == {"username": "alice"}

    async def test_without_the_setting_a_drf_token_is_refused(self, tools, drf_key):
        start, body = await denial([HOST, authorization(f"Token {drf_key}")])

        assert (start["status"], body["body"]) == (401, rpc_error(BAD_SCHEME))

    async def test_drf_classes_receive_django_s_request_for_the_handshake(self, ws_connect, tools, signed, user):
        empty = hashlib.sha256(b"").hexdigest().encode()
        headers = [HOST, authorization("Signed alice"), (b"x-signature", empty)]

        communicator, accepted, _ = await ws_connect(headers)

        assert (accepted, signed) == (True, [(ASGIRequest, "GET", "/mcp/ws", b"", "testserver")])
        assert await whoami(communicator) == {"username": "alice"}

    async def test_calls_are_audited_as_the_drf_user_without_an_mcp_token(self, ws_connect, tools, drf, drf_key, user):
        communicator, _accepted, _ = await ws_connect([HOST, authorization(f"Token {drf_key}")])
        client = WSClient(communicator)
        await client.initialize()

        await client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})

        recorded = await db_call(lambda: list(ToolCall.objects.values_list("user_id", "username", "token_id")))
        assert recorded == [(user.pk, "alice", None)]


# Over HTTP ---------------------------------------------------------------------------------------


class TestHTTP:
    async def test_a_drf_token_opens_a_legacy_session_as_its_user(self, tools, drf, drf_key):
        assert await http_whoami(DRFClient(authorization=f"Token {drf_key}")) == {"username": "alice"}

    async def test_a_drf_token_authenticates_a_stateless_request(self, tools, drf, drf_key):
        client = DRFClient(authorization=f"Token {drf_key}")

        reply = await client.send(
            modern_request(1, "tools/call", {"name": "whoami"}), headers=modern_headers("tools/call", "whoami")
        )

        assert reply.json()["result"]["structuredContent"] == {"username": "alice"}

    @pytest.mark.parametrize(
        ("value", "message"),
        [
            ("Token 0123456789abcdef0123456789abcdef01234567", "Invalid token."),
            ("Bearer not-one-of-ours", "The credentials were not accepted."),
            ("Bearer mcp_not-a-token-we-issued", "The access token is invalid or expired."),
        ],
        ids=["unknown-key", "foreign-bearer", "bad-mcp-token"],
    )
    async def test_bad_credentials_are_refused_with_401(self, tools, drf, value, message):
        reply = await DRFClient(authorization=value).send(request(0, "ping"))

        assert (reply.status, reply.headers["www-authenticate"]) == (401, refused_token(message))
        assert reply.json() == http_error(message)

    async def test_drf_classes_receive_django_s_request_with_its_body(self, tools, signed, user):
        body = json.dumps(modern_request(1, "tools/call", {"name": "whoami"})).encode()
        client = DRFClient(authorization="Signed alice")
        signature = {"x-signature": hashlib.sha256(body).hexdigest(), **modern_headers("tools/call", "whoami")}

        reply = await client.send(body, headers=signature)

        assert (reply.status, signed) == (200, [(ASGIRequest, "POST", "/mcp", body, "testserver")])
        assert reply.json()["result"]["structuredContent"] == {"username": "alice"}

    async def test_a_drf_class_that_rejects_the_body_refuses_the_request_with_401(self, tools, signed, user):
        client = DRFClient(authorization="Signed alice")

        reply = await client.send(request(1, "ping"), headers={"x-signature": "0" * 64})

        assert (reply.status, reply.json()) == (401, http_error("The signature does not match the body."))

    async def test_mcp_bearer_tokens_still_work(self, tools, drf, token):
        assert await http_whoami(HttpClient(token)) == {"username": "alice"}

    async def test_without_the_setting_a_drf_token_is_refused(self, tools, drf_key):
        reply = await DRFClient(authorization=f"Token {drf_key}").send(request(0, "ping"))

        assert (reply.status, reply.json()) == (401, http_error(BAD_SCHEME))

    async def test_a_legacy_session_belongs_to_its_user_whatever_the_credentials(
        self, tools, drf, drf_key, django_user_model
    ):
        bob = await db_call(django_user_model.objects.create_user, "bob", password="pw")
        bob_key = await db_call(lambda: Token.objects.create(user=bob).key)
        alice = DRFClient(authorization=f"Token {drf_key}")
        await alice.initialize("2025-11-25")
        intruder = DRFClient(authorization=f"Token {bob_key}", session_id=alice.session_id)
        intruder.protocol_version = alice.protocol_version

        reply = await intruder.send(request(1, "tools/call", {"name": "whoami"}))

        assert (reply.status, reply.json()) == (404, http_error("Session not found"))
