"""Probes of /mcp/health share one check: a flood of them, with or without credentials, costs the database,
the cache and the channel layer one check per FRESH_SECONDS."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from channels.testing import HttpCommunicator

from mcp_tools.transports import health

TIMEOUT = 10


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """Checks that count their runs, the database one held until released; a clock the test moves."""
    state: dict[str, Any] = {"runs": 0, "started": asyncio.Event(), "release": asyncio.Event(), "now": 1000.0}

    async def database() -> None:
        state["runs"] += 1
        state["started"].set()
        await state["release"].wait()

    async def reached() -> None:
        return None

    monkeypatch.setattr(health, "_database", database)
    monkeypatch.setattr(health, "_cache", reached)
    monkeypatch.setattr(health, "_channel_layer", reached)
    monkeypatch.setattr(health.time, "monotonic", lambda: state["now"])
    monkeypatch.setattr(health, "_checks", health.PerLoop(health.Checks))
    return state


async def probe() -> dict[str, Any]:
    communicator = HttpCommunicator(health.HealthConsumer.as_asgi(), "GET", "/mcp/health")
    return await communicator.get_response(timeout=TIMEOUT)


async def test_probes_arriving_together_share_one_check_and_its_answer(counted):
    probes = [asyncio.ensure_future(probe()) for _ in range(50)]
    await asyncio.wait_for(counted["started"].wait(), TIMEOUT)
    counted["release"].set()
    answers = await asyncio.gather(*probes)

    assert counted["runs"] == 1
    assert {(answer["status"], json.loads(answer["body"])["status"]) for answer in answers} == {(200, "ok")}


async def test_a_probe_after_fresh_seconds_checks_again(counted):
    counted["release"].set()
    await probe()
    counted["now"] += health.FRESH_SECONDS - 0.01
    await probe()
    assert counted["runs"] == 1

    counted["now"] += 0.02
    await probe()
    assert counted["runs"] == 2
