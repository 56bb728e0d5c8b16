"""A site that live processes share: its database, its channel layer, and the data seeded into it."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg
import redis
from psycopg import sql

from tests.live.servers import ROOT, ServerProcess

SETTINGS = "tests.settings"
# What makes a server process: its name, environment and log file (ServerProcess, or a subclass with its options).
ServerKind = Callable[[str, dict[str, str], Path], ServerProcess]
COMMAND_TIMEOUT = 60


@dataclass(frozen=True)
class Seed:
    """What ``tests.live.seed`` created."""

    token: str
    user: str
    admin: dict[str, str]
    tools: dict[str, int]


def child_environment(switches: dict[str, str], settings: str = SETTINGS) -> dict[str, str]:
    """This process's environment without its own MCP_TEST_* switches, plus the given ones."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("MCP_TEST_")}
    env.update(DJANGO_SETTINGS_MODULE=settings, PYTHONUNBUFFERED="1", **switches)
    return env


@dataclass
class Site:
    """Settings module and switches for child processes, a working directory for their logs, and the seed."""

    workdir: Path
    switches: dict[str, str]
    seed: Seed | None = None
    servers: list[ServerProcess] = field(default_factory=list)
    settings: str = SETTINGS

    @property
    def seeded(self) -> Seed:
        assert self.seed is not None, "Site.prepare() has not run"
        return self.seed

    @property
    def env(self) -> dict[str, str]:
        return child_environment(self.switches, self.settings)

    def run(self, *args: str, timeout: float = COMMAND_TIMEOUT, **options: Any) -> subprocess.CompletedProcess[str]:
        """Run ``python ARGS`` in the repository with this site's environment; raises on failure."""
        return subprocess.run(
            [sys.executable, *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
            **options,
        )

    def prepare(self) -> Seed:
        """Migrate and seed the database (``python -m tests.live.seed``)."""
        try:
            completed = self.run("-m", "tests.live.seed")
        except subprocess.CalledProcessError as exc:
            raise RuntimeError(f"Seeding failed:\n{exc.stdout}\n{exc.stderr}") from None
        self.seed = Seed(**json.loads(completed.stdout))
        return self.seed

    @contextmanager
    def serve(self, *names: str, kind: ServerKind = ServerProcess) -> Iterator[list[ServerProcess]]:
        """Start one server of ``kind`` per name (concurrently), yield them ready, and stop them all on exit."""
        started = [kind(name, self.env, self.workdir / f"server-{name}.log") for name in names]
        self.servers.extend(started)
        try:
            for server in started:
                server.spawn()
            for server in started:
                server.wait_ready()
            yield started
        finally:
            for server in started:
                server.stop()


def sqlite_switches(workdir: Path) -> dict[str, str]:
    return {"MCP_TEST_SQLITE_PATH": str(workdir / "live.sqlite3")}


@contextmanager
def postgres_database(server_url: str) -> Iterator[dict[str, str]]:
    """A fresh database on the server of ``server_url`` for this run, dropped afterwards."""
    name = f"mcp_tools_live_{secrets.token_hex(6)}"
    with psycopg.connect(server_url, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield {"MCP_TEST_DATABASE_URL": urlunsplit(urlsplit(server_url)._replace(path=f"/{name}"))}
    finally:
        with psycopg.connect(server_url, autocommit=True) as connection:
            connection.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@contextmanager
def redis_layer(url: str) -> Iterator[dict[str, str]]:
    """Channel layer and cache on Redis under a prefix and group of this run's own; keys removed after."""
    run = secrets.token_hex(6)
    prefix = f"mcp_tools_live_{run}"
    try:
        yield {
            "MCP_TEST_CHANNEL_LAYER": "redis",
            "MCP_TEST_REDIS_URL": url,
            "MCP_TEST_REDIS_PREFIX": prefix,
            "MCP_TEST_GROUP_NAME": f"mcp_tools.tools.{run}",
        }
    finally:
        delete_keys(url, prefix)


def delete_keys(url: str, prefix: str) -> None:
    """Remove every key under ``prefix`` from the Redis at ``url``."""
    client = redis.Redis.from_url(url)
    try:
        keys = list(client.scan_iter(match=f"{prefix}*"))
        if keys:
            client.delete(*keys)
    finally:
        client.close()


@contextmanager
def shared_switches(workdir: Path, redis_url: str, postgres_url: str | None) -> Iterator[dict[str, str]]:
    """Switches for a site several processes share: Redis layer, and PostgreSQL when given, else SQLite."""
    with ExitStack() as stack:
        switches = dict(stack.enter_context(redis_layer(redis_url)))
        if postgres_url:
            switches.update(stack.enter_context(postgres_database(postgres_url)))
        else:
            switches.update(sqlite_switches(workdir))
        yield switches
