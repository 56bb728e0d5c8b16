"""ORM code run from test coroutines, on the thread Channels gives database work."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from channels.db import database_sync_to_async


@database_sync_to_async
def db_call(func: Any, *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)


async def orm(func: Callable[..., Any], *args: Any) -> Any:
    """Run ORM code from a test coroutine."""
    return await database_sync_to_async(func)(*args)
