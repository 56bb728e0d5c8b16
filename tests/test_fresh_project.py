"""The README's "Add mcp_tools to an existing site" steps, run as written on a new ``startproject`` site, end at a
working endpoint under WSGI (Django's runserver and gunicorn), and its Channels section's steps, applied on top,
end at one served by uvicorn with the WebSocket: every server they name answers the health check, refuses a
client without the token, and serves the README's own client script, which lists and calls the README's tool.
With MCP_TEST_WHEEL set, each site runs in a virtualenv of its own with that wheel installed, as a site installs
the package."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import mcp_tools
from tests.live.fresh_project import (
    CHANNELS_SECTION,
    DEPLOYMENT,
    WSGI_SECTION,
    FreshProject,
    GunicornServer,
    ProjectServer,
    RunServer,
    UvicornServer,
    fresh_project,
    section_blocks,
)
from tests.live.servers import ROOT
from tests.live.websocket_client import mcp_websocket

pytestmark = pytest.mark.live

TIMEOUT = 10
SERVERS = [("wsgi", RunServer), ("wsgi", GunicornServer), ("channels", RunServer), ("channels", UvicornServer)]
SERVER_IDS = ["runserver", "gunicorn", "daphne-runserver", "uvicorn"]


@pytest.fixture(scope="module")
def wsgi_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FreshProject]:
    with fresh_project(Path(tmp_path_factory.mktemp("fresh-wsgi")) / "mysite") as built:
        yield built


@pytest.fixture(scope="module")
def channels_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FreshProject]:
    with fresh_project(Path(tmp_path_factory.mktemp("fresh-channels")) / "mysite", channels=True) as built:
        yield built


def served_by(
    request: pytest.FixtureRequest, site: str, kind: type[ProjectServer]
) -> tuple[FreshProject, ProjectServer]:
    project: FreshProject = request.getfixturevalue(f"{site}_site")
    return project, next(server for server in project.servers if isinstance(server, kind))


def test_the_sections_have_every_kind_of_step() -> None:
    def first_lines(section: str) -> list[str]:
        return [
            block.text.partition("\n")[0] for block in section_blocks(section=section) if block.language == "python"
        ]

    assert first_lines("## Add mcp_tools to an existing site") == [
        "# mysite/settings.py",
        "# myapp/mcp_tools.py",
        "# mysite/urls.py (add)",
        "# client.py",
    ]
    assert first_lines(CHANNELS_SECTION) == ["# mysite/settings.py (add)", "# mysite/asgi.py"]


def test_the_wsgi_steps_install_the_package_and_gunicorn_only(wsgi_site: FreshProject) -> None:
    assert wsgi_site.installed == ["./django-mcp-tools", "gunicorn"]


def test_the_channels_steps_add_the_servers_that_speak_asgi(channels_site: FreshProject) -> None:
    assert channels_site.installed == ["./django-mcp-tools", "gunicorn", "daphne", "uvicorn[standard]"]
    # uvicorn's [standard] extra brings the WebSocket library without which /mcp/ws answers 404.
    imported = channels_site.run([channels_site.python, "-c", "import websockets, daphne, uvicorn; print('ok')"])
    assert imported == "ok\n"


@pytest.mark.parametrize("site", ["wsgi", "channels"])
def test_the_site_runs_the_wheel_when_one_is_given_else_this_checkout(
    request: pytest.FixtureRequest, site: str
) -> None:
    project: FreshProject = request.getfixturevalue(f"{site}_site")

    loaded = Path(project.run([project.python, "-c", "import mcp_tools; print(mcp_tools.__file__)"]).strip())

    if project.wheel is None:
        assert loaded == ROOT / "mcp_tools" / "__init__.py"
    else:
        assert project.virtualenv is not None
        assert loaded == project.virtualenv.site_packages() / "mcp_tools" / "__init__.py"
        templates = loaded.parent / "templates" / "admin" / "mcp_tools" / "tool"
        assert (templates / "change_form.html").is_file()
        shown = project.run([project.python, "-m", "pip", "show", "django-mcp-tools"])
        assert f"Version: {mcp_tools.__version__}\n" in shown


def test_the_wsgi_site_starts_the_servers_it_names_with_no_warning(wsgi_site: FreshProject) -> None:
    assert [type(server) for server in wsgi_site.servers] == [RunServer, GunicornServer]
    assert wsgi_site.health_checked == ["http://127.0.0.1:8000/mcp/health"]
    # Django's own runserver serves /mcp through the include: no check warns about the endpoint or a channel layer.
    assert "System check identified no issues" in wsgi_site.servers[0].log()
    assert "System check identified no issues" in wsgi_site.run([wsgi_site.python, "manage.py", "check"])


def test_the_channels_site_is_served_by_daphne_and_uvicorn_with_no_warning(channels_site: FreshProject) -> None:
    assert [type(server) for server in channels_site.servers] == [RunServer, UvicornServer]
    assert channels_site.health_checked == ["http://127.0.0.1:8000/mcp/health"] * 2
    assert "System check identified no issues" in channels_site.servers[0].log()
    assert "System check identified no issues" in channels_site.run([channels_site.python, "manage.py", "check"])


@pytest.mark.parametrize(("site", "kind"), SERVERS, ids=SERVER_IDS)
def test_the_readme_client_lists_and_calls_the_readme_tool(
    request: pytest.FixtureRequest, site: str, kind: type[ProjectServer]
) -> None:
    project, server = served_by(request, site, kind)

    output = project.run_client(server).splitlines()

    assert output == ["['greet']", "Hello, Ada!"]


@pytest.mark.parametrize(("site", "kind"), SERVERS, ids=SERVER_IDS)
def test_the_endpoint_refuses_a_client_without_the_token(
    request: pytest.FixtureRequest, site: str, kind: type[ProjectServer]
) -> None:
    _, server = served_by(request, site, kind)

    response = httpx.post(
        server.url("/mcp"),
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=TIMEOUT,
    )

    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith('Bearer realm="mcp"')


def test_gunicorn_refuses_the_event_stream_it_cannot_hold(wsgi_site: FreshProject) -> None:
    server = next(server for server in wsgi_site.servers if isinstance(server, GunicornServer))

    response = httpx.get(
        server.url("/mcp"),
        headers={"Authorization": f"Bearer {wsgi_site.token}", "Accept": "text/event-stream"},
        timeout=TIMEOUT,
    )

    assert (response.status_code, response.headers["allow"]) == (405, "POST, DELETE")
    assert response.json()["error"]["code"] == -32600


async def test_the_channels_site_serves_the_websocket(channels_site: FreshProject) -> None:
    server = next(server for server in channels_site.servers if isinstance(server, UvicornServer))

    async with mcp_websocket(server.ws_url(), channels_site.token) as client:
        await client.initialize()
        tools, _ = await client.list_tools()

    assert client.subprotocol == "mcp"
    assert [tool["name"] for tool in tools] == ["greet"]


def test_the_deployment_guides_wsgi_py_answers_mcp_first_under_gunicorn(wsgi_site: FreshProject) -> None:
    # Last in this module: it rewrites the site's wsgi.py, which the servers above have already loaded.
    [block] = [
        block
        for block in section_blocks(DEPLOYMENT.read_text(), WSGI_SECTION)
        if block.text.startswith("# mysite/wsgi.py")
    ]
    wsgi_site.apply(block)
    wsgi_site.serve(GunicornServer, ["mysite.wsgi"])
    server = wsgi_site.servers[-1]

    output = wsgi_site.run_client(server).splitlines()
    strange_host = httpx.post(
        server.url("/mcp"),
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Host": "evil.example", "Authorization": f"Bearer {wsgi_site.token}"},
        timeout=TIMEOUT,
    )

    assert output == ["['greet']", "Hello, Ada!"]
    # The endpoint answered before Django's stack: its own Host check, not Django's 400 page.
    assert strange_host.status_code == 421
