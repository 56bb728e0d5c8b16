"""The demo's async tools never block the event loop: each runs under blockbuster, which makes blocking raise."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.blocking import blocking
from tests.live.servers import ROOT
from tests.live.sites import child_environment

pytestmark = pytest.mark.live

RUN_TIMEOUT = 120


def fake_tool(key: str, func: Any) -> Any:
    return SimpleNamespace(key=key, func=func, takes_context=False)


async def sleeps_in_the_loop() -> str:
    time.sleep(0.001)  # noqa: ASYNC251 - the blocking call the check must catch
    return "slept"


async def awaits() -> str:
    await asyncio.sleep(0)
    return "awaited"


def test_every_async_callable_of_the_demo_runs_without_blocking_the_event_loop(tmp_path: Path) -> None:
    env = child_environment({"MCP_DEMO_DATABASE": str(tmp_path / "demo.sqlite3")}, "tests.demo_settings")
    completed = subprocess.run(
        [sys.executable, "-m", "tests.blocking"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=True,
    )
    report = json.loads(completed.stdout)

    assert report["problems"] == {}
    assert "add" in report["checked"]


def test_the_check_names_a_tool_that_blocks_and_one_it_has_no_arguments_for() -> None:
    tools = [fake_tool("sleepy", sleeps_in_the_loop), fake_tool("polite", awaits), fake_tool("new", awaits)]

    problems = blocking(tools, {"sleepy": {}, "polite": {}}, user=None)

    assert sorted(problems) == ["new", "sleepy"]
    assert problems["sleepy"].startswith("blocks the event loop: ") and "time.sleep" in problems["sleepy"]
    assert problems["new"] == "no realistic arguments in tests/blocking.py ARGUMENTS"
