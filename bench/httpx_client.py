"""The same small HTTP client interface as `http11`, on httpx (one keep-alive `AsyncClient` per session)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
from rpc import TransportError


class HttpxReply:
    """A streamed httpx response read once, whole or line by line."""

    def __init__(self, response: httpx.Response) -> None:
        self.status = response.status_code
        self._response = response
        self._lines = self._checked_lines()

    def header(self, name: str) -> str | None:
        value: str | None = self._response.headers.get(name)
        return value

    async def read(self) -> bytes:
        try:
            return await self._response.aread()
        except httpx.HTTPError as exc:
            raise TransportError(f"reading the body failed: {exc!r}") from exc

    def lines(self) -> AsyncIterator[str]:
        return self._lines

    async def drain(self) -> None:
        async for _ in self._lines:
            pass

    async def close(self) -> None:
        await self._response.aclose()

    async def _checked_lines(self) -> AsyncIterator[str]:
        try:
            async for line in self._response.aiter_lines():
                yield line
        except httpx.HTTPError as exc:
            raise TransportError(f"reading the stream failed: {exc!r}") from exc


class HttpxClient:
    """Requests to one URL; waits are bounded by the caller, so reads carry no timeout of their own."""

    def __init__(self, url: str, headers: dict[str, str], timeout: float = 30.0) -> None:
        self.headers = dict(headers)
        self._url = url
        self._client = httpx.AsyncClient(timeout=httpx.Timeout(timeout, read=None), trust_env=False)

    async def send(self, method: str, headers: dict[str, str] | None = None, body: bytes = b"") -> HttpxReply:
        merged = {**self.headers, **headers} if headers else self.headers
        request = self._client.build_request(method, self._url, headers=merged, content=body or None)
        try:
            return HttpxReply(await self._client.send(request, stream=True))
        except httpx.HTTPError as exc:
            raise TransportError(f"HTTP {method} failed: {exc!r}") from exc

    async def close(self) -> None:
        await self._client.aclose()
