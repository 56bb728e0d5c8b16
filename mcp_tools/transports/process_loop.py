"""One event loop per process for code that runs in threads without one (WSGI workers).

The MCP transports are asynchronous; a WSGI worker thread has no event loop. Creating one per request (what
``async_to_sync`` does for an async view called from sync code) costs a loop, a thread and the loop's own
setup on every request, and leaves no place for what outlives a request (the change hub, the sessions'
in-flight tables, the rate-limit breaker). This module keeps one loop in a daemon thread, started on first
use, and runs coroutines there for any number of worker threads at once. A forked child (gunicorn forks its
workers after importing the site when ``--preload`` is given) starts its own: a loop's thread does not
survive ``fork``.

The loop's work runs in one thread-sensitive context of the loop's own (asgiref's ``ThreadSensitiveContext``),
so the sync work it awaits (every ``database_sync_to_async``) runs on one thread that this process started.
Without it asgiref falls back to one executor per interpreter, made at import: after ``fork`` that executor
still counts the parent's thread as idle, and every call queued to it waits forever.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import os
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from asgiref.sync import ThreadSensitiveContext

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None
_thread: threading.Thread | None = None
_work_context = contextvars.Context()
_sensitive: ThreadSensitiveContext | None = None
_owner_pid = 0
STOP_SECONDS = 5.0


def process_loop() -> asyncio.AbstractEventLoop:
    """This process's loop, running in its own daemon thread from the first call on."""
    return _process()[0]


def _process() -> tuple[asyncio.AbstractEventLoop, contextvars.Context]:
    """This process's loop and the context its work runs in, made on the first call in each process."""
    global _loop, _thread, _work_context, _sensitive, _owner_pid
    loop = _loop
    if loop is not None and _owner_pid == os.getpid():
        return loop, _work_context
    with _lock:
        if _loop is None or _owner_pid != os.getpid():
            ready = threading.Event()
            new_loop = asyncio.new_event_loop()
            work_context = contextvars.Context()
            sensitive = ThreadSensitiveContext()

            def run() -> None:
                asyncio.set_event_loop(new_loop)
                # Entered in the work context for the loop's lifetime, left only by stop().
                entering = new_loop.create_task(_enter(sensitive), context=work_context)
                entering.add_done_callback(lambda _task: ready.set())
                new_loop.run_forever()

            thread = threading.Thread(target=run, name="mcp-tools-loop", daemon=True)
            thread.start()
            ready.wait()
            _loop, _thread, _work_context, _sensitive, _owner_pid = (
                new_loop,
                thread,
                work_context,
                sensitive,
                os.getpid(),
            )
        return _loop, _work_context


async def _enter(context: ThreadSensitiveContext) -> None:
    await context.__aenter__()


async def _leave(context: ThreadSensitiveContext) -> None:
    await context.__aexit__(None, None, None)


def submit(coroutine: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
    """Run ``coroutine`` on the process loop; its future is safe to wait on from any thread but the loop's."""
    loop, work_context = _process()
    if _running_loop() is loop:
        coroutine.close()
        raise RuntimeError("submit() waits for the process loop: call it from another thread")
    # Scheduled from within a copy of the work context, the coroutine's one task runs in a copy of that copy.
    return work_context.copy().run(asyncio.run_coroutine_threadsafe, coroutine, loop)


async def _run_in(context: contextvars.Context, coroutine: Coroutine[Any, Any, T]) -> T:
    """``coroutine`` in ``context`` itself, not a copy (what a context manager entered there must leave there)."""
    return await asyncio.get_running_loop().create_task(coroutine, context=context)


def stop() -> None:
    """End the process loop: its tasks are cancelled and awaited, then the loop is closed; the next ``submit``
    starts another. For an orderly exit, and for tests that must not leave tasks running between them."""
    global _loop, _thread, _sensitive
    with _lock:
        loop, thread, sensitive = _loop, _thread, _sensitive
        if loop is None or thread is None or sensitive is None or _owner_pid != os.getpid():
            _loop = _thread = _sensitive = None
            return
        asyncio.run_coroutine_threadsafe(_cancel_everything(), loop).result(STOP_SECONDS)
        # Left in the context it was entered in: its executor's thread ends with it.
        asyncio.run_coroutine_threadsafe(_run_in(_work_context, _leave(sensitive)), loop).result(STOP_SECONDS)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(STOP_SECONDS)
        loop.close()
        _loop = _thread = _sensitive = None


async def _cancel_everything() -> None:
    current = asyncio.current_task()
    tasks = [task for task in asyncio.all_tasks() if task is not current]
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    await asyncio.get_running_loop().shutdown_asyncgens()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
