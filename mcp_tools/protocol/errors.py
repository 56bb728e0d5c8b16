"""The one boundary where failures become wire objects, shaped for the revision in use.

The rest of the app raises typed exceptions (:mod:`mcp_tools.exceptions`); only this module turns them
into JSON-RPC error responses (:func:`error_response`, :func:`request_failure`), or, where the revision asks
for it, into in-band ``isError`` results. :data:`CALL_FAILURES` says, for each kind of exception that can
end a ``tools/call``, how it is answered and what the audit trail records. A response remembers the kind of
error it carries, so that a transport can choose its own framing (an HTTP status, a close code) without
reading codes or messages.
"""

from __future__ import annotations

import enum
import logging
from dataclasses import dataclass
from typing import Any

from mcp_tools.conf import mcp_settings
from mcp_tools.connections import connection_lost, log_lost
from mcp_tools.exceptions import (
    ApprovalPending,
    CallFailed,
    CallTimedOut,
    CancelledByAdmin,
    DatabaseUnavailable,
    Declined,
    InvalidArguments,
    InvalidParams,
    NotConfirmed,
    ProtocolError,
    RateLimited,
    ResultRefused,
    ToolCrashed,
    ToolError,
    UrlElicitationRequired,
)
from mcp_tools.protocol import shapes
from mcp_tools.protocol import versions as v
from mcp_tools.protocol.versions import Revision
from mcp_tools.tools.content import CallResult, MalformedContent, Unsendable

logger = logging.getLogger("mcp_tools")
RequestId = int | str

GENERIC_FAILURE = CallFailed.default_message
UNSENDABLE = "The tool returned a value that cannot be sent as JSON."
MALFORMED = "The tool returned a content block that clients cannot read."
DATABASE_UNAVAILABLE = DatabaseUnavailable.default_message


class ErrorResponse(dict[str, Any]):
    """A JSON-RPC error response that remembers the kind of error it carries."""

    kind: type[ProtocolError] = ProtocolError


def error_response(request_id: RequestId | None, exc: ProtocolError) -> ErrorResponse:
    """The JSON-RPC error response for ``exc``: its code, safe message and data."""
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        error["data"] = exc.data
    response = ErrorResponse(jsonrpc="2.0", id=request_id, error=error)
    response.kind = type(exc)
    return response


def request_failure(request_id: RequestId | None, exc: Exception, method: str) -> ErrorResponse:
    """The answer to a request that raised ``exc``: its own error, -32030 for a lost database, else -32603."""
    if isinstance(exc, ProtocolError):
        return error_response(request_id, exc)
    if connection_lost(exc):
        log_lost(exc, f"answering {method}")
        return error_response(request_id, DatabaseUnavailable())
    # Unexpected: the caller learns nothing of it, the log everything.
    logger.error("Unexpected error answering %s", method, exc_info=exc)
    return error_response(request_id, ProtocolError())


def is_error(response: Any) -> bool:
    return isinstance(response, dict) and "error" in response


def invalid_arguments(reason: str, revision: Revision) -> dict[str, Any]:
    """Arguments that failed validation: an ``isError`` result from 2025-11-25 on, -32602 before."""
    if revision >= v.V2025_11_25:
        return tool_failure(f"Invalid arguments: {reason}", revision)
    raise InvalidParams("Invalid arguments", {"reason": reason})


def tool_failure(message: str, revision: Revision) -> dict[str, Any]:
    """A call that failed in band: an ``isError`` result, or -32602 for the draft, which has none."""
    if revision <= v.DRAFT:
        raise InvalidParams("Tool execution failed", {"reason": message or GENERIC_FAILURE})
    return shapes.call_result(failed_result(message), revision)


def failed_result(message: str) -> CallResult:
    return CallResult([{"type": "text", "text": message}], is_error=True)


# A failed tools/call ---------------------------------------------------------------------------------


class Reply(enum.Enum):
    """How a failed call is answered."""

    RESULT = "result"  # an isError result in the tool's place: shaped, measured and sized like one
    AT_ONCE = "at once"  # an isError result as it is: the result itself could not be sent, or never will be
    ARGUMENTS = "arguments"  # an isError result from 2025-11-25 on, -32602 before
    ERROR = "error"  # the JSON-RPC error the exception carries


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of :data:`CALL_FAILURES`: an exception kind, its audit outcome, its reply and fixed text."""

    kind: type[Exception]
    outcome: str  # a ToolCall.Outcome value
    reply: Reply
    text: str | None = None  # None: the exception's own (safe) message
    log: str = ""  # logged at ERROR with the tool's name and the exception, the caller seeing only the text


# The first rule whose kind matches applies; a lost database connection is matched before any of them.
CALL_FAILURES: tuple[Rule, ...] = (
    Rule(UrlElicitationRequired, "pending", Reply.ERROR),
    Rule(ProtocolError, "denied", Reply.ERROR),
    Rule(InvalidArguments, "invalid", Reply.ARGUMENTS),
    Rule(ToolError, "error", Reply.RESULT),
    Rule(RateLimited, "rate_limited", Reply.RESULT),
    Rule(CallTimedOut, "timeout", Reply.RESULT),
    Rule(CancelledByAdmin, "cancelled", Reply.AT_ONCE),
    Rule(ResultRefused, "error", Reply.AT_ONCE),
    Rule(Declined, "declined", Reply.AT_ONCE),
    Rule(ApprovalPending, "pending", Reply.AT_ONCE),
    Rule(NotConfirmed, "unconfirmed", Reply.AT_ONCE),
    Rule(CallFailed, "error", Reply.RESULT),
    Rule(
        MalformedContent,
        "error",
        Reply.RESULT,
        MALFORMED,
        "Tool %s returned a content block that clients cannot read: %s",
    ),
    Rule(Unsendable, "error", Reply.RESULT, UNSENDABLE, "Tool %s returned a value that cannot be sent as JSON: %s"),
)
_LOST = Rule(Exception, "error", Reply.RESULT, DATABASE_UNAVAILABLE)


@dataclass(frozen=True, slots=True)
class Failure:
    """How one failed ``tools/call`` is answered, and what its audit row says."""

    outcome: str
    message: str  # what the caller reads in band, and the audit row keeps
    reply: Reply
    error: ProtocolError | None = None  # raised for Reply.ERROR (and by the shapes that have no in-band form)
    recorded: bool = True  # False: one of a flood of refusals, whose counting window already has its row

    def answer(self, revision: Revision) -> dict[str, Any]:
        """The in-band answer for ``revision``; the wire error (a ProtocolError) is raised where there is none."""
        if self.error is not None:
            raise self.error
        if self.reply is Reply.ARGUMENTS:
            return invalid_arguments(self.message, revision)
        return tool_failure(self.message, revision)

    def result(self) -> CallResult:
        """The failure as the tool's result, for a RESULT reply."""
        return failed_result(self.message)


def call_failure(exc: Exception, tool_name: str) -> Failure | None:
    """How a call that raised ``exc`` is answered; None when it is no call's failure but the request's."""
    rule = _rule_for(exc, tool_name)
    if rule is None:
        return None
    if rule.log:
        logger.error(rule.log, tool_name, exc)
    elif isinstance(exc, ToolCrashed):
        logger.error("Tool %s failed", tool_name, exc_info=exc.__cause__ if mcp_settings.LOG_TRACEBACKS else None)
    elif isinstance(exc, CallFailed) and exc.detail:
        logger.error("Tool %s %s", tool_name, exc.detail)
    return Failure(
        outcome=rule.outcome,
        message=str(exc) if rule.text is None else rule.text,
        reply=rule.reply,
        error=exc if isinstance(exc, ProtocolError) else None,
        recorded=exc.first if isinstance(exc, RateLimited) else True,
    )


def _rule_for(exc: Exception, tool_name: str) -> Rule | None:
    if connection_lost(exc):
        # The thread that met it has closed the lost connection: the next call connects anew.
        log_lost(exc, f"calling {tool_name}")
        return _LOST
    return next((rule for rule in CALL_FAILURES if isinstance(exc, rule.kind)), None)
