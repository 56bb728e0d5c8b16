"""Picks the transport for a URL and opens many sessions with bounded concurrency."""

from __future__ import annotations

import asyncio
from functools import partial
from urllib.parse import urlsplit

from http11 import Http11Client
from http_transport import HttpClientFactory, HttpTransport
from httpx_client import HttpxClient
from rpc import BenchError, SessionOptions, Transport
from ws_transport import WebSocketTransport


def transport_name(options: SessionOptions) -> str:
    scheme = urlsplit(options.url).scheme
    era = "modern" if options.modern else "legacy"
    if scheme in ("ws", "wss"):
        return f"ws-{era}"
    return f"http-{era}({options.http_client})"


def make_transport(options: SessionOptions) -> Transport:
    scheme = urlsplit(options.url).scheme
    if scheme in ("ws", "wss"):
        return WebSocketTransport(options)
    if scheme in ("http", "https"):
        return HttpTransport(options, http_client_factory(options))
    raise BenchError(f"unsupported URL scheme {scheme!r}: use ws://, wss://, http:// or https://")


def http_client_factory(options: SessionOptions) -> HttpClientFactory:
    if options.http_client == "httpx":
        return partial(HttpxClient, timeout=options.timeout)
    return Http11Client


async def open_sessions(options: SessionOptions, count: int, concurrency: int, listen: bool) -> list[Transport]:
    """Connect `count` sessions, at most `concurrency` handshakes at a time; all or none stay open."""
    gate = asyncio.Semaphore(concurrency)

    async def open_one() -> Transport:
        transport = make_transport(options)
        async with gate:
            try:
                async with asyncio.timeout(options.timeout):
                    await transport.connect()
                    if listen:
                        await transport.listen()
            except BaseException:
                await transport.close()
                raise
        return transport

    tasks = [asyncio.create_task(open_one()) for _ in range(count)]
    results = await asyncio.gather(*tasks, return_exceptions=True)
    sessions = [result for result in results if not isinstance(result, BaseException)]
    failures = [result for result in results if isinstance(result, BaseException)]
    if failures:
        await close_sessions(sessions)
        raise BenchError(f"{len(failures)} of {count} sessions failed to open; first: {failures[0]!r}")
    return sessions


async def close_sessions(sessions: list[Transport]) -> None:
    await asyncio.gather(*(session.close() for session in sessions), return_exceptions=True)
