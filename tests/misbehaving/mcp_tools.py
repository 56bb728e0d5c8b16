"""Registered callables whose output, or progress, a client cannot be sent as it is."""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Literal

from mcp_tools import Context, tool
from mcp_tools.tools.content import ToolResult, text

# A late reporter waits for ``release`` and sets ``reported`` once report_progress has returned to it.
release = threading.Event()
reported = threading.Event()
LATE_WAIT = 10.0


@tool
def nan_result() -> float:
    """Return NaN, which JSON cannot carry."""
    return float("nan")


@tool
async def infinite_structured() -> dict[str, float]:
    """Return structured content holding infinity."""
    return {"value": float("inf")}


@tool
def opaque_object() -> dict[str, Any]:
    """Return an object that has no JSON form; its repr must not reach the client."""
    return {"thing": object()}


@tool
def opaque_key() -> dict[Any, int]:
    """Return a mapping keyed by an object, whose repr must not become a key."""
    return {object(): 1}


@tool
def opaque_structured() -> ToolResult:
    """A ToolResult whose structured content holds bytes."""
    return ToolResult(content=[text("fine")], structured={"raw": b"\x00secret"})


@tool
def malformed_block() -> ToolResult:
    """A content block without its text."""
    return ToolResult(content=[{"type": "text", "value": "no text field"}])


@tool
def deep_value(depth: int) -> dict[str, Any]:
    """A value nested ``depth`` lists deep."""
    value: Any = []
    for _ in range(depth):
        value = [value]
    return {"deep": value}


@tool
async def chatty_progress(ctx: Context, size: int) -> str:
    """Report progress with a message of ``size`` characters, then succeed."""
    ctx.report_progress(1, 2, "x" * size)
    return "reported"


@tool
def nan_progress(ctx: Context) -> str:
    """Report progress that is not a number JSON can carry, from a worker thread, then succeed."""
    ctx.report_progress(float("nan"), float("inf"))
    ctx.report_progress(1, 1, "finite")
    return "reported"


@tool
async def late_progress(ctx: Context, mode: Literal["thread", "task"]) -> str:
    """Answer at once, leaving a thread or a task behind that reports progress once released."""
    release.clear()
    reported.clear()
    ctx.report_progress(1, 2, "in time")
    if mode == "thread":
        threading.Thread(target=_report_late, args=(ctx,), daemon=True).start()
    else:
        task = asyncio.get_running_loop().create_task(_report_late_async(ctx))
        _tasks.add(task)
        task.add_done_callback(_tasks.discard)
    return "answered"


@tool
async def release_late_progress() -> str:
    """Let the left-behind reporter report; says whether report_progress returned to it normally."""
    release.set()
    done = await asyncio.to_thread(reported.wait, LATE_WAIT)
    return "reported quietly" if done else "the late reporter failed"


_tasks: set[asyncio.Task[None]] = set()


def _report_late(ctx: Context) -> None:
    if release.wait(LATE_WAIT):
        ctx.report_progress(2, 2, "too late")
        reported.set()


async def _report_late_async(ctx: Context) -> None:
    if await asyncio.to_thread(release.wait, LATE_WAIT):
        ctx.report_progress(2, 2, "too late")
        reported.set()
