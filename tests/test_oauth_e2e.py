"""OAuth end to end: the official Python SDK's OAuth client against uvicorn serving a site that is its own
authorization server (django-oauth-toolkit with mcp_tools.oauth).

The client starts with nothing but the MCP URL. Its first request is refused 401; it discovers the
protected-resource metadata the challenge points at, then the authorization server's metadata, registers
(DCR, or CIMD with a metadata document the site fetches through tests/cimd.py), sends the signed-in user
through the consent page with PKCE, exchanges the code for a token bound to the MCP endpoint (RFC 8707),
and from then on is that user: same tools, same audit trail (naming the OAuth client), refreshed when the
token expires, cut off when it is revoked.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcp_tools.access.credentials import TOKEN_EXPIRED, TOKEN_REVOKED
from mcp_tools.transports.websocket import CLOSE_UNAUTHENTICATED
from tests.challenges import challenge, refused_token
from tests.cimd import write_documents
from tests.live.asgi_http import ACCEPT_BOTH, modern_headers, modern_request
from tests.live.servers import ServerProcess
from tests.live.sites import Site, sqlite_switches
from tests.live.websocket_client import mcp_websocket, websocket_closed
from tests.oauth_clients import (
    REDIRECT_URI,
    SCOPE,
    Browser,
    OAuthSession,
    cimd_document,
    oauth_client,
    redirect_parameters,
)

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 10
CIMD_CLIENT = "https://client.example/clients/mcp.json"
CIMD_NAME = "Client with a metadata document"
DCR_NAME = "Dynamically registered client"
PASSWORD = "alice"  # tests.live.seed gives each user their name as password
OTHER_USER = "bob"
RESTRICTED_TOOL = "multiply"  # granted to bob only on these sites
# Long enough for the client's first requests, short enough that waiting for expiry costs little.
SHORT_LIFETIME = 3


def oauth_site(workdir: Any, **switches: str) -> Site:
    """A seeded site whose CIMD fetcher reads the test's documents; ``multiply`` is bob's alone."""
    documents = workdir / "cimd-documents.json"
    write_documents(documents, {CIMD_CLIENT: cimd_document(CIMD_CLIENT, CIMD_NAME)})
    site = Site(workdir, {**sqlite_switches(workdir), "MCP_TEST_CIMD_DOCUMENTS": str(documents), **switches})
    site.prepare()
    mutate(site, "user", OTHER_USER)
    mutate(site, "restrict", RESTRICTED_TOOL, OTHER_USER)
    return site


def mutate(site: Site, *args: str) -> Any:
    return json.loads(site.run("-m", "tests.live.mutate", *args).stdout)


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    return oauth_site(tmp_path_factory.mktemp("oauth"))


@pytest.fixture(scope="module")
def server(site: Site) -> Iterator[ServerProcess]:
    with site.serve("oauth") as (server,):
        yield server


@pytest.fixture
async def browser(server: ServerProcess, site: Site) -> Any:
    async with Browser(server.base_url) as signed_in:
        await signed_in.login(site.seeded.user, PASSWORD)
        yield signed_in


async def tool_names(client: Client) -> list[str]:
    names: list[str] = []
    cursor: str | None = None
    while True:
        page = await asyncio.wait_for(client.list_tools(cursor=cursor, cache_mode="bypass"), TIMEOUT)
        names.extend(tool.name for tool in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return names


async def site_token_tool_names(server: ServerProcess, token: str) -> list[str]:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http, Client(streamable_http_client(server.url("/mcp"), http_client=http)) as client:
        return await tool_names(client)


async def stateless(server: ServerProcess, token: str, method: str = "tools/list") -> httpx.Response:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        return await http.post(
            server.url("/mcp"),
            json=modern_request(1, method, {}),
            headers={"Authorization": f"Bearer {token}", "Accept": ACCEPT_BOTH, **modern_headers(method)},
        )


def flow(session: OAuthSession, server: ServerProcess) -> list[str]:
    """Every exchange of the client with the server, in order, with the server's origin left out."""
    assert all(exchange.split()[1].startswith(server.base_url + "/") for exchange in session.exchanges)
    return [exchange.replace(server.base_url, "", 1) for exchange in session.exchanges]


@pytest.mark.parametrize("registration", ["dcr", "cimd"])
async def test_the_sdk_discovers_registers_and_is_authorized_as_the_signed_in_user(
    server: ServerProcess, site: Site, browser: Browser, registration: str
):
    cimd = registration == "cimd"
    async with oauth_client(
        server.url("/mcp"), browser, name=DCR_NAME, client_metadata_url=CIMD_CLIENT if cimd else None
    ) as session:
        listed = await tool_names(session.client)
        called = await asyncio.wait_for(session.client.call_tool("whoami", {}), TIMEOUT)

    # Discovery from the 401, registration, consent, token; then the request again, with the token.
    steps = flow(session, server)
    assert steps[: steps.index("POST /mcp bearer -> 200") + 1] == [
        "POST /mcp -> 401",
        "GET /.well-known/oauth-protected-resource/mcp -> 200",
        "GET /.well-known/oauth-authorization-server -> 200",
        *([] if cimd else ["POST /oauth/register/ -> 201"]),
        "POST /oauth/token/ -> 200",
        "POST /mcp bearer -> 200",
    ]
    assert all(step.startswith("POST /mcp bearer") for step in steps[steps.index("POST /mcp bearer -> 200") :])
    assert session.storage.client is not None
    client_id = session.storage.client.client_id
    assert (client_id == CIMD_CLIENT) is cimd
    [authorization_url] = session.user.authorization_urls
    assert authorization_url.startswith(server.url("/oauth/authorize/?"))
    asked = redirect_parameters(authorization_url)
    assert {name: asked[name] for name in ("response_type", "client_id", "code_challenge_method", "resource")} == {
        "response_type": "code",
        "client_id": client_id,
        "code_challenge_method": "S256",
        "resource": server.url("/mcp"),
    }
    assert asked["scope"] == SCOPE and asked["redirect_uri"] == REDIRECT_URI
    [token] = session.storage.tokens
    assert (token.token_type, token.scope, token.expires_in) == ("Bearer", SCOPE, 3600)
    assert token.refresh_token

    # The token is the signed-in user's: their tools exactly, their name, and the audit names the client.
    assert listed == await site_token_tool_names(server, site.seeded.token)
    assert RESTRICTED_TOOL not in listed and "whoami" in listed
    assert called.structured_content == {"username": site.seeded.user}
    audited = await asyncio.to_thread(mutate, site, "last-call", "whoami")
    name = CIMD_NAME if cimd else DCR_NAME
    assert audited == {"username": site.seeded.user, "client": f"{name} ({client_id})", "token": None, "outcome": "ok"}


async def test_revoking_the_token_refuses_its_next_request_and_closes_its_websocket(
    server: ServerProcess, site: Site, browser: Browser
):
    async with oauth_client(server.url("/mcp"), browser) as session:
        assert "whoami" in await tool_names(session.client)
        [token] = session.storage.tokens
        assert session.storage.client is not None
        async with mcp_websocket(server.ws_url(), token.access_token) as ws:
            await ws.initialize()
            assert (await ws.request("tools/call", {"name": "whoami"}))["result"]["structuredContent"] == {
                "username": site.seeded.user
            }
            async with httpx.AsyncClient(timeout=TIMEOUT) as http:
                revoked = await http.post(
                    server.url("/oauth/revoke_token/"),
                    data={"token": token.access_token, "client_id": session.storage.client.client_id},
                )
            assert revoked.status_code == 200, revoked.text

            assert await websocket_closed(ws, TIMEOUT) == (CLOSE_UNAUTHENTICATED, TOKEN_REVOKED)

        refused = await stateless(server, token.access_token)
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"] == refused_token(origin=server.base_url)

        # The client learns from the 401 that it must be authorized again, and the user consents again.
        assert "whoami" in await tool_names(session.client)
        assert len(session.user.authorization_urls) == 2
        assert session.storage.tokens[-1].access_token != token.access_token


@pytest.fixture(scope="module")
def short_lived_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Site, ServerProcess]]:
    site = oauth_site(tmp_path_factory.mktemp("oauth-short"), MCP_TEST_OAUTH_ACCESS_TOKEN_SECONDS=str(SHORT_LIFETIME))
    with site.serve("oauth-short") as (server,):
        yield site, server


async def test_an_expired_access_token_is_refreshed_and_the_refresh_token_rotates(short_lived_server):
    site, server = short_lived_server
    async with Browser(server.base_url) as browser:
        await browser.login(site.seeded.user, PASSWORD)
        async with oauth_client(server.url("/mcp"), browser) as session:
            before = await tool_names(session.client)
            [first] = session.storage.tokens
            assert first.expires_in == SHORT_LIFETIME
            # The client dates the token's expiry from when it received it, the server from when it made it
            # (a moment earlier): move the server's past the client's, so that once the server holds it
            # expired the client does too, and refreshes rather than being refused. A WebSocket opened with
            # the token then closes the moment the server's expiry passes: the event both clocks agree on.
            await asyncio.to_thread(mutate, site, "oauth-expires-in", first.access_token, str(SHORT_LIFETIME))
            async with mcp_websocket(server.ws_url(), first.access_token) as ws:
                await ws.initialize()
                assert await websocket_closed(ws, TIMEOUT) == (CLOSE_UNAUTHENTICATED, TOKEN_EXPIRED)
            expired = await stateless(server, first.access_token)
            assert expired.status_code == 401
            assert expired.headers["www-authenticate"] == refused_token(origin=server.base_url)

            after = await tool_names(session.client)

    assert after == before
    assert len(session.user.authorization_urls) == 1  # refreshed, not authorized again
    [_, second] = session.storage.tokens
    assert second.refresh_token and second.refresh_token != first.refresh_token
    assert second.access_token != first.access_token
    assert flow(session, server).count("POST /oauth/token/ -> 200") == 2
    # The refresh token that was rotated away is spent.
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        assert session.storage.client is not None
        reused = await http.post(
            server.url("/oauth/token/"),
            data={
                "grant_type": "refresh_token",
                "refresh_token": first.refresh_token,
                "client_id": session.storage.client.client_id,
            },
        )
    assert (reused.status_code, reused.json()["error"]) == (400, "invalid_grant")


async def test_the_first_refusal_points_at_the_metadata(server: ServerProcess):
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        refused = await http.post(
            server.url("/mcp"),
            json=modern_request(1, "tools/list", {}),
            headers={"Accept": ACCEPT_BOTH, **modern_headers("tools/list")},
        )
    assert refused.status_code == 401
    assert refused.headers["www-authenticate"] == challenge(origin=server.base_url)
