"""A lean HTTP/1.1 keep-alive client: enough for JSON and SSE replies, at a fraction of httpx's CPU cost."""

from __future__ import annotations

import asyncio
import functools
import ssl
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

from rpc import TransportError

NO_BODY_STATUSES = frozenset({204, 304})
HEAD_LIMIT = 1024 * 1024


class Connection:
    """One TCP connection; `reusable` turns false once the server or a half-read reply rules reuse out."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.reusable = True

    def close(self) -> None:
        self.reusable = False
        self.writer.close()


class Http11Reply:
    """A response whose body is read once, either whole (`read`) or line by line (`lines`)."""

    def __init__(self, client: Http11Client, connection: Connection, status: int, headers: dict[str, str]) -> None:
        self.status = status
        self._client = client
        self._connection = connection
        self._headers = headers
        self._finished = False
        self._body = self._chunks()
        self._lines: AsyncIterator[str] | None = None

    def header(self, name: str) -> str | None:
        return self._headers.get(name.lower())

    async def read(self) -> bytes:
        return b"".join([chunk async for chunk in self._body])

    def lines(self) -> AsyncIterator[str]:
        if self._lines is None:
            self._lines = self._split_lines()
        return self._lines

    async def drain(self) -> None:
        async for _ in self._body:
            pass

    async def close(self) -> None:
        if not self._finished:
            self._finished = True
            self._connection.close()

    async def _split_lines(self) -> AsyncIterator[str]:
        pending = b""
        async for chunk in self._body:
            *complete, pending = (pending + chunk).split(b"\n")
            for line in complete:
                yield line.removesuffix(b"\r").decode(errors="replace")
        if pending:
            yield pending.removesuffix(b"\r").decode(errors="replace")

    async def _chunks(self) -> AsyncIterator[bytes]:
        reader = self._connection.reader
        try:
            if self.status in NO_BODY_STATUSES:
                pass
            elif "chunked" in self._headers.get("transfer-encoding", ""):
                async for chunk in chunked_body(reader):
                    yield chunk
            elif "content-length" in self._headers:
                yield await reader.readexactly(int(self._headers["content-length"]))
            else:
                self._connection.reusable = False
                while chunk := await reader.read(65536):
                    yield chunk
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.LimitOverrunError) as exc:
            self._connection.close()
            raise TransportError(f"reading the body failed: {exc!r}") from exc
        self._finished = True
        self._client.release(self._connection)


async def chunked_body(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    while True:
        size = int((await reader.readuntil(b"\r\n")).split(b";", 1)[0], 16)
        if size == 0:
            while await reader.readuntil(b"\r\n") != b"\r\n":
                pass
            return
        chunk = await reader.readexactly(size + 2)
        yield chunk[:-2]


@functools.cache
def tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


class Http11Client:
    """Requests to one URL over a small pool of keep-alive connections (one per reply in flight)."""

    def __init__(self, url: str, headers: dict[str, str]) -> None:
        parts = urlsplit(url)
        self._host = parts.hostname or "localhost"
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._ssl = tls_context() if parts.scheme == "https" else None
        self._target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._authority = parts.netloc.rsplit("@", 1)[-1]
        self.headers = dict(headers)
        self._idle: list[Connection] = []

    async def send(self, method: str, headers: dict[str, str] | None = None, body: bytes = b"") -> Http11Reply:
        reused = bool(self._idle)
        connection = self._idle.pop() if reused else await self._open()
        request = self._encode(method, headers, body)
        try:
            connection.writer.write(request)
            return await self._reply(connection)
        except (OSError, asyncio.IncompleteReadError) as exc:
            connection.close()
            if not reused:
                raise TransportError(f"HTTP {method} failed: {exc!r}") from exc
        except (ValueError, asyncio.LimitOverrunError) as exc:
            connection.close()
            raise TransportError(f"malformed HTTP response to {method}: {exc!r}") from exc
        return await self.send(method, headers, body)

    def release(self, connection: Connection) -> None:
        if connection.reusable:
            self._idle.append(connection)
        else:
            connection.close()

    async def close(self) -> None:
        for connection in self._idle:
            connection.close()
        self._idle.clear()

    async def _open(self) -> Connection:
        try:
            reader, writer = await asyncio.open_connection(self._host, self._port, ssl=self._ssl, limit=HEAD_LIMIT)
        except OSError as exc:
            raise TransportError(f"cannot connect to {self._authority}: {exc}") from exc
        return Connection(reader, writer)

    def _encode(self, method: str, headers: dict[str, str] | None, body: bytes) -> bytes:
        lines = [f"{method} {self._target} HTTP/1.1", f"Host: {self._authority}"]
        merged = {**self.headers, **headers} if headers else self.headers
        lines.extend(f"{name}: {value}" for name, value in merged.items())
        if body or method in ("POST", "PUT"):
            lines.append(f"Content-Length: {len(body)}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body

    async def _reply(self, connection: Connection) -> Http11Reply:
        head = (await connection.reader.readuntil(b"\r\n\r\n")).decode("latin-1").split("\r\n")
        status = int(head[0].split(" ", 2)[1])
        headers: dict[str, str] = {}
        for line in head[1:]:
            name, _, value = line.partition(":")
            if name:
                headers[name.strip().lower()] = value.strip()
        if headers.get("connection", "").lower() == "close":
            connection.reusable = False
        return Http11Reply(self, connection, status, headers)
