"""Uvicorn server processes on loopback ports, with their output captured to a log file."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
APPLICATION = "tests.asgi:application"
STARTUP_TIMEOUT = 30
STOP_TIMEOUT = 10
# Uvicorn logs this once its listening socket is bound, so a connection made afterwards is served.
READY_LINE = "Uvicorn running on"
PORT_TAKEN = "address already in use"
START_ATTEMPTS = 3


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


class ServerProcess:
    """One ``uvicorn tests.asgi:application`` process; start, wait for readiness, stop, read its log."""

    # Subclasses serving another site change what runs, where, and the line it logs once it listens.
    cwd: Path = ROOT
    ready_line: str = READY_LINE

    def __init__(self, name: str, env: dict[str, str], log_path: Path) -> None:
        self.name = name
        self.env = env
        self.log_path = log_path
        self.port = 0
        self.process: subprocess.Popen[str] | None = None
        self._pump: threading.Thread | None = None
        self._settled = threading.Event()
        self._ready = False
        self._logged = threading.Condition()

    def __repr__(self) -> str:
        return f"<ServerProcess {self.name} {self.base_url}>"

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def url(self, path: str = "/") -> str:
        return self.base_url + path

    def ws_url(self, path: str = "/mcp/ws") -> str:
        return f"ws://{HOST}:{self.port}{path}"

    def command(self) -> list[str]:
        return [
            sys.executable, "-m", "uvicorn", APPLICATION,
            "--host", HOST, "--port", str(self.port), "--no-access-log", "--lifespan", "off",
        ]  # fmt: skip

    def choose_port(self) -> int:
        """The port to listen on: a free one, unless a subclass must have a given one."""
        return free_port()

    def spawn(self) -> None:
        """Start the process on a free port; pair with ``wait_ready``."""
        self.port = self.choose_port()
        self._settled.clear()
        self._ready = False
        self.process = subprocess.Popen(
            self.command(),
            cwd=self.cwd,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
        assert self.process.stdout is not None
        self._pump = threading.Thread(target=self._copy_output, args=(self.process.stdout,), daemon=True)
        self._pump.start()

    def _copy_output(self, stream: IO[str]) -> None:
        with self.log_path.open("a") as log:
            for line in stream:
                log.write(line)
                log.flush()
                with self._logged:
                    self._logged.notify_all()
                if self.ready_line in line:
                    self._ready = True
                    self._settled.set()
        self._settled.set()

    def wait_ready(self) -> None:
        """Block until the server listens; a port taken since it was probed is retried on another."""
        for attempt in range(1, START_ATTEMPTS + 1):
            try:
                self._wait_listening()
            except RuntimeError:
                if attempt == START_ATTEMPTS or PORT_TAKEN not in self.log().lower():
                    raise
                self.spawn()
            else:
                return

    def _wait_listening(self) -> None:
        if not self._settled.wait(STARTUP_TIMEOUT):
            self.stop()
            raise RuntimeError(f"{self!r} did not start within {STARTUP_TIMEOUT}s:\n{self.log()}")
        if not self._ready:
            self.stop()
            raise RuntimeError(f"{self!r} exited during start-up:\n{self.log()}")

    def start(self) -> None:
        self.spawn()
        self.wait_ready()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(STOP_TIMEOUT)
        if self._pump is not None:
            self._pump.join(STOP_TIMEOUT)
        if process.stdout is not None:
            process.stdout.close()

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def logged(self, text: str, start: int = 0, timeout: float = 10.0) -> bool:
        """Whether ``text`` appears in the log after offset ``start``, waiting up to ``timeout`` seconds for
        the lines the process has written but the copying thread has not yet appended."""
        with self._logged:
            return self._logged.wait_for(lambda: text in self.log()[start:], timeout)
