"""The official SDK's OAuth client as a desktop app runs it, for tests that drive the user's side in a browser.

The app's redirect URI is a loopback HTTP server of its own (``http://127.0.0.1:<port>/callback``, RFC
8252): its redirect handler hands the authorization URL to the person (the test reads it from
``authorization_url()`` and opens it in Chromium), and its callback handler waits for the browser to arrive
at the callback, then gives the SDK the ``code``, ``state`` and ``iss`` it brought, or raises
``AuthorizationRefused`` with the ``error`` it brought instead.

The SDK runs on an event loop in a thread of its own, so that a test thread on Playwright's sync API can
drive the browser meanwhile; one task holds the SDK's ``Client`` open and runs the work it is sent. Every
wait is bounded.
"""

from __future__ import annotations

import asyncio
import queue
import threading
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, TypeVar
from urllib.parse import parse_qs, urlsplit

import httpx2
from mcp import Client
from mcp.client.auth import AuthorizationCodeResult, OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import OAuthClientMetadata

from tests.oauth_clients import MemoryStorage

T = TypeVar("T")
HOST = "127.0.0.1"
TIMEOUT = 10
CALLBACK_PATH = "/callback"
# What the browser shows once it is back at the app: desktop clients answer a page like it.
LANDED = b"<!doctype html><title>Connected</title><p>You can close this window and return to the app."
# Registered for CIMD: a loopback redirect URI matches on any port (RFC 8252), as the server allows.
LOOPBACK_REDIRECT = f"http://{HOST}{CALLBACK_PATH}"


class AuthorizationRefused(Exception):
    """The browser came back with an OAuth error rather than a code: what the app's callback raises."""

    def __init__(self, error: str, description: str | None) -> None:
        super().__init__(f"{error}: {description}" if description else error)
        self.error = error
        self.description = description


@dataclass(frozen=True)
class Arrival:
    """One request the browser made to the loopback callback."""

    path: str
    params: dict[str, str]
    headers: dict[str, str]  # lower-case names


class LoopbackCallback:
    """The app's redirect URI: a loopback HTTP server that records each arrival and answers a short page."""

    def __init__(self) -> None:
        self.arrivals: list[Arrival] = []
        self._arrived: queue.Queue[Arrival | None] = queue.Queue()
        self.server = ThreadingHTTPServer((HOST, 0), self._handler())
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def redirect_uri(self) -> str:
        return f"http://{HOST}:{self.server.server_address[1]}{CALLBACK_PATH}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        callback = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                parts = urlsplit(self.path)
                params = {name: values[0] for name, values in parse_qs(parts.query).items()}
                headers = {name.lower(): value for name, value in self.headers.items()}
                callback.arrive(Arrival(parts.path, params, headers))
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(LANDED)))
                self.end_headers()
                self.wfile.write(LANDED)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler

    def arrive(self, arrival: Arrival) -> None:
        if arrival.path == CALLBACK_PATH:  # not the browser's own asks, such as /favicon.ico
            self.arrivals.append(arrival)
            self._arrived.put(arrival)

    def next(self, timeout: float = TIMEOUT) -> Arrival:
        """The browser's next arrival at the callback, within ``timeout`` seconds."""
        try:
            arrival = self._arrived.get(timeout=timeout)
        except queue.Empty:
            arrival = None
        if arrival is None:
            raise AssertionError(f"the browser did not come back to {self.redirect_uri} within {timeout}s")
        return arrival

    def give_up(self) -> None:
        """Wake whoever waits for the browser: it is not coming (the test is over)."""
        self._arrived.put(None)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(TIMEOUT)


class DesktopClient:
    """The SDK's ``Client`` with its ``OAuthClientProvider`` on ``mcp_url``, as a desktop app holds it."""

    def __init__(self, mcp_url: str, *, name: str, client_metadata_url: str | None = None, mode: str = "auto") -> None:
        self.mcp_url = mcp_url
        self.name = name
        self.client_metadata_url = client_metadata_url
        self.mode = mode
        self.callback = LoopbackCallback()
        self.storage = MemoryStorage()
        self.exchanges: list[str] = []  # "METHOD URL -> STATUS" of every request the SDK sent, in order
        self.session_id: str | None = None  # the Streamable HTTP session the server gave it, if any
        self._authorization_urls: queue.Queue[str] = queue.Queue()
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._jobs: asyncio.Queue[tuple[Callable[[Client], Awaitable[Any]], Future[Any]] | None] | None = None
        self._session: Future[None] | None = None
        self._ended = threading.Event()

    # The test thread's side -----------------------------------------------------------------------------

    def connect(self) -> Future[None]:
        """Open the SDK's session; resolved once the client is authorized and connected (or failed)."""
        connected: Future[None] = Future()
        self._session = asyncio.run_coroutine_threadsafe(self._hold(connected), self._loop)
        return connected

    def authorization_url(self, timeout: float = TIMEOUT) -> str:
        """The next URL the SDK sends the person's browser to."""
        try:
            return self._authorization_urls.get(timeout=timeout)
        except queue.Empty:
            raise AssertionError(f"the SDK asked for no authorization within {timeout}s: {self.exchanges}") from None

    def run(self, work: Callable[[Client], Awaitable[T]]) -> Future[T]:
        """Have the connected client do ``work``; its result (or exception) arrives in the future."""
        done: Future[T] = Future()
        assert self._jobs is not None, "connect() first"
        self._loop.call_soon_threadsafe(self._jobs.put_nowait, (work, done))
        return done

    def call(self, work: Callable[[Client], Awaitable[T]], timeout: float = TIMEOUT) -> T:
        return self.run(work).result(timeout)

    # The app's side, on its own loop ------------------------------------------------------------------

    async def _redirect(self, authorization_url: str) -> None:
        self._authorization_urls.put(authorization_url)

    async def _callback(self) -> AuthorizationCodeResult:
        arrival = await asyncio.to_thread(self.callback.next, TIMEOUT)
        if "error" in arrival.params:
            raise AuthorizationRefused(arrival.params["error"], arrival.params.get("error_description"))
        params = arrival.params
        return AuthorizationCodeResult(code=params["code"], state=params.get("state"), iss=params.get("iss"))

    async def _record(self, response: httpx2.Response) -> None:
        self.exchanges.append(f"{response.request.method} {response.request.url} -> {response.status_code}")
        self.session_id = response.headers.get("mcp-session-id", self.session_id)

    async def _hold(self, connected: Future[None]) -> None:
        self._jobs = asyncio.Queue()
        provider = OAuthClientProvider(
            server_url=self.mcp_url,
            client_metadata=OAuthClientMetadata(
                client_name=self.name,
                redirect_uris=[self.callback.redirect_uri],  # type: ignore[list-item]
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=self.storage,
            redirect_handler=self._redirect,
            callback_handler=self._callback,
            client_metadata_url=self.client_metadata_url,
        )
        http = httpx2.AsyncClient(auth=provider, timeout=TIMEOUT, event_hooks={"response": [self._record]})
        waiting: list[Future[Any]] = [connected]  # whoever the session's failure is news to
        try:
            async with http, Client(streamable_http_client(self.mcp_url, http_client=http), mode=self.mode) as client:
                connected.set_result(None)
                while (job := await self._jobs.get()) is not None:
                    work, done = job
                    waiting.append(done)
                    try:
                        done.set_result(await work(client))
                    except Exception as exc:
                        done.set_exception(exc)
        except BaseException as exc:
            # What the SDK raises out of its session (an ExceptionGroup from its task group) goes to whoever
            # was waiting on it: connecting, or a call the session ended under.
            for future in waiting:
                if not future.done():
                    future.set_exception(exc)
            raise
        finally:
            self._ended.set()

    def start(self) -> None:
        self.callback.start()
        self._thread.start()

    def close(self) -> None:
        if self._session is not None:
            if self._jobs is not None:
                self._loop.call_soon_threadsafe(self._jobs.put_nowait, None)
            # A session still waiting for the browser (a test that ended before it came back) stops waiting.
            self.callback.give_up()
            if not self._ended.wait(TIMEOUT):
                self._session.cancel()
                self._ended.wait(TIMEOUT)
        asyncio.run_coroutine_threadsafe(self._loop.shutdown_default_executor(), self._loop).result(TIMEOUT)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(TIMEOUT)
        self._loop.close()
        self.callback.close()


@contextmanager
def desktop_client(mcp_url: str, **options: Any) -> Iterator[DesktopClient]:
    """A ``DesktopClient`` with its callback listening, closed (session, loop, callback) afterwards."""
    app = DesktopClient(mcp_url, **options)
    app.start()
    try:
        yield app
    finally:
        app.close()
