"""A token this site issued for another port of its host, replayed at uvicorn with a Host header naming that
port: refused on every door that reads the resource (Streamable HTTP, the WebSocket handshake, the metadata).

Django's ALLOWED_HOSTS ignores ports, so ``Host: 127.0.0.1:9`` passes it at a server listening elsewhere; the
resource a token must name is still the URL the server publishes for the port it was reached on.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.challenges import challenge
from tests.live.asgi_http import ACCEPT_BOTH, modern_headers, modern_request
from tests.live.servers import ServerProcess
from tests.live.sites import Site

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 10
# The discard port: whatever free port the server was given, never this one.
OTHER_PORT = 9
ELSEWHERE = f"127.0.0.1:{OTHER_PORT}"
INVALID = "The access token is invalid or expired."
# Refused without pointing at metadata: a Host naming another port names another server's resource.
NO_RESOURCE = f'Bearer realm="mcp", error="invalid_token", error_description="{INVALID}"'


def issued_for(site: Site, resource: str) -> str:
    """An OAuth access token of the seeded user that the site's authorization server issued for ``resource``."""
    return str(json.loads(site.run("-m", "tests.live.mutate", "issue-oauth", site.seeded.user, resource).stdout))


async def post_mcp(server: ServerProcess, token: str, host: str) -> httpx.Response:
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        return await http.post(
            server.url("/mcp"),
            json=modern_request(1, "tools/list", {}),
            headers={
                "Host": host,
                "Authorization": f"Bearer {token}",
                "Accept": ACCEPT_BOTH,
                **modern_headers("tools/list"),
            },
        )


@asynccontextmanager
async def handshake(server: ServerProcess, token: str, host: str) -> AsyncIterator[Any]:
    """A WebSocket opened to the server's port with ``Host: host`` (the URL names the host, the socket the port)."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=TIMEOUT)
    headers = {"Authorization": f"Bearer {token}"}
    async with asyncio.timeout(TIMEOUT):
        async with connect(
            f"ws://{host}/mcp/ws",
            sock=sock,
            subprotocols=["mcp"],
            additional_headers=headers,  # type: ignore[list-item]
        ) as connection:
            yield connection


@pytest.fixture(scope="module")
def token_elsewhere(live_site: Site) -> str:
    return issued_for(live_site, f"http://{ELSEWHERE}/mcp")


async def test_streamable_http_refuses_it_401_invalid_token(uvicorn_server: ServerProcess, token_elsewhere: str):
    refused = await post_mcp(uvicorn_server, token_elsewhere, ELSEWHERE)

    assert (refused.status_code, refused.headers["www-authenticate"]) == (401, NO_RESOURCE)
    assert refused.json()["error"]["message"] == INVALID


async def test_the_websocket_handshake_refuses_it_401_invalid_token(
    uvicorn_server: ServerProcess, token_elsewhere: str
):
    with pytest.raises(InvalidStatus) as refused:
        async with handshake(uvicorn_server, token_elsewhere, ELSEWHERE):
            pass

    response = refused.value.response
    assert (response.status_code, response.headers["www-authenticate"]) == (401, NO_RESOURCE)


async def test_its_metadata_is_400_as_for_an_unknown_host(uvicorn_server: ServerProcess):
    async with httpx.AsyncClient(timeout=TIMEOUT) as http:
        response = await http.get(
            uvicorn_server.url("/.well-known/oauth-protected-resource/mcp"), headers={"Host": ELSEWHERE}
        )

    assert (response.status_code, response.json()) == (
        400,
        {"error": "invalid_request", "error_description": "Unknown host."},
    )


async def test_a_token_for_the_port_reached_is_still_served_on_both_doors(
    live_site: Site, uvicorn_server: ServerProcess
):
    here = uvicorn_server.base_url.removeprefix("http://")
    token = issued_for(live_site, uvicorn_server.url("/mcp"))

    served = await post_mcp(uvicorn_server, token, here)
    async with handshake(uvicorn_server, token, here) as connection:
        assert connection.subprotocol == "mcp"

    assert served.status_code == 200, served.text


async def test_the_token_for_another_port_is_not_for_the_port_reached_either(
    uvicorn_server: ServerProcess, token_elsewhere: str
):
    here = uvicorn_server.base_url.removeprefix("http://")

    refused = await post_mcp(uvicorn_server, token_elsewhere, here)

    assert (refused.status_code, refused.headers["www-authenticate"]) == (
        401,
        challenge(
            "invalid_token", "The access token was not issued for this resource.", origin=uvicorn_server.base_url
        ),
    )
