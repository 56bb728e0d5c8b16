"""`make bench`: this project against bare Channels consumers, as ratios of runs measured side by side.

This module owns the whole session: a throwaway demo database built with the demo's own steps, the uvicorn
servers (the project with audit on and off, the bare consumers of ``baseline_orm.py`` and
``baseline_audited.py``, the official SDK and FastMCP as peers, the project with 1,000 extra tools, with
``--fanout`` two servers on Redis, and with ``--against`` the project at another commit, from a detached worktree
on a database of its own), the schedule (every measurement N times, interleaved: project, bare, project, bare,
...) and the table of medians, ratios and targets. The load itself is ``load.py``'s and ``fanout.py``'s; this
module only calls them.

Exit status: 0 when the table was printed (missed targets included: it is a report), 2 when it could not run.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import queue
import re
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import asgi_servers
import fanout
import load
import shape
from asgi_servers import UVICORN, VARIANTS, Launch
from cli import run
from rpc import LEGACY_VERSION, MODERN_VERSION, BenchError, JsonObject, SessionOptions

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
PYTHON = sys.executable
PEERS_PYTHON = ROOT / ".venv-bench-peers" / "bin" / "python"
READY = "Uvicorn running on "
WORKER_STARTED = "Started server process"
HEALTH_POLL = 0.05
START_TIMEOUT = 90.0
STOP_TIMEOUT = 10.0
COMMAND_TIMEOUT = 300.0
ADD_ARGUMENTS: JsonObject = {"a": 1, "b": 2}
ORM_TOOL = "list_orders"
ORM_ARGUMENTS: JsonObject = {"limit": 20}
SYNC_ORM_TOOL = "list_orders_sync"  # the same query as a sync @tool callable (bench/sync_orders)
EXTRA_TOOLS = 1000
FANOUT_SESSIONS = 1000
DEFAULT_REDIS = "redis://127.0.0.1:6379/15"
SETTINGS_LINE = (
    "from django.conf import settings; from django.db import connection; "
    "backend = lambda setting: setting['default']['BACKEND'].rsplit('.', 1)[-1]; "
    'print(f\'DEBUG={settings.DEBUG}, CONN_MAX_AGE={connection.settings_dict["CONN_MAX_AGE"]}, '
    "database {connection.vendor}, {backend(settings.CHANNEL_LAYERS)}, {backend(settings.CACHES)}')"
)
# alice may call the bench's own sync tool (a tree without it grants nothing).
GRANT_LINE = (
    "from django.contrib.auth import get_user_model; from mcp_tools.models import Tool, UserGrant; "
    "alice = get_user_model().objects.get(username='alice'); "
    f"[UserGrant.objects.get_or_create(tool=t, user=alice) for t in Tool.objects.filter(name='{SYNC_ORM_TOOL}')]"
)


class Child:
    """A child process whose merged output a thread reads: the last lines are kept for error messages, and every
    line containing one of ``markers`` is handed to ``wait_for``, in order."""

    def __init__(
        self,
        name: str,
        command: list[str],
        env: dict[str, str],
        markers: tuple[str, ...],
        cpus: set[int] | None = None,
        cwd: Path = ROOT,
    ) -> None:
        self.name = name
        self.markers = markers
        self.tail: deque[str] = deque(maxlen=30)
        self._marked: queue.Queue[str | None] = queue.Queue()
        self.process = subprocess.Popen(
            command,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
            # Set in the child before it runs anything, so every thread it starts stays on these CPUs.
            preexec_fn=(lambda: os.sched_setaffinity(0, cpus)) if cpus else None,
        )
        threading.Thread(target=self._read, name=f"{name}-output", daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout or ():
            self.tail.append(line.rstrip())
            if any(marker in line for marker in self.markers):
                self._marked.put(line)
        self._marked.put(None)

    def wait_for(self, timeout: float) -> str:
        """The next marker line; BenchError if the process ends or `timeout` passes first."""
        try:
            line = self._marked.get(timeout=timeout)
        except queue.Empty:
            raise BenchError(
                f"{self.name}: no {' or '.join(self.markers)!r} within {timeout:g}s{self.output()}"
            ) from None
        if line is None:
            raise BenchError(f"{self.name} exited ({self.process.wait()}){self.output()}")
        return line

    def output(self) -> str:
        return "".join(f"\n  {line}" for line in self.tail)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Signal the process, then kill it if it has not ended within STOP_TIMEOUT."""
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_TIMEOUT)


@dataclass(frozen=True)
class ServerPlan:
    """How to start one server: its ASGI application, environment and app dir, which Python runs it, from where,
    whether the server runs the application's lifespan (the peers' session managers start there), and under
    which ASGI server in how many worker processes (uvicorn, one, unless said)."""

    app: str
    env: dict[str, str]
    app_dir: str | None = None
    python: str = PYTHON
    cwd: Path = ROOT
    lifespan: bool = False
    launch: Launch = UVICORN


class Server(Child):
    """One server on a free loopback port. uvicorn is given port 0 and its start-up line names the port it got;
    it is ready once every worker process has logged its start. granian and daphne are given a free port and are
    ready once the application answers its health check."""

    def __init__(self, name: str, plan: ServerPlan, cpus: set[int] | None = None) -> None:
        self.launch = plan.launch
        self.port = 0 if self.launch.kind == "uvicorn" else asgi_servers.free_port()
        command = asgi_servers.command(plan.python, plan.app, plan.app_dir, plan.lifespan, self.launch, self.port)
        markers = (READY, WORKER_STARTED) if self.launch.kind == "uvicorn" else ()
        super().__init__(name, command, plan.env, markers, cpus, plan.cwd)

    def wait_ready(self, timeout: float) -> None:
        if self.launch.kind == "uvicorn":
            self._wait_uvicorn(timeout)
        else:
            self._wait_health(timeout)

    def _wait_uvicorn(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        started = 0
        while not self.port or started < self.launch.workers:
            line = self.wait_for(max(0.1, deadline - time.monotonic()))
            if WORKER_STARTED in line:
                started += 1
            elif READY in line:
                found = re.search(r":(\d+)", line.split(READY, 1)[1])
                if found is None:
                    raise BenchError(f"{self.name}: no port in uvicorn's start-up line{self.output()}")
                self.port = int(found.group(1))

    def _wait_health(self, timeout: float) -> None:
        """Ask for the health check until it answers 200: a bounded loop, which ends early if the server exits."""
        deadline = time.monotonic() + timeout
        while not asgi_servers.answers_health(self.port, max(0.1, min(2.0, deadline - time.monotonic()))):
            if time.monotonic() >= deadline:
                raise BenchError(
                    f"{self.name}: {asgi_servers.HEALTH} did not answer within {timeout:g}s{self.output()}"
                )
            try:
                code = self.process.wait(HEALTH_POLL)
            except subprocess.TimeoutExpired:
                continue
            raise BenchError(f"{self.name} exited ({code}){self.output()}")

    def url(self, path: str) -> str:
        scheme = "ws" if path.endswith(("/ws", "-ws")) else "http"
        return f"{scheme}://127.0.0.1:{self.port}{path}"

    def cpu_seconds(self) -> float:
        """User plus system CPU time so far of the server's process and its worker processes."""
        return asgi_servers.tree_cpu_seconds(self.process.pid)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """Stop the server, then any worker process its parent left behind."""
        alive = self.process.poll() is None
        workers = (
            {pid: asgi_servers.started_at(pid) for pid in asgi_servers.descendants(self.process.pid)} if alive else {}
        )
        super().stop(sig)
        for pid, started in workers.items():
            if asgi_servers.started_at(pid) == started:
                with suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


@dataclass(frozen=True)
class Workload:
    """One load.py or fanout.py run against one server."""

    server: str
    path: str
    sessions: int
    calls: int = 0
    warmup: int = 0
    modern: bool = False
    method: str = "call"
    tool: str = "add"
    arguments: JsonObject = field(default_factory=lambda: dict(ADD_ARGUMENTS))
    also: tuple[str, ...] = ()  # more servers a fan-out spreads its sessions over


@dataclass
class Sample:
    """What one run measured; `failure` instead when it could not run."""

    ops_per_s: float = 0.0
    p50_ms: float = 0.0
    p99_ms: float = 0.0
    cpu_us_per_op: float = 0.0
    errors: int = 0
    missed: int = 0  # fan-out sessions that were not told
    failure: str = ""
    skipped: str = ""  # why the server this run needed was not there (a peer not installed, an old tree not run)


@dataclass(frozen=True)
class Target:
    """A budget: a ratio at least / at most `value`, or an absolute figure at most `value`."""

    kind: str  # "ratio>=", "ratio<=", "max"
    value: float
    every_run: bool = False

    def meets(self, figure: float) -> bool:
        return figure >= self.value if self.kind == "ratio>=" else figure <= self.value

    def text(self, unit: str) -> str:
        if self.kind == "max":
            return f"≤{self.value:g} {unit}"
        sign = "≥" if self.kind == "ratio>=" else "≤"
        return f"{sign}{self.value:g}x" + (", every run" if self.every_run else "")


@dataclass(frozen=True)
class Row:
    """One line of the table: `ours` against `reference` (None for an absolute target) on `metric`."""

    key: str
    title: str
    metric: str  # "ops/s", "p50 ms", "p99 ms", "µs/call"
    ours: str
    reference: str | None
    target: Target | None


@dataclass(frozen=True)
class Scale:
    reps: int
    single: int
    many: int
    orm: int
    listing: int


def workloads(scale: Scale) -> dict[str, Workload]:
    """Every measured configuration, by name; a row compares two of them (or judges one alone)."""

    def add(server: str, path: str, sessions: int, modern: bool = False) -> Workload:
        calls = scale.single if sessions == 1 else scale.many
        return Workload(server, path, sessions, calls, warmup=max(5, 300 // sessions), modern=modern)

    def orm(server: str, path: str, sessions: int = 32, tool: str = ORM_TOOL) -> Workload:
        calls = scale.orm if sessions > 1 else scale.orm * 8
        return Workload(server, path, sessions, calls, warmup=3, tool=tool, arguments=dict(ORM_ARGUMENTS))

    found: dict[str, Workload] = {}
    for transport, ours, bare in (("ws", "/mcp/ws", "/mcp/ws"), ("http", "/mcp", "/mcp")):
        for sessions in (1, 32):
            found[f"add-{transport}-{sessions}"] = add("project", ours, sessions)
            found[f"add-{transport}-{sessions}-bare"] = add("bare", bare, sessions)
    for sessions in (1, 32):
        found[f"add-modern-{sessions}"] = add("project", "/mcp", sessions, modern=True)
        found[f"add-modern-{sessions}-bare"] = add("bare", "/mcp", sessions, modern=True)
    for transport, path in (("ws", "/mcp/audited-ws"), ("http", "/mcp/audited")):
        for sessions in (1, 32):
            found[f"add-{transport}-{sessions}-audited"] = add("bare-audited", path, sessions)
    for peer in PEERS:
        for sessions in (1, 32):
            found[f"add-http-{sessions}-{peer}"] = add(peer, "/mcp", sessions)
        found[f"orm-http-{peer}"] = orm(peer, "/mcp")
    found.update(server_workloads(found))
    for key in ("add-ws-32", "add-ws-1", "add-http-1"):
        found[f"{key}-audit-off"] = replace(found[key], server="project-audit-off")
        found[f"{key}-audit-batched"] = replace(found[key], server="project-audit-batched")
    found["orm-ws"] = orm("project", "/mcp/ws")
    found["orm-ws-bare"] = orm("bare", "/mcp/orm-ws")
    found["orm-http"] = orm("project", "/mcp")
    found["orm-http-bare"] = orm("bare", "/mcp/orm")
    found["orm-ws-1"] = orm("project", "/mcp/ws", 1)
    found["orm-ws-1-bare"] = orm("bare", "/mcp/orm-ws", 1)
    found["orm-http-1"] = orm("project", "/mcp", 1)
    found["orm-http-1-bare"] = orm("bare", "/mcp/orm", 1)
    for sessions in (1, 32):
        found[f"sync-ws-{sessions}"] = orm("project", "/mcp/ws", sessions, SYNC_ORM_TOOL)
        found[f"sync-http-{sessions}"] = orm("project", "/mcp", sessions, SYNC_ORM_TOOL)
    for key in ("sync-ws-1", "sync-http-1"):
        found[f"{key}-audit-batched"] = replace(found[key], server="project-audit-batched")
    for transport, path in (("ws", "/mcp/ws"), ("http", "/mcp")):
        found[f"list-{transport}"] = Workload("project-1000", path, 1, scale.listing, warmup=5, method="list")
    found["fanout-1"] = Workload("fanout-a", "/mcp/ws", FANOUT_SESSIONS)
    found["fanout-2"] = Workload("fanout-a", "/mcp/ws", FANOUT_SESSIONS, also=("fanout-b",))
    return found


def server_workloads(found: dict[str, Workload]) -> dict[str, Workload]:
    """The ``servers`` rows' loads: the project's add loads, on each other server configuration."""
    return {
        f"{key}@{variant}": replace(found[key], server=f"server-{variant}")
        for variant, chosen in VARIANTS.items()
        for transport in chosen.transports
        for key in (f"add-{transport}-1", f"add-{transport}-32")
    }


PEERS = {"sdk": "the official SDK (mcp)", "fastmcp": "FastMCP"}


def peer_rows(peer: str, name: str) -> list[Row]:
    """This project against a peer server: add over HTTP at 1 and 32 sessions, list_orders, CPU per add.

    The official SDK's rows carry the targets set for this project (at least 1.2x its calls at 1 session and
    2x at 32, at most its CPU per call); FastMCP's are shown for comparison."""
    sdk = peer == "sdk"
    return [
        Row(peer, f"add, HTTP legacy, 1 session / {name}", "ops/s", "add-http-1", f"add-http-1-{peer}",
            Target("ratio>=", 1.2) if sdk else None),
        Row(peer, f"add, HTTP legacy, 32 sessions / {name}", "ops/s", "add-http-32", f"add-http-32-{peer}",
            Target("ratio>=", 2) if sdk else None),
        Row(peer, f"{ORM}, HTTP legacy, 32 sessions / {name}", "ops/s", "orm-http", f"orm-http-{peer}", None),
        Row(peer, f"server CPU per add, 32 sessions / {name}", "µs/call", "add-http-32", f"add-http-32-{peer}",
            Target("ratio<=", 1) if sdk else None),
        # A peer keeps no audit trail: what one session gets when rows wait behind the answers, and the most
        # any server gets while committing a row before each answer (the bare consumer plus that row).
        Row(peer, f"add, HTTP legacy, 1 session, audit rows batched / {name}", "ops/s", "add-http-1-audit-batched",
            f"add-http-1-{peer}", None),
        Row(peer, f"bare + audit row, HTTP legacy, 1 session / {name}", "ops/s", "add-http-1-audited",
            f"add-http-1-{peer}", None),
    ]  # fmt: skip


TODAY = "uvicorn today"
TRANSPORTS = {"ws": "WebSocket", "http": "HTTP legacy"}


def server_rows(variant: str) -> list[Row]:
    """The project under another server configuration against uvicorn as it runs the project today: add at 1 and
    32 sessions and the server's CPU per add at 32, on each transport the configuration changes. No targets:
    these rows choose the server that docs/deployment.md recommends."""
    chosen = VARIANTS[variant]
    rows: list[Row] = []
    for key in chosen.transports:
        for sessions, title in ((1, "1 session"), (32, "32 sessions")):
            ours = f"add-{key}-{sessions}"
            rows.append(
                Row(
                    "servers",
                    f"{chosen.title}: add, {TRANSPORTS[key]}, {title} / {TODAY}",
                    "ops/s",
                    f"{ours}@{variant}",
                    ours,
                    None,
                )
            )
        rows.append(
            Row(
                "servers",
                f"{chosen.title}: server CPU per add, {TRANSPORTS[key]}, 32 sessions / {TODAY}",
                "µs/call",
                f"add-{key}-32@{variant}",
                f"add-{key}-32",
                None,
            )
        )
    return rows


AT_LEAST_06 = Target("ratio>=", 0.6)
AT_LEAST_08 = Target("ratio>=", 0.8)
WITHIN_2X = Target("ratio<=", 2)
WITHIN_10 = Target("ratio>=", 0.9)
ORM = f"{ORM_TOOL} (20 rows)"
SYNC_ORM = f"{SYNC_ORM_TOOL} (the same 20 rows, sync @tool callable)"
LISTING = f"tools/list, {EXTRA_TOOLS:,} tools, whole listing"
FAN = f"list_changed to {FANOUT_SESSIONS:,} WebSocket sessions on Redis"
ROWS = [
    Row("add-ws", "add, WebSocket, 1 session", "ops/s", "add-ws-1", "add-ws-1-bare", None),
    Row("add-ws", "add, WebSocket, 32 sessions", "ops/s", "add-ws-32", "add-ws-32-bare", Target("ratio>=", 0.6, True)),
    Row("add-http", "add, HTTP legacy, 1 session", "ops/s", "add-http-1", "add-http-1-bare", AT_LEAST_08),
    Row("add-http", "add, HTTP legacy, 32 sessions", "ops/s", "add-http-32", "add-http-32-bare", AT_LEAST_06),
    Row("add-modern", "add, HTTP 2026-07-28, 1 session", "ops/s", "add-modern-1", "add-modern-1-bare", AT_LEAST_08),
    Row("add-modern", "add, HTTP 2026-07-28, 32 sessions", "ops/s", "add-modern-32", "add-modern-32-bare", AT_LEAST_06),
    Row("cpu", "server CPU per add, HTTP legacy, 32 sessions", "µs/call", "add-http-32", "add-http-32-bare", WITHIN_2X),
    Row("orm", f"{ORM}, WebSocket, 32 sessions", "ops/s", "orm-ws", "orm-ws-bare", AT_LEAST_08),
    Row("orm", f"{ORM}, HTTP legacy, 32 sessions", "ops/s", "orm-http", "orm-http-bare", AT_LEAST_08),
    Row("orm", f"{ORM}, WebSocket, 1 session", "ops/s", "orm-ws-1", "orm-ws-1-bare", Target("ratio>=", 0.9)),
    Row("orm", f"{ORM}, HTTP legacy, 1 session", "ops/s", "orm-http-1", "orm-http-1-bare", Target("ratio>=", 0.9)),
    *(
        Row("sync", f"{SYNC_ORM}, {transport}, {sessions} session{'s' if sessions > 1 else ''}", "ops/s",
            f"sync-{key}-{sessions}", f"orm-{key}{'-1' if sessions == 1 else ''}-bare",
            AT_LEAST_08 if sessions > 1 else Target("ratio>=", 0.9))
        for transport, key in (("WebSocket", "ws"), ("HTTP legacy", "http"))
        for sessions in (32, 1)
    ),
    *(
        # The bare consumer keeps no audit trail: the same call with its row waiting behind the answer.
        Row("sync", f"the same, {transport}, 1 session, audit rows batched", "ops/s", f"sync-{key}-1-audit-batched",
            f"orm-{key}-1-bare", None)
        for transport, key in (("WebSocket", "ws"), ("HTTP legacy", "http"))
    ),
    Row("list", f"{LISTING}, WebSocket", "p50 ms", "list-ws", None, Target("max", 3)),
    Row("list", f"{LISTING}, HTTP legacy", "p50 ms", "list-http", None, Target("max", 5)),
    Row("audit", "add, WebSocket, 32 sessions, audit on / off", "ops/s", "add-ws-32", "add-ws-32-audit-off", WITHIN_10),
    Row(
        "audit",
        "the same, audit rows batched (AUDIT_FLUSH_SECONDS 0.5) / off",
        "ops/s",
        "add-ws-32-audit-batched",
        "add-ws-32-audit-off",
        WITHIN_10,
    ),
    *(
        # One agent's sequential calls, as the project served them before each row was committed before its
        # answer (a commit older than that setting batches by default): the now / then cell compares like with like.
        Row("audit", f"add, {transport}, 1 session, audit rows batched / off", "ops/s", f"{key}-audit-batched",
            f"{key}-audit-off", None)
        for transport, key in (("WebSocket", "add-ws-1"), ("HTTP legacy", "add-http-1"))
    ),
    *(
        Row("audited", f"add, {transport}, {title} / bare + audit row", "ops/s", ours, f"{ours}-audited", AT_LEAST_06)
        for transport, key in (("WebSocket", "ws"), ("HTTP legacy", "http"))
        for title, ours in (("1 session", f"add-{key}-1"), ("32 sessions", f"add-{key}-32"))
    ),
    *(row for peer, name in PEERS.items() for row in peer_rows(peer, name)),
    *(row for variant in VARIANTS for row in server_rows(variant)),
    Row("fanout", f"{FAN}, 1 worker", "p99 ms", "fanout-1", None, Target("max", 100)),
    Row("fanout", f"{FAN}, 2 workers", "p99 ms", "fanout-2", None, Target("max", 150)),
]  # fmt: skip
ROW_KEYS = sorted({row.key for row in ROWS})
OPT_IN = ("fanout", "servers")  # rows run only when asked for: --fanout, --servers, or by name in --only


@dataclass
class Session:
    """The servers and what the runs need to reach them: alice's token (``tokens`` for servers on a database of
    their own), and why a server that is not there is missing."""

    token: str
    timeout: float
    servers: dict[str, Server]
    trigger: str = ""
    tokens: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


@dataclass
class Databases:
    """alice's token, the database files by use, and the settings that matter as every server runs them."""

    token: str
    files: dict[str, Path]
    settings: str


def build_databases(
    directory: Path, env: dict[str, str], lists: bool, fans: bool, root: Path = ROOT, name: str = "db"
) -> Databases:
    """The demo's database built with the demo's steps (those of the tree at ``root``), and copies for the
    1,000-tool listing and the fan-out (which flips a tool on and off)."""
    base = directory / f"{name}.sqlite3"

    def manage(*arguments: str, database: Path = base, script: str = "manage.py") -> str:
        command = [PYTHON, script, *arguments]
        done = subprocess.run(
            command,
            cwd=root,
            env={**env, "BENCH_DB": str(database)},
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
        )
        if done.returncode:
            shown = shlex.join([Path(script).name, *arguments])
            raise BenchError(f"{shown} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return done.stdout

    manage("migrate", "--noinput", "-v", "0")
    manage("mcp_sync", "--enable")
    manage("seed_demo")
    manage("shell", "--no-imports", "-c", GRANT_LINE)
    token = manage("mcp_token", "create", "alice").strip().splitlines()[-1]
    settings = manage("shell", "--no-imports", "-c", SETTINGS_LINE)
    files = {"base": base}
    if lists:
        files["list"] = directory / f"{name}-list.sqlite3"
        shutil.copyfile(base, files["list"])
        manage(str(EXTRA_TOOLS), database=files["list"], script=str(root / "bench" / "make_tools.py"))
    if fans:
        files["fanout"] = directory / f"{name}-fanout.sqlite3"
        shutil.copyfile(base, files["fanout"])
    return Databases(token, files, settings.strip().splitlines()[-1])


PROJECT_SERVERS = ("project", "project-audit-off", "project-audit-batched", "project-1000")
PROJECT_APP = "project.asgi:application"
THEN = "then-"  # the servers of the project at --against's commit: THEN + a name in PROJECT_SERVERS


def project_plans(env: dict[str, str], files: dict[str, Path], root: Path = ROOT) -> dict[str, ServerPlan]:
    """The project's servers on the databases in ``files``, run from the tree at ``root``."""
    project = PROJECT_APP
    base = {**env, "BENCH_DB": str(files["base"])}
    plans = {
        "project": ServerPlan(project, base, cwd=root),
        "project-audit-off": ServerPlan(project, {**base, "BENCH_AUDIT": "0"}, cwd=root),
        "project-audit-batched": ServerPlan(project, {**base, "BENCH_AUDIT_FLUSH_SECONDS": "0.5"}, cwd=root),
    }
    if "list" in files:
        plans["project-1000"] = ServerPlan(project, {**env, "BENCH_DB": str(files["list"])}, cwd=root)
    return plans


def server_plans(
    needed: set[str], env: dict[str, str], files: dict[str, Path], redis_url: str, peer_sessions: str
) -> dict[str, ServerPlan]:
    """For each server a run needs (but the project at another commit's): how to start it."""
    base = {**env, "BENCH_DB": str(files["base"])}
    peers = {**base, "BENCH_PEER_SESSIONS": peer_sessions}
    plans = {
        **project_plans(env, files),
        "bare": ServerPlan("baseline_orm:application", base, "bench"),
        "bare-audited": ServerPlan("baseline_audited:application", base, "bench"),
        "sdk": ServerPlan("peer_sdk:application", peers, "bench", lifespan=True),
        "fastmcp": ServerPlan("peer_fastmcp:application", peers, "bench", str(PEERS_PYTHON), lifespan=True),
        **{f"server-{variant}": ServerPlan(PROJECT_APP, base, launch=VARIANTS[variant].launch) for variant in VARIANTS},
    }
    if "fanout" in files:
        redis = {**env, "BENCH_DB": str(files["fanout"]), "REDIS_URL": redis_url, "BENCH_REDIS_NO_TIMEOUT": "1"}
        plans["fanout-a"] = ServerPlan("project.asgi:application", redis)
        plans["fanout-b"] = ServerPlan("project.asgi:application", redis)
    return {name: plan for name, plan in plans.items() if name in needed}


def missing_peers(needed: set[str]) -> dict[str, str]:
    """Why each peer server or server configuration needed cannot run here, if it cannot."""
    missing = {
        f"server-{variant}": why
        for variant, chosen in VARIANTS.items()
        if f"server-{variant}" in needed and (why := asgi_servers.missing(chosen))
    }
    if "sdk" in needed and importlib.util.find_spec("mcp") is None:
        missing["sdk"] = "skipped: the official SDK (mcp) is not installed: make venv-dev"
    if "fastmcp" in needed and not PEERS_PYTHON.exists():
        missing["fastmcp"] = "skipped: FastMCP is not installed: make bench-peers builds .venv-bench-peers"
    return missing


def measure(session: Session, workload: Workload, profile_to: Path | None = None) -> Sample:
    """One run of `workload`, with the server's CPU time read around the measured phase."""
    if workload.server in session.skipped:
        return Sample(skipped=session.skipped[workload.server])
    server = session.servers[workload.server]
    version = MODERN_VERSION if workload.modern else LEGACY_VERSION
    options = SessionOptions(
        url=server.url(workload.path),
        token=session.tokens.get(workload.server, session.token),
        protocol_version=version,
        modern=workload.modern,
        timeout=session.timeout,
    )
    try:
        if workload.server.startswith("fanout"):
            servers = [options, *(replace(options, url=session.servers[n].url(workload.path)) for n in workload.also)]
            figures = run(fanout.measure(servers, workload.sessions, 50, session.trigger, "GO"))
            missed = workload.sessions - figures["received"] if not figures["trigger_exit"] else workload.sessions
            return Sample(p50_ms=figures["p50_ms"], p99_ms=figures["p99_ms"], missed=missed)
        plan = load.Plan(
            workload.method, workload.tool, workload.arguments, workload.warmup, workload.calls, session.timeout
        )
        cpu: list[float] = []
        with profiled(server, profile_to):
            figures = run(
                load.measure(
                    options,
                    plan,
                    workload.sessions,
                    on_start=lambda: cpu.append(server.cpu_seconds()),
                    on_end=lambda: cpu.append(server.cpu_seconds()),
                )
            )
    except BenchError as exc:
        return Sample(failure=str(exc).splitlines()[0][:120])
    per_op = (cpu[1] - cpu[0]) * 1e6 / figures["ops"] if len(cpu) == 2 and figures["ops"] else 0.0
    return Sample(figures["ops_per_s"], figures["p50_ms"], figures["p99_ms"], per_op, figures["errors"])


@contextmanager
def profiled(server: Server, path: Path | None) -> Iterator[None]:
    """py-spy recording `server` for the duration of the block, written to `path` (nothing when None)."""
    if path is None:
        yield
        return
    command = [py_spy() or "py-spy", "record", "--pid", str(server.process.pid), "--rate", "200"]
    command += ["--format", "speedscope", "--output", str(path), "--nonblocking"]
    recorder = Child(f"py-spy {path.name}", command, dict(os.environ), ("Sampling process",))
    try:
        recorder.wait_for(30)
        yield
    finally:
        # py-spy writes its file when interrupted.
        recorder.stop(signal.SIGINT)
    if recorder.process.returncode:
        raise BenchError(f"py-spy ended with {recorder.process.returncode}{recorder.output()}")


def py_spy() -> str | None:
    beside = Path(PYTHON).parent / "py-spy"
    return str(beside) if beside.exists() else shutil.which("py-spy")


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def figure(sample: Sample, metric: str) -> float:
    return {
        "ops/s": sample.ops_per_s,
        "p50 ms": sample.p50_ms,
        "p99 ms": sample.p99_ms,
        "µs/call": sample.cpu_us_per_op,
    }[metric]


UNITS = {"ops/s": "ops/s", "p50 ms": "ms p50", "p99 ms": "ms p99", "µs/call": "µs/call"}


def number(value: float, metric: str) -> str:
    if metric == "ops/s" or (metric == "µs/call" and value >= 100):
        return f"{value:,.0f}"
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def cell(samples: list[Sample], metric: str) -> str:
    """The median, the unit, then every run's figure in order."""
    values = [figure(sample, metric) for sample in samples]
    runs = " / ".join(number(value, metric) for value in values)
    return f"{number(median(values), metric)} {UNITS[metric]}" + (f" ({runs})" if len(values) > 1 else "")


def judge(row: Row, ours: list[Sample], reference: list[Sample] | None) -> list[str]:
    """The row's cells after its title: ours, the reference, the ratio, the target and the verdict."""
    failed = [sample.failure for sample in [*ours, *(reference or [])] if sample.failure]
    skipped = [sample.skipped for sample in [*ours, *(reference or [])] if sample.skipped]
    target = row.target.text(UNITS[row.metric]) if row.target else "-"
    if skipped:
        return ["-", "-", "-", target, skipped[0]]
    if failed:
        return ["-", "-", "-", target, f"could not run: {failed[0]}"]
    ratios: list[float] = []
    if reference is not None:
        ratios = [
            figure(a, row.metric) / (figure(b, row.metric) or float("nan"))
            for a, b in zip(ours, reference, strict=True)
        ]
    judged = ratios if reference is not None else [figure(sample, row.metric) for sample in ours]
    verdict = "(no target)"
    if row.target is not None:
        met = sum(row.target.meets(value) for value in judged)
        ok = met == len(judged) if row.target.every_run else row.target.meets(median(judged))
        verdict = ("met" if ok else "MISSED") + (f" ({met}/{len(judged)} runs)" if len(judged) > 1 else "")
    errors = sum(sample.errors for sample in [*ours, *(reference or [])])
    missed = sum(sample.missed for sample in ours)
    if errors:
        verdict += f", {errors} errors"
    if missed:
        verdict += f", MISSED: {missed} sessions not told"
    ratio = "-"
    if ratios:
        runs = " / ".join(f"{value:.2f}" for value in ratios)
        ratio = f"{median(ratios):.2f}x" + (f" ({runs})" if len(ratios) > 1 else "")
    reference_cell = cell(reference, row.metric) if reference is not None else "-"
    return [cell(ours, row.metric), reference_cell, ratio, target, verdict]


def then_cell(row: Row, ours: list[Sample], then: list[Sample] | None) -> str:
    """The now / then ratio of this project's figure (median, then each run's), or why there is none."""
    if then is None or any(sample.failure or sample.skipped for sample in ours):
        return "-"
    missing = [
        sample.skipped or f"could not run: {sample.failure}" for sample in then if sample.skipped or sample.failure
    ]
    if missing:
        return missing[0]
    ratios = [figure(a, row.metric) / (figure(b, row.metric) or float("nan")) for a, b in zip(ours, then, strict=True)]
    runs = " / ".join(f"{value:.2f}" for value in ratios)
    text = f"{median(ratios):.2f}x" + (f" ({runs})" if len(ratios) > 1 else "")
    errors = sum(sample.errors for sample in then)
    return text + (f", {errors} errors then" if errors else "")


HEADER = ["measurement", "this project: median (runs)", "reference: median (runs)", "ratio", "target", "result"]


def table(lines: list[list[str]], markdown: bool, header: list[str] = HEADER) -> str:
    if markdown:
        rows = [header, ["---"] * len(header), *lines]
        return "\n".join("| " + " | ".join(cells) + " |" for cells in rows)
    widths = [max(len(cells[i]) for cells in [header, *lines]) for i in range(len(header))]
    rule = "-+-".join("-" * width for width in widths)
    render = [
        " | ".join(text.ljust(width) for text, width in zip(cells, widths, strict=True)).rstrip() for cells in lines
    ]
    return "\n".join([" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)).rstrip(), rule, *render])


def commit() -> str:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True)
    return (done.stdout.strip() or "unknown") + (" (uncommitted changes)" if dirty.stdout.strip() else "")


def load_average() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def redis_reachable(url: str) -> None:
    import redis

    try:
        redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2).ping()
    except redis.RedisError as exc:
        raise BenchError(f"--fanout needs Redis at {url}: {exc}") from exc


def server_env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key not in ("REDIS_URL", "DATABASE_URL")}
    env.update(DJANGO_SETTINGS_MODULE="bench.settings_tmpdb", DJANGO_DEBUG="0", PYTHONDONTWRITEBYTECODE="1")
    return env


def pinning() -> tuple[set[int], set[int]] | None:
    """(server CPUs, client CPUs): one CPU for the server under test and another for the clients, when the
    machine has two or more. Left to the scheduler, a server and its client sometimes share a CPU and
    sometimes not, which swings a bare consumer's throughput by 2-3x from run to run."""
    available = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return ({available[0]}, {available[1]}) if len(available) >= 2 else None


def start_servers(
    plans: dict[str, ServerPlan], servers: dict[str, Server], cpus: set[int] | None, optional: set[str]
) -> dict[str, str]:
    """Start every server at once (each is added to `servers` as it starts), then wait for each to listen.

    A server in ``optional`` that does not start is stopped and left out: the result says why, by name. Any
    other raises BenchError. Servers run on ``cpus``, except the fan-out pair, which must be free to use a CPU
    each."""
    for name, plan in plans.items():
        servers[name] = Server(name, plan, None if name.startswith("fanout") else cpus)
    deadline = time.monotonic() + START_TIMEOUT
    missing: dict[str, str] = {}
    for name, server in list(servers.items()):
        try:
            server.wait_ready(max(0.1, deadline - time.monotonic()))
        except BenchError as exc:
            if name not in optional:
                raise
            server.stop()
            del servers[name]
            missing[name] = f"could not run: {first_and_last(str(exc))}"
    return missing


def trigger_command(env: dict[str, str], files: dict[str, Path], redis_url: str) -> str:
    """The fan-out trigger: flip_tool.py on the fan-out database and Redis, printing GO <monotonic ns>."""
    variables = {
        "DJANGO_SETTINGS_MODULE": env["DJANGO_SETTINGS_MODULE"],
        "DJANGO_DEBUG": "0",
        "BENCH_DB": str(files.get("fanout", "")),
        "REDIS_URL": redis_url,
    }
    assignments = " ".join(f"{key}={shlex.quote(value)}" for key, value in variables.items())
    return f"env {assignments} {shlex.quote(PYTHON)} {shlex.quote(str(BENCH / 'flip_tool.py'))} --warm"


@dataclass
class Against:
    """The project at another commit: its workloads by the workload of ours they shadow, the label of the
    commit, and once prepared its servers' plans and token (or why it cannot run)."""

    commit: str
    shadows: dict[str, str]
    label: str = ""
    plans: dict[str, ServerPlan] = field(default_factory=dict)
    token: str = ""
    failure: str = ""


def first_and_last(text: str, limit: int = 160) -> str:
    """The first line of an error and, when it has more, its last (where a traceback names the cause)."""
    lines = [line.strip() for line in text.splitlines() if line.strip()] or [""]
    return (lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}")[:limit]


def git(*arguments: str) -> str:
    done = subprocess.run(["git", *arguments], cwd=ROOT, capture_output=True, text=True, timeout=COMMAND_TIMEOUT)
    if done.returncode:
        raise BenchError(f"git {' '.join(arguments)}: {(done.stderr or done.stdout).strip()}")
    return done.stdout.strip()


@contextmanager
def detached_worktree(commit: str, path: Path) -> Iterator[Path]:
    """A detached git worktree of ``commit`` at ``path``, removed (and unregistered) when the block ends."""
    git("worktree", "add", "--detach", "--quiet", str(path), commit)
    try:
        yield path
    finally:
        try:
            git("worktree", "remove", "--force", str(path))
        except BenchError:
            shutil.rmtree(path, ignore_errors=True)
            git("worktree", "prune")


def prepare_against(against: Against, stack: ExitStack, directory: Path, env: dict[str, str], lists: bool) -> None:
    """Check out ``against.commit`` and build its database with its own steps; a failure is kept, not raised."""
    try:
        against.label = git("log", "-1", "--format=%h %s", against.commit, "--")[:72]
        tree = stack.enter_context(detached_worktree(against.commit, directory / "then"))
        built = build_databases(directory, env, lists, False, root=tree, name="then")
    except (BenchError, OSError, subprocess.SubprocessError) as exc:
        against.failure = f"could not run: {first_and_last(str(exc))}"
        return
    against.token = built.token
    against.plans = {THEN + name: plan for name, plan in project_plans(env, built.files, tree).items()}


def schedule(rows: list[Row], configurations: dict[str, Workload], against: Against | None) -> list[str]:
    """The workloads of one run, in row order, each once; with ``against``, each of the project's followed by the
    same load on the project at the other commit (added to ``configurations`` and ``against.shadows``)."""
    order: list[str] = []
    for row in rows:
        for name in (row.ours, row.reference):
            if name is None or name in order:
                continue
            order.append(name)
            server = configurations[name].server
            # The bench's own sync tool is installed by this tree's settings only: an older tree has no such tool.
            own_tool = configurations[name].tool == SYNC_ORM_TOOL
            if against is not None and name == row.ours and server in PROJECT_SERVERS and not own_tool:
                shadow = f"{name}@then"
                configurations[shadow] = replace(configurations[name], server=THEN + server)
                against.shadows[name] = shadow
                order.append(shadow)
    return order


def report(
    rows: list[Row], samples: dict[str, list[Sample]], against: Against | None
) -> tuple[list[str], list[list[str]]]:
    """The table's header and lines: each row judged, and with ``against`` its now / then cell."""
    lines = [
        [row.title, *judge(row, samples[row.ours], samples[row.reference] if row.reference else None)] for row in rows
    ]
    if against is None:
        return HEADER, lines
    for line, row in zip(lines, rows, strict=True):
        shadow = against.shadows.get(row.ours)
        line.append(then_cell(row, samples[row.ours], samples[shadow] if shadow else None))
    return [*HEADER, f"now / then ({against.label.split()[0] if against.label else against.commit})"], lines


def selected(key: str, args: argparse.Namespace) -> bool:
    """Whether the rows of ``key`` run: those named by --only, else the default set and those opted into, less
    what the production shape leaves out."""
    if args.shape == "production" and key in shape.LEFT_OUT:
        return False
    return key in args.only if args.only else key not in OPT_IN or bool(getattr(args, key))


def production_shape(stack: ExitStack, env: dict[str, str], args: argparse.Namespace) -> None:
    """Point ``env`` at a fresh PostgreSQL database and an emptied Redis database, both cleaned up with ``stack``."""
    env["DATABASE_URL"] = stack.enter_context(shape.postgres_database(args.postgres))
    env["REDIS_URL"] = stack.enter_context(shape.flushed_redis(args.production_redis))
    left_out = ", ".join(f"{key} ({why})" for key, why in shape.LEFT_OUT.items())
    print(
        f"production shape: PostgreSQL {env['DATABASE_URL']}, Redis {env['REDIS_URL']} for the channel layer and "
        f"the cache, {shape.WORKERS} worker processes per server, servers and clients on any CPU; left out: {left_out}"
    )


def with_workers(plans: dict[str, ServerPlan], workers: int) -> dict[str, ServerPlan]:
    return {name: replace(plan, launch=replace(plan.launch, workers=workers)) for name, plan in plans.items()}


def print_missing(against: Against | None, skipped: dict[str, str], needed: set[str]) -> None:
    """What runs where the table cannot say: the other commit, the servers left out and why, uvicorn's choices."""
    if against is not None:
        print(f"against {against.label or against.commit}: {against.failure or 'its own tree and database'}")
    for name, why in sorted(skipped.items()):
        print(f"{name}: {why}")
    if any(name.startswith("server-") for name in needed):
        print(f"{TODAY}, as the project's servers run (uvicorn's auto choices): {asgi_servers.uvicorn_auto()}")


def run_suite(args: argparse.Namespace) -> int:
    scale = Scale(args.reps, args.single, args.many, args.orm, args.listing)
    rows = [row for row in ROWS if selected(row.key, args)]
    production = args.shape == "production"
    configurations = workloads(scale)
    against = Against(args.against, {}) if args.against else None
    order = schedule(rows, configurations, against)
    needed = {configurations[name].server for name in order}
    needed |= {also for name in order for also in configurations[name].also}
    if args.profile is not None:
        needed.add("project")
        args.profile.mkdir(parents=True, exist_ok=True)
        if py_spy() is None:
            raise BenchError("--profile needs py-spy: .venv/bin/pip install py-spy")
    fans = any(name.startswith("fanout") for name in needed)
    if fans:
        redis_reachable(args.redis_url)

    print(f"commit {commit()}, Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load_average()}")
    env = server_env()
    servers: dict[str, Server] = {}
    with tempfile.TemporaryDirectory(prefix="mcp-bench-") as directory, ExitStack() as stack:
        try:
            started = time.monotonic()
            if production:
                production_shape(stack, env, args)
            lists = any(name.endswith("project-1000") for name in needed)
            built = build_databases(Path(directory), env, lists, fans)
            skipped = missing_peers(needed)
            plans = server_plans(needed - skipped.keys(), env, built.files, args.redis_url, args.peer_sessions)
            if against is not None:
                prepare_against(against, stack, Path(directory), env, lists)
                plans.update({name: plan for name, plan in against.plans.items() if name in needed})
                skipped.update({name: against.failure for name in needed if name.startswith(THEN) and against.failure})
            optional = {name for name in plans if name in PEERS or name.startswith((THEN, "server-"))}
            if production:
                plans = with_workers(plans, shape.WORKERS)
            # Two workers per server need both CPUs: in the production shape nothing is pinned.
            pinned = pinning() if args.pin and not production else None
            skipped.update(start_servers(plans, servers, pinned and pinned[0], optional))
            if pinned is not None:
                os.sched_setaffinity(0, pinned[1])
                print(f"servers on CPU {sorted(pinned[0])}, clients on CPU {sorted(pinned[1])}")
            print(
                f"database and {len(servers)} servers ready in {time.monotonic() - started:.1f}s "
                f"({built.settings} on every server)"
            )
            print_missing(against, skipped, needed)
            trigger = trigger_command(env, built.files, args.redis_url)
            tokens = {name: against.token for name in against.plans} if against is not None else {}
            session = Session(built.token, args.timeout, servers, trigger, tokens, skipped)
            samples: dict[str, list[Sample]] = {name: [] for name in order}
            for rep in range(scale.reps):
                for name in order:
                    samples[name].append(measure(session, configurations[name]))
                print(f"run {rep + 1}/{scale.reps} done, load average {load_average()}", flush=True)
            if args.profile is not None:
                for name in ("add-ws-32", "add-http-32"):
                    # Extra runs, not in the table (py-spy slows the server); three times the calls for more samples.
                    longer = replace(configurations[name], calls=configurations[name].calls * 3)
                    profile = measure(session, longer, profile_to=args.profile / f"{name}.speedscope.json")
                    if profile.failure:
                        print(f"warning: no profile of {name}: {profile.failure}")
                print(f"profiles of the project server during add at 32 sessions in {args.profile}/")
        finally:
            for server in servers.values():
                server.stop()
    header, lines = report(rows, samples, against)
    print(f"load average after {load_average()}")
    print(
        f"{scale.reps} interleaved runs; calls per session: add {scale.single} (1 session) / {scale.many} "
        f"(32 sessions), {ORM_TOOL} {scale.orm}, tools/list {scale.listing}; reference: bare Channels consumers "
        "(bench/baseline_orm.py) unless the row names another"
    )
    print(table(lines, args.markdown, header))
    return 0


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, help="runs of each measurement, interleaved (default 3; 1 with --quick)")
    parser.add_argument("--quick", action="store_true", help="one run of each with a third of the calls")
    parser.add_argument(
        "--only", type=lambda text: set(text.split(",")), help=f"comma-separated rows: {','.join(ROW_KEYS)}"
    )
    parser.add_argument("--fanout", action="store_true", help="add the list_changed fan-out rows (needs Redis)")
    parser.add_argument(
        "--servers",
        action="store_true",
        help="add the rows comparing ASGI servers (uvicorn's protocols, granian, daphne)",
    )
    parser.add_argument(
        "--redis-url",
        default=DEFAULT_REDIS,
        help=f"Redis for the fan-out rows (default {DEFAULT_REDIS}, a database of its own)",
    )
    parser.add_argument(
        "--shape",
        choices=("demo", "production"),
        default="demo",
        help="demo (default): SQLite, in-memory layer and cache, one process per server; production: PostgreSQL, "
        f"Redis, {shape.WORKERS} worker processes per server",
    )
    parser.add_argument(
        "--postgres",
        default=shape.DEFAULT_POSTGRES,
        metavar="URL",
        help=f"where --shape production creates its database (default {shape.DEFAULT_POSTGRES})",
    )
    parser.add_argument(
        "--production-redis",
        default=shape.DEFAULT_REDIS,
        metavar="URL",
        help=f"the Redis database --shape production uses and flushes (default {shape.DEFAULT_REDIS})",
    )
    parser.add_argument("--profile", type=Path, metavar="DIR", help="py-spy profiles of the project during add-32")
    parser.add_argument("--markdown", action="store_true", help="print the table as Markdown")
    parser.add_argument(
        "--against",
        metavar="COMMIT",
        help="also run the project at COMMIT (a detached worktree, its own database) and add a now / then column",
    )
    parser.add_argument(
        "--peer-sessions",
        choices=("stateful", "stateless"),
        default="stateful",
        help="how the SDK and FastMCP peers keep sessions (default stateful: their faster mode here)",
    )
    parser.add_argument(
        "--no-pin", dest="pin", action="store_false", help="leave servers and clients to the scheduler's choice of CPU"
    )
    parser.add_argument("--timeout", type=float, default=30.0, help="bound on every single wait, seconds")
    parser.add_argument("--single", type=int, help="calls per session at 1 session (default 1500)")
    parser.add_argument("--many", type=int, help="calls per session at 32 sessions (default 150)")
    parser.add_argument("--orm", type=int, help=f"{ORM_TOOL} calls per session (default 40)")
    parser.add_argument("--listing", type=int, help="whole tools/list listings (default 100)")
    args = parser.parse_args(argv)
    unknown = (args.only or set()) - set(ROW_KEYS)
    if unknown:
        parser.error(f"unknown rows {','.join(sorted(unknown))}; choose from {','.join(ROW_KEYS)}")
    if args.shape == "production":
        left_out = (args.only or set()) & shape.LEFT_OUT.keys()
        if left_out:
            parser.error(f"--shape production leaves out {','.join(sorted(left_out))}")
        if args.against or args.profile:
            parser.error("--against and --profile run in the demo's shape only")
    divisor = 3 if args.quick else 1
    args.reps = args.reps or (1 if args.quick else 3)
    args.single = args.single or 1500 // divisor
    args.many = args.many or 150 // divisor
    args.orm = args.orm or 40 // divisor
    args.listing = args.listing or 100 // divisor
    if min(args.reps, args.single, args.many, args.orm, args.listing) < 1:
        parser.error("--reps and the call counts must be at least 1")
    return args


def stop_on_sigterm(signum: int, frame: Any) -> None:
    # Unwinds through run_suite's finally, which stops the servers.
    raise SystemExit(128 + signum)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        return run_suite(args)
    except (BenchError, OSError, subprocess.SubprocessError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
