"""The production shape of a suite run (``--shape production``): a PostgreSQL database of its own, created for the
run and dropped after it, Redis for the channel layer and the cache (a database of its own, flushed before and
after), and two worker processes per server.

The demo's settings switch to both when ``DATABASE_URL`` and ``REDIS_URL`` are set (``project/settings.py``); this
module makes the database and gives the servers those variables.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from urllib.parse import urlsplit, urlunsplit

from rpc import BenchError

DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/postgres"
DEFAULT_REDIS = "redis://127.0.0.1:6379/14"
WORKERS = 2
# Rows the production shape leaves out, and why.
LEFT_OUT = {
    "list": "its 1,000-tool database is a copy of the SQLite file",
    "fanout": "its database is a copy of the SQLite file",
    "sdk": "a single-process peer",
    "fastmcp": "a single-process peer",
    "servers": "granian and daphne are compared in the demo's shape",
}


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    """A fresh database ``mcp_bench_<pid>`` on the server of ``admin_url``, dropped when the block ends; yields its
    URL."""
    import psycopg

    name = f"mcp_bench_{os.getpid()}"
    try:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
            admin.execute(f'CREATE DATABASE "{name}"')
    except psycopg.Error as exc:
        raise BenchError(f"--shape production needs PostgreSQL at {admin_url}: {exc}") from exc
    parts = urlsplit(admin_url)
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True, connect_timeout=5) as admin:
            # FORCE ends connections a server that was killed may have left behind.
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def flushed_redis(url: str) -> Iterator[str]:
    """The Redis database of ``url``, emptied now and again when the block ends; yields the URL."""
    import redis

    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    try:
        client.flushdb()
    except redis.RedisError as exc:
        raise BenchError(f"--shape production needs Redis at {url}: {exc}") from exc
    try:
        yield url
    finally:
        client.flushdb()
        client.close()
