"""ORM code run from test coroutines, the database connections worker threads leave open, and lost ones.

Channels' test communicators turn ``close_old_connections()`` into a no-op while they wait for the
application, so a thread that served ``database_sync_to_async`` work meanwhile keeps its connection after the
call: the default executor threads of each test's event loop, and asgiref's one thread for thread-sensitive
calls, which lives as long as the process. ``WorkerConnections`` remembers every connection opened off the
main thread and closes it once its thread has ended, and every one of them before the test databases are dropped.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import psycopg
from channels.db import database_sync_to_async
from django.db import OperationalError
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.backends.signals import connection_created


@database_sync_to_async
def db_call(func: Any, *args: Any, **kwargs: Any) -> Any:
    return func(*args, **kwargs)


def lost_connection(cause: Exception | None = None) -> OperationalError:
    """The error Django raises when PostgreSQL ended the connection under a statement (pg_terminate_backend)."""
    exc = OperationalError("terminating connection due to administrator command")
    exc.__cause__ = cause or psycopg.errors.AdminShutdown("terminating connection due to administrator command")
    return exc


async def orm(func: Callable[..., Any], *args: Any) -> Any:
    """Run ORM code from a test coroutine."""
    return await database_sync_to_async(func)(*args)


class WorkerConnections:
    """The Django connections opened by threads other than the main one, by the thread that opened them."""

    def __init__(self) -> None:
        self._opened: dict[int, tuple[threading.Thread, BaseDatabaseWrapper]] = {}
        self._lock = threading.Lock()

    def watch(self) -> None:
        connection_created.connect(self._remember, dispatch_uid=f"tests.db.{id(self)}")

    def _remember(self, sender: Any, connection: BaseDatabaseWrapper, **kwargs: Any) -> None:
        thread = threading.current_thread()
        if thread is not threading.main_thread():
            with self._lock:
                self._opened[id(connection)] = (thread, connection)

    def close_finished(self) -> None:
        """Close the connections of threads that have ended; nothing else can use them any more."""
        self._close(lambda thread: not thread.is_alive())

    def close_all(self) -> None:
        """Close every remembered connection; only for when no test runs, so no thread is using one."""
        self._close(lambda thread: True)

    def _close(self, due: Callable[[threading.Thread], bool]) -> None:
        with self._lock:
            closing = [(key, wrapper) for key, (thread, wrapper) in self._opened.items() if due(thread)]
            for key, _wrapper in closing:
                del self._opened[key]
        for _key, wrapper in closing:
            # Django connections belong to the thread that opened them; this one is idle or gone.
            wrapper.inc_thread_sharing()
            try:
                wrapper.close()
            finally:
                wrapper.dec_thread_sharing()
