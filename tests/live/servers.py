"""Server processes on loopback ports, with their output captured to a log file: uvicorn on the Channels
application (``ServerProcess``) or on Django's plain ASGI handler, gunicorn and ``manage.py runserver`` on
Django's WSGI handler."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

import httpx

ROOT = Path(__file__).resolve().parents[2]
HOST = "127.0.0.1"
APPLICATION = "tests.asgi:application"
DJANGO_ASGI_APPLICATION = "tests.asgi_django:application"
WSGI_APPLICATION = "tests.wsgi:application"
STARTUP_TIMEOUT = 30
STOP_TIMEOUT = 10
# Uvicorn logs this once its listening socket is bound, so a connection made afterwards is served.
READY_LINE = "Uvicorn running on"
PORT_TAKEN = "address already in use"
START_ATTEMPTS = 3
# Connection attempts (httpx backs off between them) to a server that prints its banner before it binds.
CONNECT_RETRIES = 5


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


class ServerProcess:
    """One ``uvicorn tests.asgi:application`` process; start, wait for readiness, stop, read its log."""

    # Subclasses serving another site change what runs, where, and the line it logs once it listens.
    cwd: Path = ROOT
    ready_line: str = READY_LINE
    port_taken: str = PORT_TAKEN
    application: str = APPLICATION

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
            sys.executable, "-m", "uvicorn", self.application,
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
                if attempt == START_ATTEMPTS or self.port_taken not in self.log().lower():
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
        return self.log_holds(lambda log: text in log, start, timeout)

    def log_holds(self, condition: Callable[[str], bool], start: int = 0, timeout: float = 10.0) -> bool:
        """Whether the log after offset ``start`` meets ``condition``, waiting up to ``timeout`` seconds for it."""
        with self._logged:
            return self._logged.wait_for(lambda: condition(self.log()[start:]), timeout)


class DjangoAsgiServer(ServerProcess):
    """Uvicorn on Django's plain ASGI handler (``get_asgi_application()``): /mcp through mcp_tools.urls' views."""

    application = DJANGO_ASGI_APPLICATION


class GunicornServer(ServerProcess):
    """``gunicorn tests.wsgi:application`` with the given options (worker class, workers, threads, preload)."""

    # The arbiter logs this once its socket is bound; workers accept what waits on it as they boot.
    ready_line = "Listening at: "
    port_taken = "connection in use"
    application = WSGI_APPLICATION

    def __init__(self, name: str, env: dict[str, str], log_path: Path, options: Sequence[str] = ()) -> None:
        super().__init__(name, env, log_path)
        self.options = list(options)

    def command(self) -> list[str]:
        # No control socket: its default path is one per user, which every other gunicorn would share.
        return [
            sys.executable, "-m", "gunicorn", self.application,
            "--bind", f"{HOST}:{self.port}", "--no-control-socket", *self.options,
        ]  # fmt: skip


class RunServer(ServerProcess):
    """``manage.py runserver --noreload``: Django's own WSGI server where daphne is not installed as an app."""

    ready_line = "Quit the server with"
    port_taken = "that port is already in use"

    def command(self) -> list[str]:
        return [sys.executable, "manage.py", "runserver", "--noreload", f"{HOST}:{self.port}"]

    def wait_ready(self) -> None:
        super().wait_ready()
        # The banner comes moments before the port is bound: refused connections are retried, with backoff.
        with httpx.Client(transport=httpx.HTTPTransport(retries=CONNECT_RETRIES), timeout=STARTUP_TIMEOUT) as client:
            response = client.get(self.url("/mcp/health"))
        if response.status_code != 200:
            raise RuntimeError(f"{self!r} answered its health check with {response.status_code}:\n{self.log()}")
