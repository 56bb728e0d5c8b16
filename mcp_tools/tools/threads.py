"""The one pool of threads per process that runs tools' sync work, shared fairly between users.

Sync callables, model queries, searches and API actions all run through ``run_sync``. The pool has
``TOOL_THREADS`` threads; each user's jobs wait in a FIFO queue of their own, the queues are served in
turn, and one user holds at most ``USER_THREADS`` threads at once. A job belongs to the call whose
``user_calls.Lease`` is current when it is submitted (``current_lease``, set around a call's execution):
the job holds the lease until its thread returns, so a thread that outlives its call's time limit keeps
counting against its user's calls and threads, and a job still queued when its call has ended never runs.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Hashable
from concurrent.futures import Executor, Future
from contextvars import ContextVar
from functools import partial
from typing import Any, TypeVar

from channels.db import database_sync_to_async
from django.core.signals import setting_changed
from django.dispatch import receiver

from mcp_tools.access.user_calls import Lease
from mcp_tools.conf import SETTING_NAME, mcp_settings

R = TypeVar("R")
current_lease: ContextVar[Lease | None] = ContextVar("mcp_tools_current_lease", default=None)


class Job:
    __slots__ = ("args", "fn", "future", "kwargs", "lease", "settled", "user")

    def __init__(self, fn: Callable[..., Any], args: Any, kwargs: Any, lease: Lease | None) -> None:
        self.fn, self.args, self.kwargs = fn, args, kwargs
        self.user: Hashable = None if lease is None else lease.user
        # Work a call's task left behind after the call was answered runs in its user's turn, holding nothing.
        self.lease = lease if lease is not None and lease.hold() else None
        self.future: Future[Any] = Future()
        self.settled = False


class FairExecutor(Executor):
    """``threads`` threads serving per-user FIFO queues in turn, at most ``user_threads`` per user at once."""

    def __init__(self, threads: int, user_threads: int, name: str = "mcp-tools") -> None:
        self.threads, self.user_threads = threads, user_threads
        self._condition = threading.Condition()
        self._queues: dict[Hashable, deque[Job]] = {}
        self._turns: list[Hashable] = []  # users with queued jobs, the next to be served first
        self._busy: dict[Hashable, int] = {}  # threads each user holds
        self._shutdown = False
        self._workers = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True) for i in range(threads)]
        for worker in self._workers:
            worker.start()

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        job = Job(fn, args, kwargs, current_lease.get())
        with self._condition:
            if self._shutdown:
                if job.lease is not None and job.lease.drop():
                    job.lease.give_back_soon()
                raise RuntimeError("cannot schedule new futures after shutdown")
            queue = self._queues.get(job.user)
            if queue is None:
                queue = self._queues[job.user] = deque()
                self._turns.append(job.user)
            queue.append(job)
            self._condition.notify()
        # A job cancelled while queued (its call's task was cancelled) lets go of its lease at once.
        job.future.add_done_callback(partial(self._cancelled, job))
        return job.future

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._condition:
            self._shutdown = True
            queued = [job for queue in self._queues.values() for job in queue] if cancel_futures else []
            self._condition.notify_all()
        for job in queued:
            job.future.cancel()
        if wait:
            for worker in self._workers:
                worker.join()

    def busy(self, user: Hashable) -> int:
        """The threads ``user`` holds now."""
        with self._condition:
            return self._busy.get(user, 0)

    def queued(self, user: Hashable) -> int:
        with self._condition:
            return len(self._queues.get(user, ()))

    def _work(self) -> None:
        while (job := self._take()) is not None:
            self._run(job)

    def _take(self) -> Job | None:
        """The next job this thread runs, counted against its user's share; None once shut down."""
        with self._condition:
            job = self._next()
            while job is None:
                if self._shutdown:
                    return None
                self._condition.wait()
                job = self._next()
            self._busy[job.user] = self._busy.get(job.user, 0) + 1
            return job

    def _next(self) -> Job | None:
        """The first job of the first user in turn below their share; that user goes to the back."""
        for index, user in enumerate(self._turns):
            if self._busy.get(user, 0) >= self.user_threads:
                continue
            queue = self._queues[user]
            job = queue.popleft()
            del self._turns[index]
            if queue:
                self._turns.append(user)
            else:
                del self._queues[user]
            return job
        return None

    def _run(self, job: Job) -> None:
        if job.lease is not None and job.lease.ended:
            job.future.cancel()  # its call has been answered: nobody waits for it, so it never runs
        if not job.future.set_running_or_notify_cancel():
            self._done(job)
            return
        try:
            result = job.fn(*job.args, **job.kwargs)
        except BaseException as exc:
            # The thread and the lease are free before anyone hears the job has ended.
            self._done(job)
            job.future.set_exception(exc)
        else:
            self._done(job)
            job.future.set_result(result)

    def _done(self, job: Job) -> None:
        with self._condition:
            left = self._busy[job.user] - 1
            if left:
                self._busy[job.user] = left
            else:
                del self._busy[job.user]
            # A freed share makes at most one queued job eligible, that of this job's user, and this thread
            # looks for work next itself; one more waiter is woken in case that job is not the one this
            # thread takes. Any other queued job already had a waiter woken when it was submitted, or waits
            # for a thread to finish, as this one will look next; with nothing of the user's queued, a
            # waiter woken here would only find nothing and wait again, at the cost of two thread switches.
            if job.user in self._queues:
                self._condition.notify()
        self._settle(job)

    def _cancelled(self, job: Job, future: Future[Any]) -> None:
        if not future.cancelled():
            return
        with self._condition:
            queue = self._queues.get(job.user)
            queued = queue is not None and job in queue
            if queue is not None and queued:
                queue.remove(job)
                if not queue:
                    del self._queues[job.user]
                    self._turns.remove(job.user)
        self._settle(job)
        if queued:
            # No thread will take it up to tell its waiters, as a worker does for a job it finds cancelled.
            future.set_running_or_notify_cancel()

    def _settle(self, job: Job) -> None:
        with self._condition:
            if job.settled:
                return
            job.settled = True
        if job.lease is not None and job.lease.drop():
            job.lease.give_back_soon()


def user_threads() -> int:
    configured = mcp_settings.USER_THREADS
    return int(configured) if configured is not None else max(1, int(mcp_settings.TOOL_THREADS) // 4)


_pool: list[FairExecutor | None] = [None]
_pool_lock = threading.Lock()


def pool() -> FairExecutor:
    """This process's pool, started on first use with the current settings."""
    executor = _pool[0]
    if executor is None:
        with _pool_lock:
            executor = _pool[0]
            if executor is None:
                executor = _pool[0] = FairExecutor(int(mcp_settings.TOOL_THREADS), user_threads())
    return executor


@receiver(setting_changed)
def _settings_changed(*, setting: str, **kwargs: Any) -> None:
    if setting == SETTING_NAME:
        with _pool_lock:
            old, _pool[0] = _pool[0], None
        if old is not None:
            old.shutdown(wait=False)


async def run_sync(func: Callable[..., R], /, *args: Any, **kwargs: Any) -> R:
    """``func(*args, **kwargs)`` in the pool, in its call's user's turn, with stale connections closed around it."""
    result: R = await database_sync_to_async(func, thread_sensitive=False, executor=pool())(*args, **kwargs)
    return result
