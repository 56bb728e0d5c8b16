"""The Django-view doors under real servers: gunicorn (sync, gthread, preloaded) and ``runserver`` on Django's WSGI
handler, uvicorn on Django's plain ASGI handler. Each is driven by the official Python SDK in both eras and by the
TypeScript SDK, keeps the endpoint's gates, and (under WSGI) refuses a stream at once with its worker left free.

Each server starts once for the module: a few representative gates each, as the whole matrix runs in process.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import httpx
import mcp_types as types
import pytest

from mcp_tools import __version__
from mcp_tools.exceptions import INVALID_REQUEST, METHOD_NOT_FOUND
from mcp_tools.protocol.versions import SERVER_INFO_META
from mcp_tools.transports.http import NO_STREAMS
from tests.gunicorn_warm import WARMED
from tests.live.asgi_http import ACCEPT_BOTH, initialize_params, modern_headers, modern_request, request
from tests.live.legacy_http import LATEST
from tests.live.node_client import token_client
from tests.live.sdk import every_tool, sdk_client
from tests.live.servers import DjangoAsgiServer, GunicornServer, RunServer, ServerProcess
from tests.live.sites import ServerKind, Site, sqlite_switches

pytest_plugins = ["tests.live.fixtures"]
pytestmark = pytest.mark.live

TIMEOUT = 10
MODERN = "2026-07-28"
ERAS = [("legacy", LATEST), ("auto", MODERN)]
# Granted to nobody on this site: it must answer exactly as a tool that does not exist.
UNGRANTED = "crash"
UNKNOWN = "no_such_tool"
MAX_MESSAGE_BYTES = 1_048_576  # the default of MCP_TOOLS["MAX_MESSAGE_BYTES"]
CHALLENGE = 'Bearer realm="mcp", resource_metadata="{base}/.well-known/oauth-protected-resource/mcp"'
# How many rounds of concurrent calls may pass before every preloaded worker has answered one.
ROUNDS = 25
ROUND_CALLS = 4
ACCESS_LINE = re.compile(r"^<(\d+)> POST /mcp 200$", re.MULTILINE)
BOOTED = re.compile(r"Booting worker with pid: (\d+)")


@dataclass(frozen=True)
class Door:
    """A server in front of the Django views, and whether it can hold a response open."""

    name: str
    kind: ServerKind
    streams: bool


def gunicorn(*options: str) -> ServerKind:
    return partial(GunicornServer, options=options)


DOORS = [
    Door("gunicorn-sync", gunicorn("--workers", "1", "--worker-class", "sync"), streams=False),
    Door("gunicorn-gthread", gunicorn("--workers", "1", "--worker-class", "gthread", "--threads", "4"), streams=False),
    Door("runserver", RunServer, streams=False),
    Door("uvicorn-django-asgi", DjangoAsgiServer, streams=True),
]
PRELOADED = gunicorn(
    "--preload", "--workers", "2", "--worker-class", "sync", "--config", "python:tests.gunicorn_warm",
    "--access-logfile", "-", "--access-logformat", "%(p)s %(m)s %(U)s %(s)s",
)  # fmt: skip
REVOKE = f"""
import django
django.setup()
from mcp_tools.models import Tool
assert Tool.objects.filter(name={UNGRANTED!r}).update(everyone=False) == 1
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    workdir = tmp_path_factory.mktemp("doors")
    site = Site(workdir, sqlite_switches(workdir))
    site.prepare()
    site.run("-c", REVOKE)
    return site


@pytest.fixture(scope="module", params=DOORS, ids=[door.name for door in DOORS])
def door(request: pytest.FixtureRequest) -> Door:
    return request.param  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def server(door: Door, site: Site) -> Iterator[ServerProcess]:
    with site.serve(door.name, kind=door.kind) as (started,):
        yield started


@pytest.fixture(scope="module")
def preloaded(site: Site) -> Iterator[ServerProcess]:
    with site.serve("gunicorn-preload", kind=PRELOADED) as (started,):
        yield started


def granted(site: Site) -> list[str]:
    return sorted(set(site.seeded.tools) - {UNGRANTED})


def client(token: str | None = None) -> httpx.AsyncClient:
    headers = {"Accept": ACCEPT_BOTH} | ({"Authorization": f"Bearer {token}"} if token else {})
    return httpx.AsyncClient(headers=headers, timeout=TIMEOUT)


async def modern_post(
    http: httpx.AsyncClient, server: ServerProcess, method: str, params: dict[str, Any], **headers: str
) -> httpx.Response:
    name = params.get("name")
    routing = {key: value for key, value in modern_headers(method, name).items() if value is not None}
    return await http.post(server.url("/mcp"), json=modern_request(1, method, params), headers=routing | headers)


# The SDKs ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "version"), ERAS, ids=[version for _mode, version in ERAS])
async def test_the_python_sdk_lists_and_calls_in_each_era(door, server, site, mode, version):
    async with sdk_client(server, site.seeded.token, mode) as sdk:
        landed, info, capabilities = sdk.protocol_version, sdk.server_info, sdk.server_capabilities
        tools, _pages = await every_tool(sdk)
        result = await asyncio.wait_for(sdk.call_tool("add", {"a": 2, "b": 3}), TIMEOUT)

    assert landed == version
    assert info is not None
    assert (info.name, info.version) == ("django-mcp-tools", __version__)
    # A door that holds no stream cannot push a list change, so it promises none.
    assert capabilities.tools == types.ToolsCapability(list_changed=True if door.streams else None)
    assert [tool.name for tool in tools] == granted(site)
    assert result.content == [types.TextContent(type="text", text="5")]
    assert (result.structured_content, result.is_error) == ({"result": 5}, False)


async def test_progress_reaches_the_client_only_through_a_door_that_streams(door, server, site):
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with sdk_client(server, site.seeded.token, MODERN) as sdk:
        result = await asyncio.wait_for(
            sdk.call_tool("sync_progress", {"steps": 3}, progress_callback=on_progress), TIMEOUT
        )

    assert (result.content, result.is_error) == ([types.TextContent(type="text", text="done")], False)
    assert seen == ([(1, 3, None), (2, 3, None), (3, 3, None)] if door.streams else [])


def test_the_typescript_sdk_lists_and_calls(server, site):
    answer = token_client(server.url("/mcp"), site.seeded.token, "add", {"a": 2, "b": 3})

    assert answer == {
        "protocolVersion": LATEST,
        "tools": granted(site),
        "result": {"content": [{"type": "text", "text": "5"}], "structuredContent": {"result": 5}, "isError": False},
    }


# Streams: refused at once under WSGI, the worker left free --------------------------------------------------------


async def test_a_legacy_get_stream_never_holds_up_the_next_request(door, server, site):
    async with client(site.seeded.token) as http:
        opened = await http.post(server.url("/mcp"), json=request(0, "initialize", initialize_params(LATEST)))
        session = {"Mcp-Session-Id": opened.headers["mcp-session-id"], "MCP-Protocol-Version": LATEST}
        async with http.stream("GET", server.url("/mcp"), headers=session | {"Accept": "text/event-stream"}) as stream:
            if not door.streams:
                await stream.aread()
            call = await http.post(
                server.url("/mcp"),
                json=request(1, "tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}}),
                headers=session,
            )

    if door.streams:
        assert (stream.status_code, stream.headers["content-type"]) == (200, "text/event-stream")
    else:
        assert (stream.status_code, stream.headers["allow"]) == (405, "POST, DELETE")
        assert json.loads(stream.content) == {
            "jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": NO_STREAMS},
        }  # fmt: skip
    assert call.status_code == 200
    assert call.json()["result"]["structuredContent"] == {"result": 2}


async def test_a_listen_stream_never_holds_up_the_next_request(door, server, site):
    listen = {"notifications": {"toolsListChanged": True}}
    async with client(site.seeded.token) as http:
        routing = {key: value for key, value in modern_headers("subscriptions/listen").items() if value}
        async with http.stream(
            "POST", server.url("/mcp"), json=modern_request(7, "subscriptions/listen", listen), headers=routing
        ) as stream:
            if not door.streams:
                await stream.aread()
            discover = await modern_post(http, server, "server/discover", {})

    if door.streams:
        assert (stream.status_code, stream.headers["content-type"]) == (200, "text/event-stream")
    else:
        assert stream.status_code == 404
        assert json.loads(stream.content) == {
            "jsonrpc": "2.0", "id": 7, "error": {"code": METHOD_NOT_FOUND, "message": NO_STREAMS},
        }  # fmt: skip
    assert discover.status_code == 200
    assert discover.json()["result"]["_meta"][SERVER_INFO_META]["name"] == "django-mcp-tools"


# The gates ------------------------------------------------------------------------------------------------------


async def test_a_request_without_a_token_is_challenged(server):
    async with client() as http:
        reply = await http.post(server.url("/mcp"), json=request(0, "initialize", initialize_params(LATEST)))
        metadata = await http.get(server.url("/.well-known/oauth-protected-resource/mcp"))

    assert reply.status_code == 401
    assert reply.headers["www-authenticate"] == CHALLENGE.format(base=server.base_url)
    assert (metadata.status_code, metadata.json()["resource"]) == (200, server.url("/mcp"))


async def test_a_tool_not_granted_answers_as_an_unknown_one(server, site):
    async with client(site.seeded.token) as http:
        denied = await modern_post(http, server, "tools/call", {"name": UNGRANTED, "arguments": {}})
        unknown = await modern_post(http, server, "tools/call", {"name": UNKNOWN, "arguments": {}})

    assert denied.status_code == unknown.status_code
    assert denied.headers["content-type"] == unknown.headers["content-type"]
    assert denied.json() == json.loads(unknown.text.replace(UNKNOWN, UNGRANTED))
    assert denied.json()["error"]["message"] == f"Unknown tool: {UNGRANTED}"


async def test_a_body_past_the_cap_is_refused(server, site):
    body = json.dumps(request(0, "initialize", initialize_params(LATEST))).encode().ljust(MAX_MESSAGE_BYTES + 1)
    async with client(site.seeded.token) as http:
        reply = await http.post(server.url("/mcp"), content=body, headers={"Content-Type": "application/json"})

    assert reply.status_code == 413
    assert reply.json()["error"] == {
        "code": INVALID_REQUEST, "message": f"Message larger than {MAX_MESSAGE_BYTES} bytes",
    }  # fmt: skip


async def test_a_foreign_origin_is_refused(server, site):
    async with client(site.seeded.token) as http:
        foreign = await modern_post(http, server, "server/discover", {}, Origin="http://evil.example")
        own = await modern_post(http, server, "server/discover", {}, Origin=server.base_url)

    assert (foreign.status_code, own.status_code) == (403, 200)


async def test_the_health_check_answers(server):
    async with client() as http:
        reply = await http.get(server.url("/mcp/health"))

    assert (reply.status_code, reply.headers["content-type"]) == (200, "application/json")
    assert reply.json()["status"] == "ok"


# Preloaded workers ----------------------------------------------------------------------------------------------


async def test_every_preloaded_worker_answers_calls(preloaded, site):
    assert preloaded.logged(WARMED + " 200 OK in the arbiter")
    assert preloaded.log_holds(lambda log: len(BOOTED.findall(log)) == 2)
    workers = set(BOOTED.findall(preloaded.log()))
    answered: set[str] = set()
    results: list[Any] = []
    async with client(site.seeded.token) as http:
        for _round in range(ROUNDS):
            calls = [
                modern_post(http, preloaded, "tools/call", {"name": "add", "arguments": {"a": n, "b": 1}})
                for n in range(ROUND_CALLS)
            ]
            results.extend(reply.json()["result"]["structuredContent"] for reply in await asyncio.gather(*calls))
            # Each worker logs the calls it answered, once their answers are sent.
            assert preloaded.log_holds(lambda log: len(ACCESS_LINE.findall(log)) == len(results))
            answered = set(ACCESS_LINE.findall(preloaded.log()))
            if answered == workers:
                break

    assert answered == workers
    assert results == [{"result": n + 1} for n in range(ROUND_CALLS)] * (len(results) // ROUND_CALLS)
