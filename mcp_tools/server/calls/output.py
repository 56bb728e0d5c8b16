"""A call's result on its way out: checked against the output schema, shaped for the revision, and measured.

Each check raises (``OutputMismatch``, ``ResultRefused``); :mod:`mcp_tools.protocol.errors` answers.
"""

from __future__ import annotations

from typing import Any

from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import OutputMismatch, ResultRefused
from mcp_tools.protocol import errors, shapes
from mcp_tools.protocol import versions as v
from mcp_tools.protocol.jsonrpc import compact_encoder, depth_exceeds
from mcp_tools.protocol.versions import Revision
from mcp_tools.tools.content import CallResult
from mcp_tools.tools.entries import Entry

TOO_DEEP = "The result is nested deeper than {} levels."
# Deeper than this, common JSON parsers on the client side (serde_json stops at 128) refuse a message.
MAX_RESULT_DEPTH = 100

# A tool's result as it is sent: compact, ASCII, and never NaN or Infinity, which JSON cannot carry.
_encode_result = compact_encoder(allow_nan=False)


def check_output(entry: Entry, result: CallResult) -> CallResult:
    """``result``, once its structured content matches the tool's output schema."""
    check = entry.output_check
    if check is None or result.is_error:
        return result
    error = check.first_error(result.structured if result.has_structured else None)
    if error is None:
        return result
    raise OutputMismatch(detail=f"returned output that does not match its output schema: {error.message}")


def error_text(result: CallResult) -> str:
    """What an error result says, as the audit trail keeps it: its text blocks."""
    return " ".join(b.get("text", "") for b in result.content if b.get("type") == "text")


def shaped(result: CallResult, revision: Revision, message: str) -> dict[str, Any]:
    """The CallToolResult for ``revision``; an error result in the draft, which has none, is its wire error."""
    if result.is_error and revision <= v.DRAFT:
        return errors.tool_failure(message, revision)
    return shapes.call_result(result, revision)


def encoded(shaped: dict[str, Any]) -> str:
    """The result's JSON, as it will be sent."""
    try:
        return _encode_result(shaped)
    except (TypeError, ValueError, RecursionError) as exc:
        raise ResultRefused(errors.UNSENDABLE, f"returned a value that cannot be sent as JSON: {exc}") from None


def check_size(shaped: dict[str, Any], text: str) -> None:
    """Refuse a result larger than MAX_RESULT_BYTES or nested deeper than clients read."""
    if len(text) > int(mcp_settings.MAX_RESULT_BYTES):
        raise ResultRefused(f"The result is larger than {mcp_settings.MAX_RESULT_BYTES} bytes.")
    # Each level opens a bracket: a result with no more brackets than the limit cannot nest deeper.
    if text.count("[") + text.count("{") > MAX_RESULT_DEPTH and depth_exceeds(shaped, MAX_RESULT_DEPTH):
        raise ResultRefused(
            TOO_DEEP.format(MAX_RESULT_DEPTH), f"returned a result nested deeper than {MAX_RESULT_DEPTH} levels"
        )
