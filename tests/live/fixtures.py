"""Pytest fixtures for live servers; load them with ``pytest_plugins = ["tests.live.fixtures"]``.

- ``live_site``: a seeded SQLite file and the in-memory channel layer (one server process).
- ``uvicorn_server``: one uvicorn process serving ``live_site``.
- ``shared_site``: Redis channel layer and cache, PostgreSQL when MCP_TEST_DATABASE_URL is set (else a
  SQLite file); needs Redis (skipped without it, failed with MCP_REQUIRE_SERVICES=1).
- ``uvicorn_pair``: two uvicorn processes serving ``shared_site``.

A failing test that used a server gets that server's log appended to its report.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from typing import Any

import pytest

from tests.live import services
from tests.live.servers import ServerProcess
from tests.live.sites import Site, shared_switches, sqlite_switches


@pytest.fixture(scope="module")
def live_site(tmp_path_factory: pytest.TempPathFactory) -> Site:
    workdir = tmp_path_factory.mktemp("live")
    site = Site(workdir, sqlite_switches(workdir))
    site.prepare()
    return site


@pytest.fixture(scope="module")
def uvicorn_server(live_site: Site) -> Iterator[ServerProcess]:
    with live_site.serve("server") as (server,):
        yield server


@pytest.fixture(scope="module")
def shared_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    redis_url = services.redis_url()
    postgres_url = services.postgres_url()
    workdir = tmp_path_factory.mktemp("shared")
    with shared_switches(workdir, redis_url, postgres_url) as switches:
        site = Site(workdir, switches)
        site.prepare()
        yield site


@pytest.fixture(scope="module")
def uvicorn_pair(shared_site: Site) -> Iterator[tuple[ServerProcess, ServerProcess]]:
    with shared_site.serve("a", "b") as (a, b):
        yield a, b


def _servers(value: Any) -> list[ServerProcess]:
    if isinstance(value, ServerProcess):
        return [value]
    if isinstance(value, Site):
        return list(value.servers)
    if isinstance(value, tuple | list):
        return [item for item in value if isinstance(item, ServerProcess)]
    return []


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report = yield
    if report.failed:
        seen: set[int] = set()
        for value in getattr(item, "funcargs", {}).values():
            for server in _servers(value):
                if id(server) not in seen:
                    seen.add(id(server))
                    report.sections.append((f"live server {server.name} ({server.base_url}) log", server.log()))
    return report
