"""The cost of a call through each door, as ratios of runs measured side by side: the WSGI door (the Django
views of ``mcp_tools.urls`` under gunicorn) against the ASGI doors (the same views under uvicorn on Django's
plain ASGI handler, and the Channels routes under uvicorn), for the same call on the same database.

    python bench/doors.py                 # 3 interleaved runs
    python bench/doors.py --quick         # 1 run, a third of the calls

Beside them, the floor: ``baseline.py``'s bare HTTP consumer under uvicorn against the same reduced to a WSGI
application (``baseline_wsgi.py``) under gunicorn, which is what the servers alone cost apart.

Every server is one worker process on the same CPU; the clients run on another. gunicorn runs a sync worker
for one session and a gthread worker (8 threads) for 8 sessions; uvicorn serves both counts with its one
event loop. Server CPU per call counts the gunicorn worker (its master only supervises).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import suite
from rpc import BenchError

GUNICORN_READY = "Listening at: "


class Gunicorn(suite.Server):
    """One gunicorn worker on a free loopback port (``:0``; gunicorn names the port it got)."""

    def __init__(self, name: str, app: str, env: dict[str, str], worker: list[str], cpus: set[int] | None) -> None:
        command = [suite.PYTHON, "-m", "gunicorn", app, "--bind", "127.0.0.1:0", "--workers", "1", *worker]
        command += ["--timeout", "120", "--log-level", "info"]
        suite.Child.__init__(self, name, command, env, GUNICORN_READY, cpus)
        self.port = 0

    def wait_ready(self, timeout: float) -> None:
        found = re.search(r":(\d+)", self.wait_for(timeout).split(GUNICORN_READY, 1)[1])
        if found is None:
            raise BenchError(f"{self.name}: no port in gunicorn's start-up line{self.output()}")
        self.port = int(found.group(1))

    def cpu_seconds(self) -> float:
        """The CPU time of the master and its worker (the worker does the work)."""
        total = 0.0
        for pid in [self.process.pid, *children(self.process.pid)]:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12])) / suite.CLOCK_TICKS
        return total


def children(pid: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


@dataclass(frozen=True)
class Pair:
    title: str
    ours: str
    reference: str


def workloads(single: int, many: int) -> dict[str, suite.Workload]:
    found: dict[str, suite.Workload] = {}
    for era, modern in (("legacy", False), ("modern", True)):
        for server in ("wsgi-sync", "wsgi-first", "django-asgi", "channels", "bare-wsgi", "bare-asgi"):
            found[f"{server}-{era}-1"] = suite.Workload(server, "/mcp", 1, single, warmup=50, modern=modern)
        for server in ("wsgi-gthread", "wsgi-first-gthread", "bare-wsgi-gthread", "django-asgi", "channels"):
            found[f"{server}-{era}-8"] = suite.Workload(server, "/mcp", 8, many, warmup=20, modern=modern)
        found[f"bare-asgi-{era}-8"] = suite.Workload("bare-asgi", "/mcp", 8, many, warmup=20, modern=modern)
    return found


TITLES = {
    "wsgi-sync": "WSGI view",
    "wsgi-first": "WSGI endpoints_first",
    "wsgi-gthread": "WSGI view, gthread",
    "django-asgi": "Django ASGI view",
    "channels": "Channels",
    "bare-wsgi": "bare WSGI app",
    "bare-asgi": "bare ASGI consumer",
    "wsgi-first-gthread": "WSGI endpoints_first, gthread",
    "bare-wsgi-gthread": "bare WSGI app, gthread",
}
PAIRS = [
    Pair(f"add, HTTP {era}, {n} session{'s' if n > 1 else ''}: {TITLES[ours]} / {TITLES[reference]}",
         f"{ours}-{era}-{n}", f"{reference}-{era}-{n}")
    for era in ("legacy", "modern")
    for n, ours, reference in (
        (1, "bare-wsgi", "bare-asgi"),
        (1, "wsgi-sync", "channels"),
        (1, "wsgi-first", "channels"),
        (1, "wsgi-sync", "django-asgi"),
        (8, "bare-wsgi-gthread", "bare-asgi"),
        (8, "wsgi-gthread", "channels"),
        (8, "wsgi-first-gthread", "channels"),
        (8, "wsgi-gthread", "django-asgi"),
    )
]  # fmt: skip
WITHIN_15 = suite.Target("ratio>=", 1 / 1.5)
CPU_WITHIN_15 = suite.Target("ratio<=", 1.5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--timeout", type=float, default=30.0)
    args = parser.parse_args(argv)
    reps, divisor = (1, 3) if args.quick else (args.reps, 1)
    configurations = workloads(1500 // divisor, 300 // divisor)
    print(f"commit {suite.commit()}, Python {sys.version.split()[0]}, load average {suite.load_average()}")
    env = suite.server_env()
    servers: dict[str, suite.Server] = {}
    with tempfile.TemporaryDirectory(prefix="mcp-bench-doors-") as directory:
        try:
            built = suite.build_databases(Path(directory), env, lists=False, fans=False)
            base = {**env, "BENCH_DB": str(built.files["base"])}
            pinned = suite.pinning()
            cpus = pinned[0] if pinned else None
            servers["channels"] = suite.Server("channels", "project.asgi:application", base, None, cpus)
            servers["django-asgi"] = suite.Server("django-asgi", "django_asgi:application", base, "bench", cpus)
            servers["wsgi-sync"] = Gunicorn("wsgi-sync", "project.wsgi:application", base, [], cpus)
            first = "wsgi_first:application"
            bare = {**base, "PYTHONPATH": "bench"}
            servers["wsgi-first"] = Gunicorn("wsgi-first", first, bare, [], cpus)
            servers["bare-asgi"] = suite.Server("bare-asgi", "baseline:application", base, "bench", cpus)
            servers["bare-wsgi"] = Gunicorn("bare-wsgi", "baseline_wsgi:application", bare, [], cpus)
            gthread = ["--worker-class", "gthread", "--threads", "8"]
            servers["wsgi-gthread"] = Gunicorn("wsgi-gthread", "project.wsgi:application", base, gthread, cpus)
            servers["wsgi-first-gthread"] = Gunicorn("wsgi-first-gthread", first, bare, gthread, cpus)
            bare_app = "baseline_wsgi:application"
            servers["bare-wsgi-gthread"] = Gunicorn("bare-wsgi-gthread", bare_app, bare, gthread, cpus)
            deadline = time.monotonic() + suite.START_TIMEOUT
            for server in servers.values():
                server.wait_ready(max(0.1, deadline - time.monotonic()))
            if pinned is not None:
                os.sched_setaffinity(0, pinned[1])
            session = suite.Session(built.token, args.timeout, servers)
            samples: dict[str, list[suite.Sample]] = {name: [] for name in configurations}
            for rep in range(reps):
                for name, workload in configurations.items():
                    samples[name].append(suite.measure(session, workload))
                print(f"run {rep + 1}/{reps} done, load average {suite.load_average()}", flush=True)
        finally:
            for server in servers.values():
                server.stop()
    lines = []
    for pair in PAIRS:
        ours, reference = samples[pair.ours], samples[pair.reference]
        lines.append([f"{pair.title} (calls/s)", *suite.judge(_row(pair, "ops/s", WITHIN_15), ours, reference)])
        lines.append([f"{pair.title} (CPU/call)", *suite.judge(_row(pair, "µs/call", CPU_WITHIN_15), ours, reference)])
    print(f"{reps} interleaved runs; load average after {suite.load_average()}")
    print(suite.table(lines, args.markdown))
    return 0


def _row(pair: Pair, metric: str, target: suite.Target) -> suite.Row:
    return suite.Row("doors", pair.title, metric, pair.ours, pair.reference, target)


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (BenchError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
