"""The demo's ASGI application, watched for what stalls its event loop: garbage collections and loop lag.

Serve it instead of ``project.asgi:application`` and drive it with ``load.py``; stop it with Ctrl-C (SIGINT)
to print what it saw::

    .venv/bin/uvicorn bench.stalls:application --port 8000 --no-access-log
    .venv/bin/python bench/load.py ws://127.0.0.1:8000/mcp/ws --token "$TOKEN" --sessions 32 --calls 300

It prints, per generation, how many collections ran, their total and longest pause, and the event loop's
lag (how late a 5 ms timer fires: p50, p99, max). ``BENCH_UNFROZEN=1`` undoes the ``gc.freeze()`` that
``project/asgi.py`` makes after loading the site, to compare.
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sys
import time
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

from project.asgi import application as site

if os.environ.get("BENCH_UNFROZEN") == "1":
    gc.unfreeze()

TICK = 0.005
_started = [0.0]
_collections = [0, 0, 0]
_paused = [0.0, 0.0, 0.0]
_longest = [0.0, 0.0, 0.0]
_lags: list[float] = []
_watching: list[asyncio.Task[None]] = []


def _on_collection(phase: str, info: dict[str, Any]) -> None:
    if phase == "start":
        _started[0] = time.perf_counter()
        return
    generation, pause = info["generation"], time.perf_counter() - _started[0]
    _collections[generation] += 1
    _paused[generation] += pause
    _longest[generation] = max(_longest[generation], pause)


async def _watch_lag() -> None:
    while True:
        asked = time.perf_counter()
        await asyncio.sleep(TICK)
        _lags.append(time.perf_counter() - asked - TICK)


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if not _watching:
        _watching.append(asyncio.ensure_future(_watch_lag()))
    await site(scope, receive, send)


def report(*_args: Any) -> None:
    print(f"frozen objects {gc.get_freeze_count()}", file=sys.stderr)
    for generation in range(3):
        print(
            f"gen{generation}: {_collections[generation]} collections, {_paused[generation] * 1000:.1f} ms in all, "
            f"longest {_longest[generation] * 1000:.2f} ms",
            file=sys.stderr,
        )
    lags = sorted(_lags)
    if lags:
        p50, p99 = lags[len(lags) // 2], lags[int(len(lags) * 0.99)]
        print(
            f"loop lag: p50 {p50 * 1000:.2f} ms, p99 {p99 * 1000:.2f} ms, max {lags[-1] * 1000:.2f} ms "
            f"({len(lags)} ticks)",
            file=sys.stderr,
        )
    os._exit(0)


gc.callbacks.append(_on_collection)
signal.signal(signal.SIGINT, report)
