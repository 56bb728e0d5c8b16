"""An external authorization server: the resource server introspects tokens it does not know (RFC 7662).

The site's own authorization server, served by a live process with a database of its own, plays the
external one; this process is the resource server, with nothing of the token in its database.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from oauth2_provider.models import AccessToken

from mcp_tools.oauth.defaults import provider_settings
from tests.challenges import refused_token
from tests.db import db_call
from tests.live.asgi_http import HttpClient, modern_headers, modern_request
from tests.live.servers import ServerProcess
from tests.live.sites import Site, sqlite_switches
from tests.oauth import application
from tests.oauth_clients import access_token

pytest_plugins = ["tests.live.fixtures"]
pytestmark = [pytest.mark.live, pytest.mark.django_db(transaction=True)]

RESOURCE = "http://testserver/mcp"
INTROSPECTOR = "mcp-resource-server"


@pytest.fixture(scope="module")
def live_site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    """The external server's site: it lets the resource server below introspect its tokens."""
    workdir = tmp_path_factory.mktemp("external")
    site = Site(workdir, {**sqlite_switches(workdir), "MCP_TEST_OAUTH_INTROSPECTION_CLIENTS": INTROSPECTOR})
    site.prepare()
    return site


def mutate(site: Site, *args: str) -> Any:
    return json.loads(site.run("-m", "tests.live.mutate", *args).stdout)


@pytest.fixture
def external(live_site: Site, uvicorn_server: ServerProcess, settings: Any) -> str:
    """This process trusts the live server as its authorization server; returns that server's URL."""
    issuer = uvicorn_server.url("")
    client_id, secret = mutate(live_site, "introspector-oauth", "resource server", INTROSPECTOR)
    settings.OAUTH2_PROVIDER = provider_settings(
        OAUTH2_PROTECTED_RESOURCE_AUTHORIZATION_SERVERS=[issuer],
        RESOURCE_SERVER_INTROSPECTION_URL=f"{issuer}/oauth/introspect/",
        RESOURCE_SERVER_INTROSPECTION_CREDENTIALS=(client_id, secret),
    )
    return issuer


async def tools_list(token: str) -> Any:
    return await HttpClient().send(
        modern_request(1, "tools/list"),
        headers={"authorization": f"Bearer {token}", **modern_headers("tools/list")},
    )


async def test_a_token_of_the_external_server_serves_its_user_here(
    external: str, live_site: Site, tools: None, user: Any
) -> None:
    token = mutate(live_site, "issue-oauth", "alice", RESOURCE)

    reply = await tools_list(token)

    assert reply.status == 200
    assert "add" in {tool["name"] for tool in json.loads(reply.body)["result"]["tools"]}
    # Learnt by introspection: the answer is kept here, bound to its user and audience, without the token.
    cached = await db_call(
        lambda: list(AccessToken.objects.values_list("user__username", "application", "resource", "token"))
    )
    assert cached == [("alice", None, [RESOURCE], "")]


async def test_a_token_the_external_server_issued_for_another_resource_is_refused(
    external: str, live_site: Site, tools: None, user: Any
) -> None:
    token = mutate(live_site, "issue-oauth", "alice", "http://elsewhere.example/mcp")

    reply = await tools_list(token)

    assert (reply.status, reply.headers["www-authenticate"]) == (
        401,
        refused_token("The access token was not issued for this resource."),
    )


async def test_a_token_neither_server_knows_is_refused(external: str, tools: None, user: Any) -> None:
    reply = await tools_list("never-issued-anywhere")

    assert (reply.status, reply.headers["www-authenticate"]) == (401, refused_token())


async def test_the_protected_resource_metadata_names_the_external_server(external: str, client: Any) -> None:
    document = client.get("/.well-known/oauth-protected-resource/mcp").json()

    assert (document["resource"], document["authorization_servers"]) == (RESOURCE, [external])


async def test_a_token_this_site_issued_still_serves_beside_the_external_server(
    external: str, tools: None, user: Any
) -> None:
    local = await db_call(lambda: access_token(user, resource=[RESOURCE], app=application()))

    reply = await tools_list(local)

    assert reply.status == 200
