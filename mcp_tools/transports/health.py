"""``GET /mcp/health``: whether this worker process reaches its database, its cache and its channel layer.

Without the database the worker cannot serve (503 "unavailable"). Without the rate-limit cache or the
channel layer it still answers calls, with rate limits failing open or closed and changes found by polling
(200 "degraded"): every worker shares those services, and pulling them all at once would help nobody.
Load balancers and orchestrators ask it without credentials, so it says only which check failed: no
versions, hosts or error texts. Each check is bounded by ``CHECK_SECONDS``; they run side by side. Probes
within ``FRESH_SECONDS`` of a check share its answer, so a flood of them costs the services one check a
second, whoever sends it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time
from typing import Any

from asgiref.sync import sync_to_async
from channels.consumer import AsyncConsumer
from channels.db import database_sync_to_async
from django.core.cache import caches
from django.db import connections, router

from mcp_tools.access.concurrency import cache_alias
from mcp_tools.loops import PerLoop
from mcp_tools.models import ToolCall
from mcp_tools.notify.events import channel_layer, group_name
from mcp_tools.notify.group import cross_process

logger = logging.getLogger("mcp_tools")
CHECK_SECONDS = 2.0
FRESH_SECONDS = 1.0
HEADERS = [(b"content-type", b"application/json"), (b"cache-control", b"no-store")]
DATABASE = "database"
CACHE = "cache"
CHANNEL_LAYER = "channel_layer"
OK = "ok"
FAILED = "failed"
# Checks without which this worker cannot answer calls at all.
ESSENTIAL = frozenset({DATABASE})
NAMES = (DATABASE, CACHE, CHANNEL_LAYER)
HEALTH_KEY = "mcp_tools.health"


class HealthConsumer(AsyncConsumer):
    """Answers 200 ``ok`` or ``degraded``, or 503 ``unavailable``, with the result of every check by name."""

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("method") not in ("GET", "HEAD"):
            await _respond(send, 405, {"status": "method not allowed"}, ((b"allow", b"GET, HEAD"),))
            return
        failed = await _checks().failed()
        checks = {name: FAILED if name in failed else OK for name in NAMES}
        if ESSENTIAL.intersection(failed):
            await _respond(send, 503, {"status": "unavailable", "checks": checks})
        else:
            await _respond(send, 200, {"status": "degraded" if failed else "ok", "checks": checks})


class Checks:
    """The latest check of this process's services, shared by the probes that arrive while it runs and for
    FRESH_SECONDS after it started."""

    def __init__(self) -> None:
        self.running: asyncio.Future[list[str]] | None = None
        self.started = -math.inf

    async def failed(self) -> list[str]:
        """The names of the checks that failed (none: healthy)."""
        now = time.monotonic()
        if self.running is None or (self.running.done() and now - self.started >= FRESH_SECONDS):
            self.started = now
            self.running = asyncio.ensure_future(_check_all())
        # A probe that goes away does not cancel the check the others wait for.
        return list(await asyncio.shield(self.running))


_checks = PerLoop(Checks)


async def _check_all() -> list[str]:
    results = await asyncio.gather(*(_passes(name, check()) for name, check in _named_checks()))
    return [name for name, passed in zip(NAMES, results, strict=True) if not passed]


def _named_checks() -> tuple[tuple[str, Any], ...]:
    # Looked up on each run, so that a test may stand in for one check.
    return ((DATABASE, _database), (CACHE, _cache), (CHANNEL_LAYER, _channel_layer))


async def _passes(name: str, check: Any) -> bool:
    try:
        await asyncio.wait_for(check, CHECK_SECONDS)
    except Exception:
        logger.warning("Health check %s failed", name, exc_info=True)
        return False
    return True


async def _database() -> None:
    await database_sync_to_async(_select_one)(router.db_for_write(ToolCall))


def _select_one(alias: str) -> None:
    with connections[alias].cursor() as cursor:
        cursor.execute("SELECT 1")


async def _cache() -> None:
    """A round trip to the cache that rate limits and call counters use (one read of a key never written)."""
    await sync_to_async(_read_cache, thread_sensitive=False)()


def _read_cache() -> None:
    caches[cache_alias()].get(HEALTH_KEY)


async def _channel_layer() -> None:
    """A round trip to the layer's store; an in-process layer (or none) has nothing to reach."""
    layer = channel_layer()
    if cross_process(layer):
        assert layer is not None
        # A group nobody joins: the send costs one round trip and reaches no one.
        await layer.group_send(f"{group_name()}.health", {"type": "mcp.health"})


async def _respond(send: Any, status: int, body: dict[str, Any], headers: tuple[tuple[bytes, bytes], ...] = ()) -> None:
    await send({"type": "http.response.start", "status": status, "headers": [*HEADERS, *headers]})
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})
