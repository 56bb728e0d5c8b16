"""The official Python SDK's client on a live server's /mcp, authenticated with a bearer token: opened in a test's
own event loop (``sdk_client``), or held open on a loop in a thread of its own (``held_client``) while the test
thread drives a browser."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import Future, wait
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager, contextmanager
from functools import partial
from typing import Any, TypeVar

import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from tests.live.servers import ServerProcess

T = TypeVar("T")
TIMEOUT = 10
Work = Callable[[Client], Awaitable[Any]]


@asynccontextmanager
async def sdk_client(
    server: ServerProcess,
    token: str,
    mode: str,
    http: httpx2.AsyncClient | None = None,
    client: type[Client] = Client,
    **options: Any,
) -> AsyncIterator[Client]:
    """The SDK's client on the server's /mcp in ``mode`` ("legacy", "auto" or a modern revision)."""
    http = http or httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT)
    async with http, client(streamable_http_client(server.url("/mcp"), http_client=http), mode=mode, **options) as c:
        yield c


class UrlOnlyClient(Client):
    """The SDK's client declaring URL-mode elicitation alone, as a client that can send its user to a page but shows
    no forms does: the SDK itself declares both modes whenever it has an elicitation callback."""

    async def _build_session(self, exit_stack: AsyncExitStack) -> ClientSession:
        session = await super()._build_session(exit_stack)
        both = session._build_capabilities

        def url_only(version: str) -> types.ClientCapabilities:
            url = types.ElicitationCapability(url=types.UrlElicitationCapability())
            return both(version).model_copy(update={"elicitation": url})

        session._build_capabilities = url_only  # type: ignore[method-assign]
        return session


async def every_tool(client: Client) -> tuple[list[types.Tool], int]:
    """Every tool the client may see, read page by page past any cache, and how many pages that took."""
    tools: list[types.Tool] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await asyncio.wait_for(client.list_tools(cursor=cursor, cache_mode="bypass"), TIMEOUT)
        pages += 1
        tools.extend(page.tools)
        cursor = page.next_cursor
        if cursor is None:
            return tools, pages


class HeldClient:
    """One task on a loop of its own thread holds the SDK's client open and does the work it is sent, one piece
    after another: Playwright's sync objects never leave the thread that made them, so the test thread keeps the
    browser while a call waits (in an elicitation callback, say)."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._jobs: asyncio.Queue[tuple[Work, Future[Any]] | None] = asyncio.Queue()

    async def hold(self, opened: Callable[[], AbstractAsyncContextManager[Client]], ready: Future[None]) -> None:
        try:
            async with opened() as client:
                ready.set_result(None)
                while (job := await self._jobs.get()) is not None:
                    work, done = job
                    try:
                        done.set_result(await work(client))
                    except Exception as exc:
                        done.set_exception(exc)
        except BaseException as exc:
            if not ready.done():
                ready.set_exception(exc)
            raise

    def run(self, work: Callable[[Client], Awaitable[T]]) -> Future[T]:
        """Have the client do ``work``; its result (or exception) arrives in the future."""
        done: Future[T] = Future()
        self.loop.call_soon_threadsafe(self._jobs.put_nowait, (work, done))
        return done

    def call(self, work: Callable[[Client], Awaitable[T]], timeout: float = TIMEOUT) -> T:
        return self.run(work).result(timeout)

    def end(self) -> None:
        self.loop.call_soon_threadsafe(self._jobs.put_nowait, None)


@contextmanager
def held_client(server: ServerProcess, token: str, mode: str, **options: Any) -> Iterator[HeldClient]:
    """``sdk_client(server, token, mode, **options)`` held open on a thread of its own while the block runs."""
    held = HeldClient()
    thread = threading.Thread(target=held.loop.run_forever, daemon=True)
    thread.start()
    ready: Future[None] = Future()
    opened = partial(sdk_client, server, token, mode, **options)
    holding = asyncio.run_coroutine_threadsafe(held.hold(opened, ready), held.loop)
    try:
        ready.result(TIMEOUT)
        yield held
    finally:
        held.end()
        if not wait([holding], TIMEOUT).done:
            holding.cancel()  # work still waiting (a failed test's callback, say): end it rather than wait on
            wait([holding], TIMEOUT)
        asyncio.run_coroutine_threadsafe(held.loop.shutdown_default_executor(), held.loop).result(TIMEOUT)
        held.loop.call_soon_threadsafe(held.loop.stop)
        thread.join(TIMEOUT)
        held.loop.close()
    holding.result(0)  # the client failed to close: say so
