"""JWT access tokens (RFC 9068) of a company's own identity provider, checked by a live site without asking it.

The identity providers are ``tests.jwt_issuer`` issuers: their key sets and metadata served on loopback by
this test process, their tokens minted here. The live site trusts them (``OAUTH_JWT_ISSUERS``); the official
SDK presents the accepted tokens, httpx the refused ones, and each refusal is checked for its exact status
and ``WWW-Authenticate``. Each issuer whose fetches are counted serves one test only.
"""

from __future__ import annotations

import asyncio
import json
import time
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
from tests.jwt_issuer import IssuerHost, TestIssuer, issuer_host, new_key
from tests.live.asgi_http import ACCEPT_BOTH, modern_headers, modern_request
from tests.live.servers import ServerProcess
from tests.live.sites import Site, sqlite_switches
from tests.live.websocket_client import mcp_websocket, websocket_closed

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 10
USER = "alice"  # seeded by tests.live.seed
INACTIVE = "carol"
SHORT_LIFETIME = 3  # long enough to open a session, short enough that waiting for its end costs little
NOT_FOR_THIS_RESOURCE = "The access token was not issued for this resource."
NO_SCOPE = "The access token lacks a scope this server needs."
ENTRA_AUDIENCE = "api://mcp-tools"
ISSUERS = ("main", "discovered", "rotating", "hammered", "entra")


def mutate(site: Site, *args: str) -> Any:
    return json.loads(site.run("-m", "tests.live.mutate", *args).stdout)


@pytest.fixture(scope="module")
def host() -> Iterator[IssuerHost]:
    with issuer_host() as running:
        for name in ISSUERS:
            running.issuer(name)
        yield running


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory, host: IssuerHost) -> Site:
    workdir = tmp_path_factory.mktemp("jwt")
    issuers = host.issuers
    trusted = [
        issuers["main"].config(),
        {"ISSUER": issuers["discovered"].url},  # its key set is found through its RFC 8414 metadata
        issuers["rotating"].config(),
        issuers["hammered"].config(),
        # As Entra ID's v1 tokens: typ "JWT", an application ID URI as audience, the scopes in "scp".
        issuers["entra"].config(TOKEN_TYPES=["at+jwt", "JWT"], AUDIENCE=ENTRA_AUDIENCE),
    ]
    site = Site(workdir, {**sqlite_switches(workdir), "MCP_TEST_JWT_ISSUERS": json.dumps(trusted)})
    site.prepare()
    mutate(site, "user", INACTIVE)
    mutate(site, "deactivate", INACTIVE)
    return site


@pytest.fixture(scope="module")
def server(site: Site) -> Iterator[ServerProcess]:
    with site.serve("jwt") as (running,):
        yield running


@pytest.fixture
def main(host: IssuerHost) -> TestIssuer:
    return host.issuers["main"]


def resource(server: ServerProcess) -> str:
    return server.url("/mcp")


async def stateless(server: ServerProcess, token: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        return await http.post(
            server.url("/mcp"),
            json=modern_request(1, "tools/list", {}),
            headers={"Authorization": f"Bearer {token}", "Accept": ACCEPT_BOTH, **modern_headers("tools/list")},
        )


async def tool_names(client: Client) -> list[str]:
    names: list[str] = []
    cursor: str | None = None
    while True:
        page = await asyncio.wait_for(client.list_tools(cursor=cursor, cache_mode="bypass"), TIMEOUT)
        names.extend(tool.name for tool in page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return names


async def as_sdk(server: ServerProcess, token: str) -> tuple[list[str], Any]:
    """The SDK's tools/list and a whoami call with ``token``."""
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http, Client(streamable_http_client(server.url("/mcp"), http_client=http)) as client:
        names = await tool_names(client)
        called = await asyncio.wait_for(client.call_tool("whoami", {}), TIMEOUT)
    return names, called.structured_content


# Accepted -------------------------------------------------------------------------------------------


async def test_the_sdk_lists_and_calls_tools_as_the_user_the_jwt_names(
    server: ServerProcess, site: Site, main: TestIssuer
):
    token = main.mint(USER, resource(server))

    listed, whoami = await as_sdk(server, token)
    audited = await asyncio.to_thread(mutate, site, "last-call", "whoami")

    assert whoami == {"username": USER}
    assert audited == {"username": USER, "client": f"mcp-client ({main.url})", "token": None, "outcome": "ok"}
    assert "whoami" in listed
    assert listed == (await as_sdk(server, site.seeded.token))[0]  # the user's tools, as with their own token


async def test_a_jwt_whose_keys_are_found_through_the_issuers_metadata_is_accepted(
    server: ServerProcess, host: IssuerHost
):
    discovered = host.issuers["discovered"]

    _, whoami = await as_sdk(server, discovered.mint(USER, resource(server)))

    assert whoami == {"username": USER}
    assert host.count("/.well-known/oauth-authorization-server/discovered") == 1
    assert host.count("/discovered/jwks.json") == 1


async def test_an_issuer_allowed_to_send_typ_jwt_with_its_own_audience_and_scp_is_accepted(
    server: ServerProcess, site: Site, host: IssuerHost
):
    entra = host.issuers["entra"]
    token = entra.mint(
        USER, ENTRA_AUDIENCE, header={"typ": "JWT"}, scope=None, scp="mcp profile", client_id=None, azp="vscode"
    )

    _, whoami = await as_sdk(server, token)

    assert whoami == {"username": USER}
    audited = await asyncio.to_thread(mutate, site, "last-call", "whoami")
    assert audited["client"] == f"vscode ({entra.url})"


# Refused --------------------------------------------------------------------------------------------


def _refusals(issuer: TestIssuer, audience: str) -> dict[str, tuple[str, int, str]]:
    now = int(time.time())
    forged = new_key(kid=issuer.signer.get("kid"))  # the published kid, another key
    return {
        "wrong signature": (issuer.mint(USER, audience, key=forged), 401, refused_token()),
        "wrong issuer": (issuer.mint(USER, audience, iss="https://login.elsewhere.example"), 401, refused_token()),
        "wrong audience": (
            issuer.mint(USER, "http://elsewhere.example/mcp"),
            401,
            refused_token(NOT_FOR_THIS_RESOURCE),
        ),
        "expired": (issuer.mint(USER, audience, exp=now - 5), 401, refused_token()),
        "no expiry": (issuer.mint(USER, audience, exp=None), 401, refused_token()),
        "not yet valid": (issuer.mint(USER, audience, nbf=now + 3600), 401, refused_token()),
        "issued in the future": (issuer.mint(USER, audience, iat=now + 3600), 401, refused_token()),
        "missing scope": (issuer.mint(USER, audience, scope="profile"), 403, "scope"),
        "alg none": (issuer.unsigned(USER, audience), 401, refused_token()),
        "HS256 keyed with the public key": (issuer.hmac_with_public_key(USER, audience), 401, refused_token()),
        "typ JWT": (issuer.mint(USER, audience, header={"typ": "JWT"}), 401, refused_token()),
        "unknown user": (issuer.mint("nobody", audience), 401, refused_token()),
        "inactive user": (issuer.mint(INACTIVE, audience), 401, refused_token()),
    }


REFUSALS = (
    "wrong signature",
    "wrong issuer",
    "wrong audience",
    "expired",
    "no expiry",
    "not yet valid",
    "issued in the future",
    "missing scope",
    "alg none",
    "HS256 keyed with the public key",
    "typ JWT",
    "unknown user",
    "inactive user",
)


@pytest.mark.parametrize("case", REFUSALS)
async def test_a_jwt_that_must_not_serve_here_is_refused_with_its_challenge(
    server: ServerProcess, main: TestIssuer, case: str
):
    cases = _refusals(main, resource(server))
    assert tuple(cases) == REFUSALS
    token, status, expected = cases[case]
    if expected == "scope":
        expected = challenge("insufficient_scope", NO_SCOPE, origin=server.base_url, scope="mcp")
    else:
        expected = expected.replace("http://testserver", server.base_url)

    refused = await stateless(server, token)

    assert (refused.status_code, refused.headers["www-authenticate"]) == (status, expected)


async def test_an_unknown_kid_fetches_the_key_set_again_at_most_once_per_interval(
    server: ServerProcess, host: IssuerHost
):
    hammered = host.issuers["hammered"]
    assert (await stateless(server, hammered.mint(USER, resource(server)))).status_code == 200
    assert host.count("/hammered/jwks.json") == 1

    answers = []
    for attempt in range(3):
        made_up = new_key(kid=f"made-up-{attempt}")
        answers.append((await stateless(server, hammered.mint(USER, resource(server), key=made_up))).status_code)

    assert answers == [401, 401, 401]
    assert host.count("/hammered/jwks.json") == 2


async def test_a_key_rotated_in_is_accepted_after_one_fetch_of_the_key_set(server: ServerProcess, host: IssuerHost):
    rotating = host.issuers["rotating"]
    old = rotating.mint(USER, resource(server))
    assert (await stateless(server, old)).status_code == 200

    rotating.rotate()
    new = rotating.mint(USER, resource(server))

    assert (await stateless(server, new)).status_code == 200
    assert (await stateless(server, old)).status_code == 200  # the old key is still published
    assert host.count("/rotating/jwks.json") == 2


# Sessions -------------------------------------------------------------------------------------------


async def test_a_session_opened_with_a_jwt_ends_when_the_jwt_expires(server: ServerProcess, main: TestIssuer):
    token = main.mint(USER, resource(server), exp=int(time.time()) + SHORT_LIFETIME)

    async with mcp_websocket(server.ws_url(), token) as ws:
        await ws.initialize()
        assert (await ws.request("tools/call", {"name": "whoami"}))["result"]["structuredContent"] == {"username": USER}
        assert await websocket_closed(ws, TIMEOUT) == (CLOSE_UNAUTHENTICATED, TOKEN_EXPIRED)

    refused = await stateless(server, token)
    assert (refused.status_code, refused.headers["www-authenticate"]) == (
        401,
        refused_token(origin=server.base_url),
    )


async def test_a_recheck_of_every_credential_leaves_a_jwt_session_open(
    server: ServerProcess, site: Site, main: TestIssuer
):
    site_token = await asyncio.to_thread(mutate, site, "issue", USER)

    async with (
        mcp_websocket(server.ws_url(), main.mint(USER, resource(server))) as with_jwt,
        mcp_websocket(server.ws_url(), site_token) as with_site_token,
    ):
        await with_jwt.initialize()
        await with_site_token.initialize()
        # Revoked in another process, the site token is found gone when this server re-reads every
        # credential its sessions hold; the JWT session is re-read in the same pass.
        await asyncio.to_thread(mutate, site, "revoke", site_token)
        assert await websocket_closed(with_site_token, TIMEOUT) == (CLOSE_UNAUTHENTICATED, TOKEN_REVOKED)

        answer = await with_jwt.request("tools/call", {"name": "whoami"})

    assert answer["result"]["structuredContent"] == {"username": USER}
