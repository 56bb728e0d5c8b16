"""The process loop of the WSGI door: one per process, a forked child's own, and sync work that runs there."""

from __future__ import annotations

import os

import pytest
from asgiref.sync import sync_to_async

from mcp_tools.transports.process_loop import process_loop, submit

TIMEOUT = 5


async def thread_sensitive_pid() -> int:
    """The process a thread-sensitive sync call (as every database_sync_to_async is) ran in."""
    return await sync_to_async(os.getpid)()


def test_sync_work_awaited_on_the_loop_runs_and_answers():
    assert submit(thread_sensitive_pid()).result(TIMEOUT) == os.getpid()


def test_submitting_from_the_loop_itself_is_refused():
    async def nested() -> None:
        submit(thread_sensitive_pid())

    with pytest.raises(RuntimeError, match="call it from another thread"):
        submit(nested()).result(TIMEOUT)


# A gunicorn arbiter that preloads the site forks its workers with its own threads running.
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_forked_child_runs_sync_work_on_a_loop_and_thread_of_its_own():
    parent_loop = process_loop()
    assert submit(thread_sensitive_pid()).result(TIMEOUT) == os.getpid()
    reading, writing = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through the pipe and never returns
        try:
            answer = f"{submit(thread_sensitive_pid()).result(TIMEOUT)} {process_loop() is not parent_loop}"
        except BaseException as exc:
            answer = repr(exc)
        os.write(writing, answer.encode())
        os._exit(0)
    os.close(writing)
    with os.fdopen(reading) as pipe:
        answer = pipe.read()
    os.waitpid(child, 0)

    assert answer == f"{child} True"
