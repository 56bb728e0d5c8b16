"""The asyncio tasks of this process that are running a given coroutine function."""

from __future__ import annotations

import asyncio
from typing import Any


def tasks_running(name: str) -> list[asyncio.Task[Any]]:
    """The tasks whose chain of awaited coroutines passes through the coroutine function ``name``."""
    found = []
    for task in asyncio.all_tasks():
        awaited: Any = task.get_coro()
        while awaited is not None:
            if getattr(awaited, "__name__", None) == name:
                found.append(task)
                break
            awaited = getattr(awaited, "cr_await", None)
    return found
