"""A private ``redis-server`` on a free loopback port, which a test may stop and start again on that port.

Tests of a Redis outage stop this one, never the Redis the other tests share. Nothing is persisted: a
restart comes back empty, as a Redis that lost its memory does.
"""

from __future__ import annotations

import signal
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.live.servers import HOST, free_port

REDIS_SERVER = "/usr/bin/redis-server"
STARTUP_TIMEOUT = 15
STOP_TIMEOUT = 10
# redis-server logs this once it accepts connections.
READY_LINE = "Ready to accept connections"


class RedisServer:
    """One ``redis-server`` process; ``start``, ``stop`` (SIGTERM, or SIGKILL as a crash) and ``start`` again."""

    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.port = free_port()
        self.process: subprocess.Popen[str] | None = None
        self.log_path = workdir / f"redis-{self.port}.log"

    @property
    def url(self) -> str:
        return f"redis://{HOST}:{self.port}/0"

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        """Start on this server's port and return once it accepts connections."""
        assert not self.running, "redis-server is already running"
        self.process = subprocess.Popen(
            [
                REDIS_SERVER, "--port", str(self.port), "--bind", HOST, "--save", "", "--appendonly", "no",
                "--dir", str(self.workdir),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )  # fmt: skip
        ready = threading.Event()
        threading.Thread(target=self._pump, args=(self.process, ready), daemon=True).start()
        if not ready.wait(STARTUP_TIMEOUT) or not self.running:
            self.stop(kill=True)
            raise RuntimeError(f"redis-server did not start on port {self.port}:\n{self.log()}")

    def _pump(self, process: subprocess.Popen[str], ready: threading.Event) -> None:
        assert process.stdout is not None
        with process.stdout, open(self.log_path, "a", encoding="utf-8") as log:
            for line in process.stdout:
                log.write(line)
                log.flush()
                if READY_LINE in line:
                    ready.set()
        ready.set()  # it exited: start() sees that it is not running

    def stop(self, kill: bool = False) -> None:
        """Stop it (SIGKILL when ``kill``, as a crash would) and wait until it has exited."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            process.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(STOP_TIMEOUT)

    def log(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace") if self.log_path.exists() else ""


@contextmanager
def private_redis(workdir: Path) -> Iterator[RedisServer]:
    """A started private Redis, stopped (killed if it will not stop) when the block ends, however it ends."""
    server = RedisServer(workdir)
    server.start()
    try:
        yield server
    finally:
        server.stop(kill=True)
