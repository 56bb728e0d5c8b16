"""Streamable HTTP reduced to its floor as a WSGI application: ``baseline.py``'s bare HTTP consumer, for
gunicorn. Set beside that consumer under uvicorn, it measures what a WSGI server costs before any Django or
MCP code runs: the floor under the WSGI door's ratio to the ASGI doors."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Callable, Iterable
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "project.settings")

from baseline import answer, encode, error


def application(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
    method = environ["REQUEST_METHOD"]
    if method == "DELETE":
        return respond(start_response, "204 No Content", b"")
    if method != "POST":
        return respond(start_response, "405 Method Not Allowed", b"")
    body = environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
    try:
        message = json.loads(body)
    except ValueError:
        return respond(start_response, "400 Bad Request", encode(error(None, -32700, "Parse error")).encode(), True)
    response = answer(message)
    if response is None:
        return respond(start_response, "202 Accepted", b"")
    extra = [("mcp-session-id", uuid.uuid4().hex)] if message.get("method") == "initialize" else []
    return respond(start_response, "200 OK", encode(response).encode(), True, extra)


def respond(
    start_response: Callable[..., Any], status: str, body: bytes, json_body: bool = False, extra: Any = ()
) -> list[bytes]:
    headers = [("content-length", str(len(body))), *extra]
    if json_body:
        headers.append(("content-type", "application/json"))
    start_response(status, headers)
    return [body]
