"""JSON-RPC 2.0 envelopes: decode and validate incoming messages, encode outgoing ones."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeGuard

from mcp_tools.exceptions import InvalidRequest, ParseError, ProtocolError

RequestId = int | str


@dataclass(frozen=True, slots=True)
class Request:
    id: RequestId
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Notification:
    method: str
    params: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Response:
    """A response or error from the client: the answer to a question the server asked (elicitation)."""

    id: RequestId | None
    result: Any = None  # an object when the client answered, else None
    error: Any = None  # the client's error object when it refused


@dataclass(frozen=True, slots=True)
class Invalid:
    """A message that failed validation; ``id`` is what could be recovered of it."""

    id: RequestId | None
    error: ProtocolError


Message = Request | Notification | Response | Invalid


class RawJSON(str):
    """Already-encoded JSON, spliced verbatim by :func:`encode`."""

    __slots__ = ()


class Encoded(dict[str, Any]):
    """A JSON object that also holds its encoding ``text``, which :func:`encode` splices as it does RawJSON.

    For a value that had to be encoded anyway (a tool's result, to measure it): it is not encoded twice.
    Code that changes it must change a copy (``dict(value)``), or the text would no longer say the same.
    """

    __slots__ = ("text",)

    def __init__(self, value: dict[str, Any], text: str) -> None:
        super().__init__(value)
        self.text = text


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is out of range")
    return number


def _not_json(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# One decoder for every message: json.loads with hooks would build a new one per call.
_decoder = json.JSONDecoder(parse_float=_finite, parse_constant=_not_json)


def parse(text: str | bytes) -> Any:
    """Decode strict JSON: NaN, Infinity and numbers out of float range are parse errors."""
    try:
        if isinstance(text, bytes):
            # As json.loads reads bytes: UTF-8, -16 or -32 by their first bytes.
            text = text.decode(json.detect_encoding(text), "surrogatepass")
        return _decoder.decode(text)
    except RecursionError:
        raise InvalidRequest("Message nested too deeply") from None
    except (ValueError, UnicodeDecodeError):
        raise ParseError() from None


def decode(text: str | bytes, *, max_bytes: int, max_depth: int) -> Any:
    """One received message (or batch) as JSON values, within the size and nesting limits."""
    # The limit is in bytes; a str of non-ASCII characters is longer once encoded.
    size = len(text) if isinstance(text, bytes) or text.isascii() else len(text.encode())
    if size > max_bytes:
        raise InvalidRequest(f"Message larger than {max_bytes} bytes")
    decoded = parse(text)
    # Each level opens a bracket: a message with no more brackets than the limit cannot nest deeper.
    if _brackets(text) > max_depth and depth_exceeds(decoded, max_depth):
        raise InvalidRequest(f"Message nested deeper than {max_depth} levels")
    return decoded


def _brackets(text: str | bytes) -> int:
    if isinstance(text, bytes):
        return text.count(b"{") + text.count(b"[")
    return text.count("{") + text.count("[")


def depth_exceeds(value: Any, limit: int) -> bool:
    """Whether containers nest deeper than ``limit``; iterative, stops at the first excess."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False


def _valid_id(value: Any) -> TypeGuard[RequestId]:
    return isinstance(value, int | str) and not isinstance(value, bool)


def classify(obj: Any) -> Message:
    """Turn one decoded JSON value into a typed message, never raising."""
    if not isinstance(obj, dict):
        return Invalid(None, InvalidRequest("Message must be a JSON object"))
    raw_id = obj.get("id")
    recovered = raw_id if _valid_id(raw_id) else None
    if obj.get("jsonrpc") != "2.0":
        return Invalid(recovered, InvalidRequest('"jsonrpc" must be "2.0"'))
    if "method" not in obj:
        if ("result" in obj) != ("error" in obj) and (raw_id is None or _valid_id(raw_id)):
            return Response(recovered, obj.get("result"), obj.get("error"))
        return Invalid(recovered, InvalidRequest("Message is neither request, notification nor response"))
    method = obj["method"]
    if not isinstance(method, str):
        return Invalid(recovered, InvalidRequest('"method" must be a string'))
    params = obj.get("params", {})
    if params is None and "params" not in obj:
        params = {}
    if not isinstance(params, dict):
        return Invalid(recovered, InvalidRequest('"params" must be an object'))
    if "id" not in obj:
        return Notification(method, params)
    if not _valid_id(raw_id):
        return Invalid(None, InvalidRequest('"id" must be a string or an integer'))
    return Request(raw_id, method, params)


def result(request_id: RequestId, value: dict[str, Any]) -> dict[str, Any]:
    message = {"jsonrpc": "2.0", "id": request_id, "result": value}
    if isinstance(value, Encoded):
        # The response's text around the result's, which encode() would otherwise build a piece at a time.
        return Encoded(message, f'{{"jsonrpc":"2.0","id":{_dumps(request_id)},"result":{value.text}}}')
    return message


def notification(method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def compact_encoder(*, allow_nan: bool = True, default: Callable[[Any], Any] = str) -> Callable[[Any], str]:
    """``json.JSONEncoder(separators=(",", ":"), default=default, allow_nan=allow_nan).encode``: compact ASCII.

    Without the set-up ``JSONEncoder.encode`` repeats on every call (a closure and Python-level checks
    before it reaches the C encoder), which cost a microsecond or more per message.
    """
    fallback = json.JSONEncoder(separators=(",", ":"), default=default, allow_nan=allow_nan).encode
    make = getattr(json.encoder, "c_make_encoder", None)  # the C accelerator; absent from the type stubs
    if make is None:
        return fallback
    ascii_string = json.encoder.encode_basestring_ascii

    def encode(value: Any) -> str:
        # A fresh markers dict per message, as JSONEncoder's: circular values are refused with ValueError.
        return "".join(make({}, default, ascii_string, None, ":", ",", False, False, allow_nan)(value, 0))

    return encode


# ASCII output: a lone surrogate from a client's "\\ud800" stays an escape instead of breaking UTF-8.
_dumps = compact_encoder()


def encode(message: Any) -> str:
    """Encode a message; :class:`RawJSON` values one or two levels deep are spliced as they are."""
    if isinstance(message, RawJSON):
        return message
    if isinstance(message, Encoded):
        return message.text
    parts: list[str] = []
    _encode_into(message, parts)
    # One join: a spliced value (a page of a thousand definitions) is copied once, not once per level.
    return parts[0] if len(parts) == 1 else "".join(parts)


def _encode_into(message: Any, parts: list[str]) -> None:
    if isinstance(message, RawJSON):
        parts.append(message)
    elif isinstance(message, Encoded):
        parts.append(message.text)
    elif isinstance(message, list):
        parts.append("[")
        for index, item in enumerate(message):
            if index:
                parts.append(",")
            _encode_into(item, parts)
        parts.append("]")
    elif isinstance(message, dict) and _contains_raw(message):
        opening = "{"
        for key, value in message.items():
            parts.append(f"{opening}{_dumps(key)}:")
            opening = ","
            _encode_into(value, parts)
        parts.append("}")
    else:
        parts.append(_dumps(message))


def _contains_raw(value: Any, depth: int = 0) -> bool:
    if isinstance(value, RawJSON | Encoded):
        return True
    if isinstance(value, dict) and depth < 2:
        return any(_contains_raw(v, depth + 1) for v in value.values())
    return False
