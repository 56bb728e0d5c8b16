"""A new ``startproject`` site built by the README's "Add mcp_tools to an existing site" steps, run as written
(a WSGI site), with the README's Channels steps after them (an ASGI site) or, for OAuth, docs/connectors.md's
"Setting it up" steps.

The steps are read from the documents: each fenced block of a section is either a file to write or extend
(its first line names the file, ``# mysite/asgi.py`` or ``# mysite/settings.py (add)``), or shell lines,
run in order. A line this module does not know how to run fails, so the documents and the tests stay in step.

The site runs on this checkout, on the suite's interpreter; with ``MCP_TEST_WHEEL`` set, it runs in a virtualenv
of its own into which the steps' ``pip install`` lines install that wheel (for the package) and the rest.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.live.servers import HOST, ROOT, ServerProcess, free_port
from tests.live.virtualenvs import Virtualenv, published_wheel

README = ROOT / "README.md"
SECTION = "## Add mcp_tools to an existing site"
CHANNELS_SECTION = "### Live notifications and the WebSocket: Channels"
CONNECTORS = ROOT / "docs" / "connectors.md"
DEPLOYMENT = ROOT / "docs" / "deployment.md"
WSGI_SECTION = "## WSGI: gunicorn and mod_wsgi"
CONNECTORS_SECTION = "## Setting it up"
# The public origin the OAuth steps name (in RESOURCE_URL); the test serves the site on loopback instead.
PUBLIC_ORIGIN = "https://shop.example.com"
COMMAND_TIMEOUT = 60
FILE_LINE = re.compile(r"^# (?P<path>[\w/]+\.py)(?P<add> \(add\))?$")
ELLIPSIS_LINE = re.compile(r"^\s*# \.\.\.")
SUPERUSER_PASSWORD = "fresh-project-password"
HEALTH_RETRIES = 5
# The package as a `pip install` line names it: by name, or as the path to a clone, with or without extras.
PACKAGE = re.compile(r"^(?:\./)?django-mcp-tools(?P<extras>\[[^\]]*\])?$")


@dataclass(frozen=True)
class Block:
    """One fenced code block: its language and its text."""

    language: str
    text: str


def section_blocks(readme: str = "", section: str = SECTION) -> list[Block]:
    """The fenced blocks of a section of the README (or of the given text), in order, up to the section's
    first subheading; by default the README's existing-site section."""
    lines = (readme or README.read_text()).splitlines()
    start = lines.index(section) + 1
    blocks: list[Block] = []
    fence: str | None = None
    body: list[str] = []
    for line in lines[start:]:
        stripped = line.strip()
        if fence is None:
            if line.startswith("#"):
                break
            if stripped.startswith("```"):
                fence, body = stripped[3:], []
                indent = len(line) - len(line.lstrip())
            continue
        if stripped == "```":
            blocks.append(Block(fence, "\n".join(each[indent:] for each in body) + "\n"))
            fence = None
        else:
            body.append(line)
    return blocks


def replace_assignment(source: str, block: str) -> str:
    """``source`` with the assignment ``block`` makes put in place of the one it has for the same name.

    A ``# ...`` line of the block stands for the entries the existing list already holds.
    """
    statement = ast.parse(block).body[0]
    assert isinstance(statement, ast.Assign) and isinstance(statement.targets[0], ast.Name), block
    name = statement.targets[0].id
    existing = next(
        node
        for node in ast.parse(source).body
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name
    )
    entries = [f"    {value!r}," for value in ast.literal_eval(existing.value)]
    lines = block.splitlines()
    expanded = [entry for line in lines for entry in (entries if ELLIPSIS_LINE.match(line) else [line])]
    assert expanded != lines, f"the README's {name} keeps no room for the site's own entries"
    source_lines = source.splitlines()
    assert existing.end_lineno is not None
    merged = source_lines[: existing.lineno - 1] + expanded + source_lines[existing.end_lineno :]
    return "\n".join(merged) + "\n"


@dataclass
class FreshProject:
    """A project made by ``startproject mysite`` in ``root``, and the processes serving it."""

    root: Path
    servers: list[ServerProcess] = field(default_factory=list)
    token: str = ""
    client_script: str = ""
    installed: list[str] = field(default_factory=list)
    health_checked: list[str] = field(default_factory=list)
    #: False: the servers the steps name are not started but kept in ``deferred``, for steps still to come.
    serving: bool = True
    deferred: list[tuple[type[ProjectServer], list[str]]] = field(default_factory=list)
    #: The wheel the steps install for the package, in ``virtualenv``; None: this checkout is the package.
    wheel: Path | None = field(default_factory=published_wheel)
    virtualenv: Virtualenv | None = None
    package_installed: bool = False

    @property
    def python(self) -> str:
        """The interpreter the site runs on."""
        return str(self.virtualenv.python) if self.virtualenv is not None else sys.executable

    @property
    def env(self) -> dict[str, str]:
        env = {key: value for key, value in os.environ.items() if not key.startswith(("MCP_", "DJANGO_"))}
        env.update(
            PYTHONUNBUFFERED="1",
            DJANGO_SUPERUSER_PASSWORD=SUPERUSER_PASSWORD,
            DJANGO_SUPERUSER_EMAIL="admin@example.com",
        )
        if self.virtualenv is None:
            # PYTHONPATH stands in for `pip install django-mcp-tools`: this checkout is the package.
            env["PYTHONPATH"] = str(ROOT)
        else:
            env.pop("PYTHONPATH", None)
        return env

    def create(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self.wheel is not None:
            # A site that exists before the package is added: Django first, then the steps' `pip install`.
            self.virtualenv = Virtualenv(self.root.with_name(f"{self.root.name}-venv"))
            self.virtualenv.create()
            self.virtualenv.install("Django")
        self.run([self.python, "-m", "django", "startproject", "mysite", str(self.root)])

    def pip_install(self, requirements: list[str]) -> None:
        """Record what a `pip install` line names; in a virtualenv, install it, the wheel for the package."""
        self.installed.extend(requirements)
        if self.virtualenv is None or self.wheel is None:
            return
        installing = [self.from_wheel(requirement) for requirement in requirements]
        # The first install line must bring the package (later ones, a section's servers, may not).
        assert self.package_installed or installing != requirements, (
            f"the step installs no django-mcp-tools: {requirements}"
        )
        self.package_installed = True
        self.virtualenv.install(*installing)

    def from_wheel(self, requirement: str) -> str:
        """The wheel, with the same extras, for a requirement of the package; any other as it is."""
        named = PACKAGE.match(requirement)
        return f"{self.wheel}{named['extras'] or ''}" if named else requirement

    def run(self, command: list[str]) -> str:
        try:
            completed = subprocess.run(
                command,
                cwd=self.root,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT,
                check=True,
            )
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"{shlex.join(command)} failed:\n{exc.stdout}\n{exc.stderr}") from None
        return completed.stdout

    def apply(self, block: Block) -> None:
        """Write the file a block names, or run its shell lines."""
        if block.language == "sh":
            for line in block.text.splitlines():
                words = shlex.split(line, comments=True)
                if words:
                    self.shell(words)
            return
        first, _, rest = block.text.partition("\n")
        named = FILE_LINE.match(first)
        assert named is not None, f"a README block names no file: {first!r}"
        self.write(named["path"], rest, add=bool(named["add"]))

    def write(self, name: str, text: str, *, add: bool) -> None:
        path = self.root / name
        if name == "client.py":
            self.client_script = text
            return
        if add:
            path.write_text(path.read_text() + "\n" + text)
        elif path.exists() and len(ast.parse(text).body) == 1 and isinstance(ast.parse(text).body[0], ast.Assign):
            path.write_text(replace_assignment(path.read_text(), text))
        else:
            path.write_text(text)

    def shell(self, words: list[str]) -> None:
        match words:
            case ["pip", "install", *packages]:
                self.pip_install(packages)
            case ["python", "manage.py", "runserver", *options]:
                # --noreload: one process to stop, rather than a reloader and its child.
                self.serve(RunServer, options)
            case ["uvicorn", *options]:
                self.serve(UvicornServer, options)
            case ["gunicorn", *options]:
                self.serve(GunicornServer, options)
            case ["curl", url]:
                self.health_checked.append(url)
                for server in self.servers:
                    response = httpx.get(server.url(httpx.URL(url).path), timeout=10)
                    assert response.status_code == 200, (server, response.text)
            case ["python", "manage.py", "createsuperuser", *options]:
                self.run([self.python, "manage.py", "createsuperuser", *options, "--noinput"])
            case ["python", "manage.py", "mcp_token", "create", *options]:
                self.token = self.run([self.python, "manage.py", "mcp_token", "create", *options]).strip()
            case ["python", "manage.py", *arguments]:
                self.run([self.python, "manage.py", *arguments])
            case _:
                raise AssertionError(f"the README asks for a step this test cannot run: {shlex.join(words)}")

    def serve(self, kind: type[ProjectServer], options: list[str], port: int = 0) -> None:
        if not self.serving:
            self.deferred.append((kind, options))
            return
        server = kind(self.root, self.python, options, self.env, self.root / f"{kind.__name__}.log", port)
        self.servers.append(server)
        server.start()

    def run_client(self, server: ServerProcess) -> str:
        """The README's client script, pointed at ``server`` with the token, run; its output."""
        script = self.client_script.replace("http://127.0.0.1:8000", server.base_url).replace("<token>", self.token)
        assert script != self.client_script, "the README's client names no URL and token to fill in"
        path = self.root / f"client_{server.port}.py"
        path.write_text(script)
        # The client is another program, on another machine as often as not: the suite's interpreter runs it.
        return self.run([sys.executable, str(path)])

    def stop(self) -> None:
        for server in self.servers:
            server.stop()


class ProjectServer(ServerProcess):
    """A server of the fresh project, started with the README's command on a free loopback port."""

    def __init__(
        self, root: Path, python: str, options: list[str], env: dict[str, str], log_path: Path, port: int = 0
    ) -> None:
        super().__init__(type(self).__name__, env, log_path)
        self.cwd = root
        self.python = python
        self.options = options
        self.fixed_port = port

    def choose_port(self) -> int:
        return self.fixed_port or super().choose_port()


class RunServer(ProjectServer):
    """``manage.py runserver``: Django's (WSGI), or daphne's when ``daphne`` comes first in INSTALLED_APPS."""

    # Printed just before daphne binds its port (its "Listening" line is logged below the level shown).
    ready_line = "Quit the server with"

    def command(self) -> list[str]:
        return [self.python, "manage.py", "runserver", *self.options, f"127.0.0.1:{self.port}", "--noreload"]

    def wait_ready(self) -> None:
        super().wait_ready()
        # The port is bound moments after the banner: retry refused connections, with httpx's bounded backoff.
        with httpx.Client(transport=httpx.HTTPTransport(retries=HEALTH_RETRIES), timeout=10) as client:
            response = client.get(self.url("/mcp/health"))
        assert response.status_code == 200, (self, response.text, self.log())


class UvicornServer(ProjectServer):
    """``uvicorn mysite.asgi:application`` with the README's options, on another port."""

    def command(self) -> list[str]:
        options = list(self.options)
        options[options.index("--port") + 1] = str(self.port)
        return [self.python, "-m", "uvicorn", *options]


class GunicornServer(ProjectServer):
    """``gunicorn mysite.wsgi`` with the README's options, on another port."""

    ready_line = "Booting worker"

    def command(self) -> list[str]:
        # No control socket: gunicorn's default path is one per user, shared by every gunicorn of the machine.
        return [self.python, "-m", "gunicorn", *self.options, "--bind", f"{HOST}:{self.port}", "--no-control-socket"]


@contextmanager
def fresh_project(root: Path, *, channels: bool = False) -> Iterator[FreshProject]:
    """A new project with every step of the README's existing-site section applied, its servers running; with
    ``channels``, the steps of its Channels section too, and only the servers those name."""
    project = FreshProject(root, serving=not channels)
    try:
        project.create()
        for block in section_blocks():
            project.apply(block)
        if channels:
            project.serving = True
            for block in section_blocks(section=CHANNELS_SECTION):
                project.apply(block)
        yield project
    finally:
        project.stop()


@contextmanager
def fresh_oauth_project(root: Path) -> Iterator[FreshProject]:
    """A new project with the README's existing-site steps and then docs/connectors.md's OAuth steps applied,
    served by the README's gunicorn command on the loopback origin that stands in for the public one."""
    project = FreshProject(root, serving=False)
    try:
        project.create()
        for block in section_blocks():
            project.apply(block)
        port = free_port()
        oauth_blocks = section_blocks(CONNECTORS.read_text(), CONNECTORS_SECTION)
        assert any(PUBLIC_ORIGIN in block.text for block in oauth_blocks), "the OAuth steps name no public URL"
        for block in oauth_blocks:
            project.apply(Block(block.language, block.text.replace(PUBLIC_ORIGIN, f"http://{HOST}:{port}")))
        [(kind, options)] = [(kind, options) for kind, options in project.deferred if kind is GunicornServer]
        project.serving = True
        project.serve(kind, options, port)
        yield project
    finally:
        project.stop()


__all__ = ["Block", "FreshProject", "fresh_oauth_project", "fresh_project", "section_blocks"]
