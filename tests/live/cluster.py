"""A private PostgreSQL server of one test's own, to stop, start and restart as an operator or a crash would.

``initdb`` makes it in a temporary directory; it listens on a free loopback port with trust authentication
and without fsync (its data is thrown away). PostgreSQL refuses to run as root, so under root the commands
run as the ``postgres`` account, which then owns the directory.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.live import services
from tests.live.servers import HOST, free_port

BIN_DIRS = ("/usr/local/bin", "/usr/lib/postgresql/15/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/17/bin")
ACCOUNT = "postgres"
COMMAND_TIMEOUT = 60


def tool(name: str) -> str | None:
    """The path of a PostgreSQL server program: on PATH, or in a usual place."""
    found = shutil.which(name)
    if found:
        return found
    return next((str(Path(d, name)) for d in BIN_DIRS if Path(d, name).is_file()), None)


class Cluster:
    """One PostgreSQL server in a temporary directory; ``url`` is its ``postgres`` database."""

    def __init__(self) -> None:
        initdb, pg_ctl = tool("initdb"), tool("pg_ctl")
        if initdb is None or pg_ctl is None:
            services.unavailable("Needs PostgreSQL's initdb and pg_ctl to run a private server")
        self.initdb, self.pg_ctl = initdb, pg_ctl
        self.port = 0
        self.directory = Path(tempfile.mkdtemp(prefix="mcp_tools_pg_"))
        self.as_account = os.geteuid() == 0
        if self.as_account:
            shutil.chown(self.directory, ACCOUNT, ACCOUNT)

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def url(self) -> str:
        return f"postgres://postgres@{HOST}:{self.port}/postgres"

    def _run(self, *command: str) -> None:
        prefix = ["runuser", "-u", ACCOUNT, "--"] if self.as_account else []
        completed = subprocess.run(
            [*prefix, *command], capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=False
        )
        if completed.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{completed.stdout}\n{completed.stderr}\n{self.log()}")

    def create(self) -> None:
        self._run(self.initdb, "-D", str(self.data), "-A", "trust", "-U", "postgres", "-E", "UTF8", "--no-sync")
        self.port = free_port()

    def start(self) -> None:
        """Start the server and return once it accepts connections (``pg_ctl -w``)."""
        options = f"-p {self.port} -k {self.directory} -c listen_addresses={HOST} -c fsync=off"
        self._run(self.pg_ctl, "-D", str(self.data), "-o", options, "-l", str(self.directory / "log"), "-w", "start")

    def stop(self) -> None:
        """Stop at once as a restart does: every connection is ended, open transactions rolled back."""
        self._run(self.pg_ctl, "-D", str(self.data), "-m", "fast", "-w", "stop")

    def restart(self) -> None:
        self.stop()
        self.start()

    def remove(self) -> None:
        if (self.data / "postmaster.pid").exists():
            self.stop()
        shutil.rmtree(self.directory, ignore_errors=True)

    def log(self) -> str:
        path = self.directory / "log"
        return path.read_text(errors="replace") if path.exists() else ""
