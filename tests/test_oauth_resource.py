"""The MCP endpoint as an OAuth protected resource: which access tokens it takes, how it refuses the others,
and the discovery documents that tell clients where to get one.

Tokens are django-oauth-toolkit rows made directly, as its token endpoint would issue them. Every refusal is
checked for its exact status and ``WWW-Authenticate`` challenge on the three doors a token can knock on:
a legacy HTTP request, a 2026-07-28 HTTP request and the WebSocket handshake.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.test import Client
from rest_framework.authentication import BaseAuthentication

from mcp_tools.oauth.tokens import NOT_FOR_THIS_RESOURCE
from tests.challenges import challenge, refused_token
from tests.db import db_call
from tests.doors import Answer, every_door, host_refusal, websocket
from tests.live.asgi_http import HttpClient, modern_headers, modern_request
from tests.oauth import application
from tests.oauth_clients import SCOPE, access_token, refresh_token
from tests.websocket import HOST, WSClient, whoami, ws_headers

pytestmark = pytest.mark.django_db(transaction=True)

RESOURCE = "http://testserver/mcp"
INVALID = "The access token is invalid or expired."
NO_SCOPE = "The access token lacks a scope this server needs."
REQUIRED = "Authentication required"
JSON = "application/json"


# Doors --------------------------------------------------------------------------------------------


Door = Callable[..., Awaitable[Answer]]


@pytest.fixture(params=every_door())
def door(request: pytest.FixtureRequest) -> Door:
    return request.param  # type: ignore[no-any-return]


def bearer(raw: str) -> str:
    return f"Bearer {raw}"


# Tokens -------------------------------------------------------------------------------------------


@pytest.fixture
def alice(user: Any, tools: None) -> Any:
    return user


async def oauth_token(user: Any, **options: Any) -> str:
    options.setdefault("resource", [RESOURCE])
    return str(await db_call(access_token, user, **options))


# Accepted -----------------------------------------------------------------------------------------


async def test_a_token_issued_for_this_resource_with_its_scope_is_accepted_everywhere(alice, door):
    raw = await oauth_token(alice)

    answer = await door(bearer(raw))

    assert (answer.status, answer.challenge) == (101 if door is websocket else 200, None)


async def test_the_websocket_session_of_an_oauth_token_is_its_users(alice, ws_connect):
    raw = await oauth_token(alice)

    communicator, accepted, _ = await ws_connect(ws_headers(raw))

    assert accepted
    assert await whoami(communicator) == {"username": "alice"}


async def test_a_resource_indicator_differing_only_in_case_and_trailing_slash_is_this_resource(alice, door):
    raw = await oauth_token(alice, resource=["HTTP://TestServer/mcp/"])

    answer = await door(bearer(raw))

    assert answer.status == (101 if door is websocket else 200)


# Refused ------------------------------------------------------------------------------------------


async def test_no_token_is_401_pointing_at_the_metadata(alice, door):
    answer = await door(None)

    assert (answer.status, answer.challenge, answer.message) == (401, challenge(), REQUIRED)


async def test_an_expired_token_is_401_invalid_token(alice, door):
    raw = await oauth_token(alice, expires_in=-timedelta(seconds=1))

    answer = await door(bearer(raw))

    assert (answer.status, answer.challenge, answer.message) == (401, refused_token(), INVALID)


@pytest.mark.parametrize(
    "resource",
    [["https://other.example/mcp"], ["http://testserver/other"], ["http://testserver"], ["http://testserver/mcp/x"]],
    ids=["other-host", "other-path", "whole-origin", "below"],
)
async def test_a_token_for_another_audience_is_401_not_for_this_resource(alice, door, resource):
    raw = await oauth_token(alice, resource=resource)

    answer = await door(bearer(raw))

    expected = refused_token(NOT_FOR_THIS_RESOURCE)
    assert (answer.status, answer.challenge, answer.message) == (401, expected, NOT_FOR_THIS_RESOURCE)


async def test_a_token_issued_without_a_resource_indicator_is_401_not_for_this_resource(alice, door):
    raw = await oauth_token(alice, resource=None)

    answer = await door(bearer(raw))

    expected = refused_token(NOT_FOR_THIS_RESOURCE)
    assert (answer.status, answer.challenge, answer.message) == (401, expected, NOT_FOR_THIS_RESOURCE)


async def test_a_token_for_this_path_on_another_allowed_host_is_401_not_for_this_resource(alice, door):
    # 127.0.0.1 is in ALLOWED_HOSTS, but the token names http://testserver/mcp: the audience is the origin too.
    raw = await oauth_token(alice)

    answer = await door(bearer(raw), host="127.0.0.1")

    expected = refused_token(NOT_FOR_THIS_RESOURCE, origin="http://127.0.0.1")
    assert (answer.status, answer.challenge, answer.message) == (401, expected, NOT_FOR_THIS_RESOURCE)


@pytest.mark.parametrize("scope", ["read write", ""], ids=["other-scopes", "no-scope"])
async def test_a_token_without_the_mcp_scope_is_403_insufficient_scope(alice, door, scope):
    raw = await oauth_token(alice, scope=scope)

    answer = await door(bearer(raw))

    expected = challenge("insufficient_scope", NO_SCOPE, scope=SCOPE)
    assert (answer.status, answer.challenge, answer.message) == (403, expected, NO_SCOPE)


async def test_a_token_with_more_scopes_than_mcp_is_accepted(alice, door):
    raw = await oauth_token(alice, scope="read mcp write")

    answer = await door(bearer(raw))

    assert answer.status == (101 if door is websocket else 200)


async def test_the_token_of_an_inactive_user_is_401(alice, door):
    raw = await oauth_token(alice)
    alice.is_active = False
    await db_call(alice.save)

    answer = await door(bearer(raw))

    assert (answer.status, answer.challenge, answer.message) == (401, refused_token(), INVALID)


async def test_a_client_credentials_token_without_a_user_is_401(alice, door):
    app = await db_call(application, "Machine", grant="client-credentials")
    raw = await db_call(access_token, None, resource=[RESOURCE], app=app)

    answer = await door(bearer(raw))

    assert (answer.status, answer.challenge, answer.message) == (401, refused_token(), INVALID)


async def test_a_refresh_token_presented_as_an_access_token_is_401(alice, door):
    raw = await db_call(refresh_token, alice, resource=[RESOURCE])

    answer = await door(bearer(raw))

    assert (answer.status, answer.challenge, answer.message) == (401, refused_token(), INVALID)


async def test_an_unknown_token_is_401(alice, door):
    answer = await door(bearer("not-a-token-anyone-issued"))

    assert (answer.status, answer.challenge, answer.message) == (401, refused_token(), INVALID)


async def test_a_deleted_token_is_401(alice, door):
    from oauth2_provider.models import get_access_token_model

    raw = await oauth_token(alice)
    await db_call(lambda: get_access_token_model().objects.all().delete())

    answer = await door(bearer(raw))

    assert (answer.status, answer.challenge, answer.message) == (401, refused_token(), INVALID)


async def test_a_spoofed_host_is_refused_before_any_token_is_read_and_no_url_is_built_from_it(alice, door):
    raw = await oauth_token(alice, resource=["http://evil.example/mcp"])

    answer = await door(bearer(raw), host="evil.example")

    # HTTP: 421 Misdirected Request (Django's handlers: 400); the handshake: 403. None names a metadata URL.
    assert (answer.status, answer.message) == host_refusal(door)
    assert answer.challenge is None


async def test_with_resource_url_set_tokens_must_name_it_and_challenges_point_at_its_metadata(alice, door, settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "RESOURCE_URL": "https://mcp.example.com/mcp"}
    for_the_request_origin = await oauth_token(alice)
    for_the_configured_url = await oauth_token(alice, resource=["https://mcp.example.com/mcp"])

    refused = await door(bearer(for_the_request_origin))
    accepted = await door(bearer(for_the_configured_url))

    expected = refused_token(NOT_FOR_THIS_RESOURCE, origin="https://mcp.example.com")
    assert (refused.status, refused.challenge) == (401, expected)
    assert accepted.status == (101 if door is websocket else 200)


# A site with DRF authentication classes -----------------------------------------------------------


class DRFBearerAuthentication(BaseAuthentication):
    """A site's own bearer scheme: ``Authorization: Bearer drf-<username>``."""

    def authenticate(self, request: Any) -> tuple[Any, None] | None:
        scheme, _, credentials = request.headers.get("Authorization", "").partition(" ")
        if scheme != "Bearer" or not credentials.startswith("drf-"):
            return None
        return get_user_model().objects.get(username=credentials.removeprefix("drf-")), None


@pytest.fixture
def drf_bearer(settings: Any) -> None:
    settings.MCP_TOOLS = {
        **settings.MCP_TOOLS,
        "AUTHENTICATION_CLASSES": ["tests.test_oauth_resource.DRFBearerAuthentication"],
    }


async def test_with_drf_classes_a_bearer_token_oauth_does_not_know_reaches_them(alice, drf_bearer, ws_connect):
    communicator, accepted, _ = await ws_connect([HOST, (b"authorization", b"Bearer drf-alice")])

    assert accepted
    assert await whoami(communicator) == {"username": "alice"}


async def test_with_drf_classes_an_oauth_token_still_works(alice, drf_bearer, ws_connect):
    raw = await oauth_token(alice)

    communicator, accepted, _ = await ws_connect(ws_headers(raw))

    assert accepted
    assert await whoami(communicator) == {"username": "alice"}


async def test_with_drf_classes_an_oauth_token_for_another_resource_is_not_handed_to_them(alice, drf_bearer, door):
    raw = await oauth_token(alice, resource=["https://other.example/mcp"])

    answer = await door(bearer(raw))

    assert (answer.status, answer.challenge) == (401, refused_token(NOT_FOR_THIS_RESOURCE))


async def test_with_drf_classes_a_bearer_token_nobody_knows_is_401(alice, drf_bearer, door):
    answer = await door(bearer("unknown"))

    assert (answer.status, answer.challenge) == (401, refused_token("The credentials were not accepted."))


# The token's session on the wire ------------------------------------------------------------------


async def test_a_modern_request_with_an_oauth_token_calls_as_its_user(alice):
    raw = await oauth_token(alice)

    reply = await HttpClient(token=raw).send(
        modern_request(1, "tools/call", {"name": "whoami"}), headers={**modern_headers("tools/call", "whoami")}
    )

    assert reply.status == 200
    assert reply.json()["result"]["structuredContent"] == {"username": "alice"}


async def test_a_call_made_with_an_oauth_token_is_audited_with_its_client_and_no_site_token(alice, ws_connect):
    from mcp_tools.models import ToolCall

    app = await db_call(application, "Desktop client")
    raw = await oauth_token(alice, app=app)
    communicator, accepted, _ = await ws_connect(ws_headers(raw))
    assert accepted
    client = WSClient(communicator)
    await client.initialize()

    reply = await client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})

    assert reply["result"]["structuredContent"] == {"result": 3}
    call = await db_call(ToolCall.objects.get, tool_name="add")
    assert (call.username, call.client, call.token_id, call.outcome) == (
        "alice",
        f"Desktop client ({app.client_id})",
        None,
        ToolCall.Outcome.OK,
    )


# Discovery documents ------------------------------------------------------------------------------

CORS = {
    "Access-Control-Allow-Origin": "*",
    "Access-Control-Allow-Methods": "GET, OPTIONS",
    "Access-Control-Allow-Headers": "Authorization, Content-Type, MCP-Protocol-Version",
    "Access-Control-Max-Age": "86400",
}
PROTECTED_RESOURCE = {
    "resource": "http://testserver/mcp",
    "authorization_servers": ["http://testserver"],
    "scopes_supported": ["mcp"],
    "bearer_methods_supported": ["header"],
    "resource_name": "django-mcp-tools",
}
# No client may introspect by default (OAUTH_INTROSPECTION_CLIENTS), so no introspection endpoint is advertised.
AUTHORIZATION_SERVER = {
    "issuer": "http://testserver",
    "authorization_endpoint": "http://testserver/oauth/authorize/",
    "token_endpoint": "http://testserver/oauth/token/",
    "revocation_endpoint": "http://testserver/oauth/revoke_token/",
    "registration_endpoint": "http://testserver/oauth/register/",
    "response_types_supported": ["code"],
    "grant_types_supported": ["authorization_code", "refresh_token"],
    "scopes_supported": ["mcp"],
    "code_challenge_methods_supported": ["S256"],
    "client_id_metadata_document_supported": True,
    "token_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
    "revocation_endpoint_auth_methods_supported": ["none", "client_secret_post", "client_secret_basic"],
    "authorization_response_iss_parameter_supported": True,
}


def headers_of(response: Any, names: dict[str, str]) -> dict[str, str | None]:
    return {name: response.headers.get(name) for name in names}


@pytest.mark.parametrize(
    ("path", "document"),
    [
        ("/.well-known/oauth-protected-resource/mcp", PROTECTED_RESOURCE),
        ("/.well-known/oauth-protected-resource", PROTECTED_RESOURCE),
        ("/.well-known/oauth-authorization-server", AUTHORIZATION_SERVER),
    ],
    ids=["protected-resource-for-mcp", "protected-resource", "authorization-server"],
)
def test_a_discovery_document_is_exact_and_readable_from_any_origin(client, path, document):
    response = client.get(path, HTTP_ORIGIN="https://app.example")

    assert (response.status_code, response["Content-Type"]) == (200, JSON)
    assert response.json() == document
    assert headers_of(response, CORS) == CORS


@pytest.mark.parametrize(
    "path",
    [
        "/.well-known/oauth-protected-resource/mcp",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-authorization-server",
    ],
)
def test_a_discovery_document_answers_a_cors_preflight(client, path):
    response = client.options(
        path,
        HTTP_ORIGIN="https://app.example",
        HTTP_ACCESS_CONTROL_REQUEST_METHOD="GET",
        HTTP_ACCESS_CONTROL_REQUEST_HEADERS="mcp-protocol-version",
    )

    assert (response.status_code, response.content) == (204, b"")
    assert headers_of(response, CORS) == CORS


@pytest.mark.parametrize(
    "path", ["/.well-known/oauth-protected-resource/other", "/.well-known/oauth-protected-resource/mcp/x"]
)
def test_metadata_for_another_resource_path_is_404(client, path):
    assert client.get(path).status_code == 404


def test_discovery_documents_refuse_writes(client):
    response = client.post("/.well-known/oauth-protected-resource/mcp")

    assert (response.status_code, response["Allow"]) == (405, "GET, OPTIONS")


def test_no_metadata_is_built_from_a_host_outside_allowed_hosts(client):
    response = client.get("/.well-known/oauth-protected-resource/mcp", HTTP_HOST="evil.example")

    assert response.status_code == 400
    assert b"evil.example" not in response.content


def test_the_metadata_names_the_resource_url_when_it_is_set(client, settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "RESOURCE_URL": "https://mcp.example.com/mcp"}

    assert client.get("/.well-known/oauth-protected-resource/mcp").json()["resource"] == "https://mcp.example.com/mcp"


@pytest.mark.parametrize("path", ["/oauth/token/", "/oauth/revoke_token/", "/oauth/register/"])
def test_the_endpoints_a_browser_client_calls_before_it_holds_a_token_allow_any_origin(path):
    # CSRF enforced, as outside tests: these endpoints take no cookies, so it must not refuse them.
    client = Client(enforce_csrf_checks=True)
    preflight = client.options(path, HTTP_ORIGIN="https://app.example", HTTP_ACCESS_CONTROL_REQUEST_METHOD="POST")
    refused = client.post(path, data={}, HTTP_ORIGIN="https://app.example")

    expected = {**CORS, "Access-Control-Allow-Methods": "POST, OPTIONS"}
    assert (preflight.status_code, headers_of(preflight, expected)) == (204, expected)
    # An answer the browser may read, errors included, and never one that carries cookies' authority.
    assert refused.status_code in (400, 401)
    assert refused["Access-Control-Allow-Origin"] == "*"
    assert not refused.has_header("Access-Control-Allow-Credentials")


def test_the_consent_page_is_not_readable_cross_origin(client):
    response = client.get("/oauth/authorize/", HTTP_ORIGIN="https://app.example")

    assert not response.has_header("Access-Control-Allow-Origin")
