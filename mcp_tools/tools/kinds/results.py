"""What a tool run returned, as the call's result: content blocks and, where it is structured, structuredContent."""

from __future__ import annotations

from typing import Any

from mcp_tools.tools import encoding
from mcp_tools.tools.content import (
    NO_STRUCTURED,
    CallResult,
    Content,
    MalformedContent,
    ToolResult,
    Unsendable,
    block_problem,
)


def checked_result(value: Any, *, wraps_result: bool = False, has_output_schema: bool = False) -> CallResult:
    """``to_result``, with a value JSON cannot carry reported as ``Unsendable``."""
    try:
        return to_result(value, wraps_result=wraps_result, has_output_schema=has_output_schema)
    except MalformedContent:
        raise
    except (TypeError, ValueError, RecursionError) as exc:
        raise Unsendable(f"{type(exc).__name__}: {exc}") from None


def to_result(value: Any, *, wraps_result: bool = False, has_output_schema: bool = False) -> CallResult:
    """Turn what a tool returned into content and, where it is structured, structuredContent; ``wraps_result``
    when its output schema wraps a plain value as ``{"result": ...}``."""
    if isinstance(value, CallResult):
        return value
    if isinstance(value, ToolResult):
        # The author's own blocks and structured value obey the same rules as a plain return value.
        if value.structured is NO_STRUCTURED:
            return CallResult(_blocks(value.content), NO_STRUCTURED, value.is_error, None)
        given = encoding.plain(value.structured)
        return CallResult(_blocks(value.content), given, value.is_error, given)
    if _is_content(value):
        return CallResult(_blocks([value]), value=None)
    if isinstance(value, list) and value and all(_is_content(v) for v in value):
        return CallResult(_blocks(value), value=None)
    if isinstance(value, str) and not wraps_result:
        return CallResult([{"type": "text", "text": value}], value=value)
    plain = encoding.plain(value)
    structured: Any = NO_STRUCTURED
    if wraps_result:
        structured = {"result": plain}
    elif isinstance(plain, dict) or has_output_schema:
        structured = plain
    text = plain if isinstance(plain, str) else encoding.text(plain)
    return CallResult([{"type": "text", "text": text}], structured, value=plain)


def _blocks(blocks: Any) -> list[dict[str, Any]]:
    if not isinstance(blocks, list | tuple):
        raise TypeError(f"content is a {type(blocks).__name__}, not a list of blocks")
    plain_blocks = [encoding.plain(block) for block in blocks]
    problem = next(filter(None, map(block_problem, plain_blocks)), None)
    if problem is not None:
        raise MalformedContent(problem)
    return plain_blocks


def _is_content(value: Any) -> bool:
    return isinstance(value, Content)
