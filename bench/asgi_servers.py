"""The ASGI servers the suite runs an application under: their command lines, how each says it is serving, and the
CPU time of a server's whole process tree (the parent and its worker processes).

uvicorn names the port it bound (``--port 0``) and logs a line per worker process; granian and daphne are given a
free loopback port and are ready once the application answers ``GET /mcp/health``.
"""

from __future__ import annotations

import http.client
import importlib.util
import os
import socket
from dataclasses import dataclass
from pathlib import Path

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
HEALTH = "/mcp/health"


@dataclass(frozen=True)
class Launch:
    """Which ASGI server runs an application, with which extra options, in how many worker processes."""

    kind: str = "uvicorn"  # "uvicorn", "granian" or "daphne"
    options: tuple[str, ...] = ()
    workers: int = 1


UVICORN = Launch()


@dataclass(frozen=True)
class Variant:
    """A server configuration the ``servers`` rows compare with uvicorn as the project runs today: the transports
    it changes (``ws``, ``http``) and the module it needs installed."""

    title: str
    launch: Launch
    transports: tuple[str, ...]
    module: str


VARIANTS = {
    "uvicorn-wsproto": Variant("uvicorn --ws wsproto", Launch(options=("--ws", "wsproto")), ("ws",), "wsproto"),
    "uvicorn-websockets": Variant(
        "uvicorn --ws websockets (legacy)", Launch(options=("--ws", "websockets")), ("ws",), "websockets.legacy"
    ),
    "uvicorn-h11": Variant("uvicorn --http h11", Launch(options=("--http", "h11")), ("http",), "h11"),
    "uvicorn-asyncio": Variant(
        "uvicorn --loop asyncio", Launch(options=("--loop", "asyncio")), ("ws", "http"), "asyncio"
    ),
    "granian": Variant("granian --interface asgi", Launch("granian"), ("ws", "http"), "granian"),
    "daphne": Variant("daphne", Launch("daphne"), ("ws", "http"), "daphne"),
}


def uvicorn_auto() -> str:
    """What uvicorn's ``auto`` choices (the project's servers') resolve to with the packages installed here."""

    def first(*modules: str) -> str:
        return next((module for module in modules if importlib.util.find_spec(module)), modules[-1])

    websocket = {"websockets": "websockets-sansio", "wsproto": "wsproto", "none": "none"}[
        first("websockets", "wsproto", "none")
    ]
    return f"--ws {websocket} --http {first('httptools', 'h11')} --loop {first('uvloop', 'asyncio')}"


def missing(variant: Variant) -> str:
    """Why ``variant`` cannot run here ("" when it can)."""
    try:
        found = importlib.util.find_spec(variant.module) is not None
    except ModuleNotFoundError:  # its parent package is not installed
        found = False
    return "" if found else f"skipped: {variant.module} is not installed: make venv-dev"


def command(python: str, app: str, app_dir: str | None, lifespan: bool, launch: Launch, port: int) -> list[str]:
    """The command line serving ``app`` on 127.0.0.1:``port`` without access logs (granian and daphne serve the
    project's application only: no ``app_dir``; granian runs its lifespan, daphne has none)."""
    if launch.kind != "uvicorn" and app_dir:
        raise ValueError(f"{launch.kind} runs the project's application only")
    if launch.kind == "granian":
        found = [python, "-m", "granian", "--interface", "asgi", "--host", "127.0.0.1", "--port", str(port)]
        found += ["--workers", str(launch.workers), "--no-access-log", "--log-level", "warning"]
        return [*found, *launch.options, app]
    if launch.kind == "daphne":
        if launch.workers != 1:
            raise ValueError("daphne runs one process")
        # Verbosity 0: no access log (at 1 daphne writes a line per request to stdout).
        found = [python, "-m", "daphne", "-b", "127.0.0.1", "-p", str(port), "-v", "0"]
        return [*found, *launch.options, app]
    found = [python, "-m", "uvicorn", app, "--host", "127.0.0.1", "--port", str(port), "--no-access-log"]
    found += ["--lifespan", "on" if lifespan else "off", "--log-level", "info"]
    found += ["--app-dir", app_dir] if app_dir else []
    found += ["--workers", str(launch.workers)] if launch.workers > 1 else []
    return [*found, *launch.options]


def free_port() -> int:
    """A loopback port nothing listens on now (the kernel's pick for port 0)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def answers_health(port: int, timeout: float) -> bool:
    """Whether ``GET /mcp/health`` on the port answers 200 within ``timeout``."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("GET", HEALTH)
        return connection.getresponse().status == 200
    except (OSError, http.client.HTTPException):
        return False
    finally:
        connection.close()


def descendants(pid: int) -> list[int]:
    """The processes below ``pid`` (its children, theirs, ...), from the parent PIDs in /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        fields = stat_fields(int(entry.name)) if entry.name.isdigit() else []
        if fields:
            parents.setdefault(int(fields[1]), []).append(int(entry.name))
    found: list[int] = []
    below = parents.get(pid, [])
    while below:
        found += below
        below = [child for parent in below for child in parents.get(parent, [])]
    return found


def stat_fields(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command name (the first is field 3, the state); [] once it is gone."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return []


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of one process so far (fields 14 and 15 of /proc/PID/stat); 0 once it is gone."""
    fields = stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS if fields else 0.0


def started_at(pid: int) -> int:
    """When the process started, in clock ticks since boot (field 22): with the PID, it names one process."""
    fields = stat_fields(pid)
    return int(fields[19]) if fields else -1


def tree_cpu_seconds(pid: int) -> float:
    """CPU time of ``pid`` and every process below it: a server's parent and its workers."""
    return sum(cpu_seconds(member) for member in [pid, *descendants(pid)])
