"""The two error families: protocol errors (JSON-RPC codes) and in-band tool errors."""

from __future__ import annotations

from typing import Any

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
UNAUTHENTICATED = -32001  # in the range JSON-RPC leaves to servers, outside the spec's reserved one
HEADER_MISMATCH = -32020
MISSING_CLIENT_CAPABILITY = -32021
UNSUPPORTED_PROTOCOL_VERSION = -32022
DATABASE_UNAVAILABLE = -32030  # the database connection was lost or refused: the same request may succeed soon
URL_ELICITATION_REQUIRED = -32042


class MCPError(Exception):
    """Root of every error this package raises on purpose."""


class ProtocolError(MCPError):
    """An error answered as a JSON-RPC error object."""

    code: int = INTERNAL_ERROR
    default_message: str = "Internal error"

    def __init__(self, message: str | None = None, data: Any = None) -> None:
        self.message = message or self.default_message
        self.data = data
        super().__init__(self.message)


class ParseError(ProtocolError):
    code = PARSE_ERROR
    default_message = "Parse error"


class InvalidRequest(ProtocolError):
    code = INVALID_REQUEST
    default_message = "Invalid Request"


class MethodNotFound(ProtocolError):
    code = METHOD_NOT_FOUND
    default_message = "Method not found"


class InvalidParams(ProtocolError):
    code = INVALID_PARAMS
    default_message = "Invalid params"


class UnknownTool(InvalidParams):
    """Raised for unknown tools and for tools the caller may not use alike."""

    def __init__(self, name: object) -> None:
        super().__init__(f"Unknown tool: {name}", {"reason": f"Unknown tool: {name}"})


class Unauthenticated(ProtocolError):
    """The connection's credentials stopped working: a revoked or expired token, an inactive user."""

    code = UNAUTHENTICATED
    default_message = "Authentication required"


class HeaderMismatch(ProtocolError):
    code = HEADER_MISMATCH
    default_message = "Header mismatch"


class MissingClientCapability(ProtocolError):
    code = MISSING_CLIENT_CAPABILITY
    default_message = "Missing required client capability"


class UnsupportedProtocolVersion(ProtocolError):
    code = UNSUPPORTED_PROTOCOL_VERSION
    default_message = "Unsupported protocol version"


class DatabaseUnavailable(ProtocolError):
    """The database could not be reached for a request other than a tool call (which answers in-band)."""

    code = DATABASE_UNAVAILABLE
    default_message = "The database is unavailable; retry shortly."


class UrlElicitationRequired(ProtocolError):
    """The call goes on only once the person has done something on a page of the site (2025-11-25 URL mode):
    ``data`` names the page as a URL-mode elicitation; the client retries the same call once it is done."""

    code = URL_ELICITATION_REQUIRED
    default_message = "This request needs the person to open a page first."

    def __init__(self, message: str, elicitation: dict[str, Any]) -> None:
        super().__init__(message, {"elicitations": [elicitation]})


class ToolError(MCPError):
    """Raise inside a tool: the message reaches the client in-band as an ``isError`` result."""


class InvalidArguments(MCPError):
    """Tool arguments failed validation; shaped per revision (JSON-RPC error or ``isError``)."""


class CallFailed(MCPError):
    """A call that ends in band with the server's own words: a limit, a time-out, a failure the tool did not mean.

    ``detail`` is for the log alone (what the tool did wrong); :mod:`mcp_tools.protocol.errors` says how each
    kind is answered and what the audit trail records.
    """

    default_message = "The tool failed with an internal error."

    def __init__(self, message: str | None = None, detail: str = "") -> None:
        self.message = message or self.default_message
        self.detail = detail
        super().__init__(self.message)


class TooManyCalls(CallFailed):
    """The session already runs as many calls as it may."""


class RateLimited(CallFailed):
    """A rate or a count of the caller's calls refused the call; ``first`` when it is its window's first refusal."""

    def __init__(self, message: str, first: bool = True) -> None:
        super().__init__(message)
        self.first = first


class CallTimedOut(CallFailed):
    """The tool did not finish within its time limit."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"The tool did not finish within {seconds:g} s.")


class ToolCrashed(CallFailed):
    """The tool raised an exception it did not mean for the caller; that exception is the ``__cause__``."""


class OutputMismatch(CallFailed):
    """The tool returned output that its output schema refuses."""


class ResultRefused(CallFailed):
    """The shaped result cannot be sent (not JSON, too large, too deep): answered at once with ``message``."""


class CancelledByAdmin(CallFailed):
    """An administrator cancelled the call: unlike a client's cancellation, it is answered."""

    default_message = "The call was cancelled by an administrator."


class NotConfirmed(CallFailed):
    """A call that needs a person's yes ran nothing: the client cannot ask, or the question expired."""


class Declined(CallFailed):
    """The person said no (or dismissed the question): nothing ran."""


class ApprovalPending(CallFailed):
    """The call waits for an approver's yes: nothing ran, and the same call runs once it is approved."""


class RowsChanged(Exception):
    """The rows a confirmed write would touch changed since the person saw them: nothing was written."""


class InputRequired(Exception):
    """A 2026-07-28 call that needs the client to ask its user first: answered with ``result``
    (``resultType: "input_required"``) rather than run; ``note`` says so in the audit trail."""

    def __init__(self, result: dict[str, Any], note: str = "A person was asked to confirm the call.") -> None:
        super().__init__("input required")
        self.result = result
        self.note = note


class CannotAsk(ToolError):
    """A tool's question that cannot be put or answered here: the call ends in band with this message."""
