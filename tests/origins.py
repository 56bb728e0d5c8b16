"""Which Origin a connection accepts: the verdict tables the WebSocket and HTTP tests both run."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.live.servers import ServerProcess

# (secure connection, Host header, Origin header, accepted)
ORIGIN_CASES: list[tuple[bool, str, str | None, bool]] = [
    (False, "testserver", None, True),
    (False, "testserver", "http://testserver", True),
    (False, "testserver", "http://TESTSERVER:80", True),
    (False, "testserver:80", "http://testserver", True),
    (False, "127.0.0.1:8000", "http://127.0.0.1:8000", True),
    (False, "127.0.0.1:8000", "http://127.0.0.1:3000", False),
    (False, "127.0.0.1:8000", "https://localhost:4444", False),
    (False, "127.0.0.1:8000", "http://localhost:8000", False),
    (False, "127.0.0.1:8000", "https://127.0.0.1:8000", False),
    (True, "testserver", "https://testserver", True),
    (True, "testserver", "https://testserver:443", True),
    (True, "testserver:443", "https://testserver", True),
    (True, "testserver", "http://testserver", False),
    (True, "testserver", "https://testserver:8443", False),
    (False, "[::1]:8000", "http://[::1]:8000", True),
    (False, "[::1]:8000", "http://[::1]:8001", False),
    (False, "[::1]:8000", "http://127.0.0.1:8000", False),
    (False, "[::1]", "http://[::1]:80", True),
    (False, "testserver", "null", False),
    (False, "testserver", "", False),
    (False, "testserver", "file://testserver", False),
    (False, "testserver", "ws://testserver", False),
    (False, "testserver", "http://evil.example", False),
    (False, "testserver", "http://testserver.evil.example", False),
    (False, "testserver", "http://testserver/", False),
    (False, "testserver", "http://user@testserver", False),
    (False, "testserver", "http://testserver:port", False),
    (False, "testserver", "http://[::1", False),
]
ORIGIN_IDS = [f"{'secure' if s else 'plain'}-{h}-{o}" for s, h, o, _accepted in ORIGIN_CASES]
LISTED_ORIGIN_VERDICTS = [
    ("https://app.example", True),
    ("https://app.example:443", True),
    ("http://app.example", False),
    ("https://app.example:8443", False),
    ("https://sub.app.example", False),
    ("http://[::1]:3000", True),
    ("http://[::1]:3001", False),
]
LISTED_ORIGINS = [origin for origin, _accepted in LISTED_ORIGIN_VERDICTS]
CSRF_ORIGIN_VERDICTS = [
    ("https://shop.example", True),
    ("http://shop.example", False),
    ("https://a.example.com", True),
    ("https://a.b.example.com", True),
    ("https://a.example.com:8443", False),
    ("http://a.example.com", False),
    ("https://example.com.evil", False),
]
CSRF_ORIGINS = [origin for origin, _accepted in CSRF_ORIGIN_VERDICTS]
# (X-Forwarded-Proto, Origin, accepted) on a plain connection to testserver, the proxy header set.
PROXY_CASES: list[tuple[str | None, str, bool]] = [
    ("https", "https://testserver", True),
    ("https", "http://testserver", False),
    ("https, http", "https://testserver", True),
    ("http", "http://testserver", True),
    ("http", "https://testserver", False),
    (None, "http://testserver", True),
]


def local_origins(server: ServerProcess) -> list[tuple[str, bool]]:
    """Origins of pages a browser on this machine might show, and whether the server on its port takes them."""
    return [
        (server.base_url, True),
        (f"http://127.0.0.1:{server.port + 1}", False),
        (f"https://127.0.0.1:{server.port}", False),
        (f"http://localhost:{server.port}", False),
        ("https://localhost:4444", False),
        ("null", False),
    ]
