"""The server side of a live test's own PostgreSQL database: its backends, cut as a restart or an operator would.

Only ever the backends of the private database a test created (``sites.postgres_database``): the server is
shared, and so are the other databases on it.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

import psycopg

POLL_SECONDS = 0.02


def database_name(url: str) -> str:
    return urlsplit(url).path.lstrip("/")


def query(url: str, sql: str, *params: Any) -> list[tuple[Any, ...]]:
    """The rows of ``sql`` run on the database of ``url`` in a connection of its own."""
    with psycopg.connect(url, autocommit=True) as connection:
        return connection.execute(sql, params).fetchall()  # type: ignore[arg-type]


def execute(url: str, sql: str) -> None:
    """Run the statements of ``sql`` on the database of ``url``."""
    with psycopg.connect(url, autocommit=True) as connection:
        connection.execute(sql)  # type: ignore[arg-type]


def terminate_backends(url: str) -> int:
    """End every other connection to the database of ``url`` (``pg_terminate_backend``); how many there were."""
    rows = query(
        url,
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()",
        database_name(url),
    )
    return len(rows)


def wait_for_sleeper(url: str, timeout: float) -> None:
    """Return once a connection to the database of ``url`` waits in ``pg_sleep``; raises after ``timeout`` s.

    PostgreSQL announces no such event, so its activity view is polled.
    """
    deadline = time.monotonic() + timeout
    sql = "SELECT count(*) FROM pg_stat_activity WHERE datname = %s AND wait_event = 'PgSleep'"
    with psycopg.connect(url, autocommit=True) as connection:
        while not connection.execute(sql, (database_name(url),)).fetchone()[0]:  # type: ignore[index]
            if time.monotonic() > deadline:
                raise TimeoutError(f"No connection to {database_name(url)} waited in pg_sleep within {timeout} s")
            time.sleep(POLL_SECONDS)
