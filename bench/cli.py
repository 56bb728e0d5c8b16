"""Command-line options every benchmark shares, and the event loop they run on."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Coroutine
from typing import Any, TypeVar

from rpc import LEGACY_VERSION, MODERN_VERSION, SessionOptions

T = TypeVar("T")


def add_session_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("url", help="ws://HOST/mcp/ws, http://HOST/mcp, ...")
    parser.add_argument("--token", help="sent as 'Authorization: Bearer TOKEN'")
    parser.add_argument(
        "--protocol-version",
        help=f"revision to request (default {LEGACY_VERSION}; {MODERN_VERSION} with --modern)",
    )
    parser.add_argument(
        "--modern",
        action="store_true",
        help=f"stateless {MODERN_VERSION} requests: no initialize, per-request _meta",
    )
    parser.add_argument("--origin", help="Origin header for the handshake and every HTTP request")
    parser.add_argument("--timeout", type=float, default=30.0, help="bound on every single wait, seconds (default 30)")

    parser.add_argument(
        "--http-client",
        choices=("http11", "httpx"),
        default="http11",
        help="HTTP engine: the built-in lean HTTP/1.1 client (default) or httpx",
    )


def session_options(args: argparse.Namespace) -> SessionOptions:
    version = args.protocol_version or (MODERN_VERSION if args.modern else LEGACY_VERSION)
    return SessionOptions(
        url=args.url,
        token=args.token,
        protocol_version=version,
        modern=args.modern,
        origin=args.origin,
        timeout=args.timeout,
        http_client=args.http_client,
    )


def loop_name() -> str:
    try:
        import uvloop  # noqa: F401
    except ImportError:
        return "asyncio"
    return "uvloop"


def run(main: Coroutine[Any, Any, T]) -> T:
    """Run `main` on uvloop when it is installed, else on the default asyncio loop."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)
