"""The README's "Add mcp_tools to an existing site" steps, run as written on a new ``startproject`` site,
end at a working endpoint: both servers it names answer the health check, serve the admin's static files,
and the README's own client script lists and calls the README's tool over Streamable HTTP. With MCP_TEST_WHEEL
set, the site runs in a virtualenv of its own with that wheel installed, as a site installs the package."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

import mcp_tools
from tests.live.fresh_project import FreshProject, RunServer, UvicornServer, fresh_project, section_blocks
from tests.live.servers import ROOT

pytestmark = pytest.mark.live

TIMEOUT = 10


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FreshProject]:
    with fresh_project(Path(tmp_path_factory.mktemp("fresh")) / "mysite") as built:
        yield built


def test_the_section_has_every_kind_of_step() -> None:
    first_lines = [block.text.partition("\n")[0] for block in section_blocks() if block.language == "python"]

    assert first_lines == [
        "# mysite/settings.py",
        "# mysite/settings.py (add)",
        "# mysite/asgi.py",
        "# mysite/urls.py (add)",
        "# myapp/mcp_tools.py",
        "# client.py",
    ]


def test_the_packages_it_installs_are_the_ones_serving_mcp(project: FreshProject) -> None:
    assert project.installed == ["./django-mcp-tools", "daphne", "uvicorn[standard]"]
    # uvicorn's [standard] extra brings the WebSocket library without which /mcp/ws answers 404.
    assert project.run([project.python, "-c", "import websockets, daphne, uvicorn; print('ok')"]) == "ok\n"


def test_the_site_runs_the_wheel_when_one_is_given_else_this_checkout(project: FreshProject) -> None:
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


def test_both_servers_it_names_start_and_answer_the_health_check(project: FreshProject) -> None:
    assert [type(server) for server in project.servers] == [RunServer, UvicornServer]
    assert project.health_checked == ["http://127.0.0.1:8000/mcp/health"]
    # daphne's runserver serves ASGI, so the check that warns about Django's WSGI runserver stays silent.
    runserver = project.servers[0]
    assert "System check identified no issues" in runserver.log()
    assert "mcp_tools.W013" not in runserver.log()


@pytest.mark.parametrize("kind", [RunServer, UvicornServer], ids=["runserver", "uvicorn"])
def test_the_readme_client_lists_and_calls_the_readme_tool(project: FreshProject, kind: type) -> None:
    server = next(server for server in project.servers if isinstance(server, kind))

    output = project.run_client(server).splitlines()

    assert output == ["['greet']", "Hello, Ada!"]


@pytest.mark.parametrize("kind", [RunServer, UvicornServer], ids=["runserver", "uvicorn"])
def test_the_admin_has_its_static_files(project: FreshProject, kind: type) -> None:
    server = next(server for server in project.servers if isinstance(server, kind))

    response = httpx.get(server.url("/static/admin/css/base.css"), timeout=TIMEOUT)

    assert response.status_code == 200
    assert "text/css" in response.headers["content-type"]


def test_the_endpoint_refuses_a_client_without_the_token(project: FreshProject) -> None:
    server = project.servers[-1]

    response = httpx.post(
        server.url("/mcp"),
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=TIMEOUT,
    )

    assert response.status_code == 401
