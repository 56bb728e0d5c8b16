"""A call's progress notifications: finite numbers, a capped message, and nothing once the call has ended."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable
from typing import Any

from mcp_tools.protocol.jsonrpc import Encoded, compact_encoder, notification

logger = logging.getLogger("mcp_tools")
PROGRESS = "notifications/progress"
MAX_MESSAGE_CHARS = 1000
MAX_NOTIFICATION_BYTES = 8192
ELLIPSIS = "…"


def _refuse(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


# Strict: a value JSON cannot carry drops the notification rather than reaching the client as NaN or a repr.
_encode = compact_encoder(allow_nan=False, default=_refuse)


def _number(value: Any) -> bool:
    # Integers are finite however large (math.isfinite would overflow on them); the size cap bounds them.
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return isinstance(value, int) or math.isfinite(value)


class ProgressSender:
    """Sends one call's progress through ``emit`` until :meth:`close`; it never raises into the tool.

    A message longer than ``MAX_MESSAGE_CHARS`` is cut; a notification that still cannot be sent
    (a number that is not finite, a message that is not text, more than ``MAX_NOTIFICATION_BYTES``) is
    dropped. Each kind of trouble is logged once per call, so a tool reporting in a loop cannot flood the log.
    """

    def __init__(self, emit: Callable[[Any], None], tool_name: str) -> None:
        self.emit = emit
        self.tool_name = tool_name
        self.open = True
        self.logged: set[str] = set()

    def close(self) -> None:
        """The call is answered (or ended): later progress, from a thread or a left-over task, is dropped."""
        self.open = False

    def __call__(self, params: dict[str, Any]) -> None:
        if not self.open:
            self.log_once("ended", "progress reported after the call ended was dropped")
            return
        problem = self.problem(params)
        if problem is not None:
            self.log_once("dropped", f"progress notification dropped: {problem}")
            return
        message = params.get("message")
        if message is not None and len(message) > MAX_MESSAGE_CHARS:
            self.log_once("cut", f"progress message of {len(message)} characters cut to {MAX_MESSAGE_CHARS}")
            params = {**params, "message": message[: MAX_MESSAGE_CHARS - 1] + ELLIPSIS}
        value = notification(PROGRESS, params)
        try:
            text = _encode(value)
        except (TypeError, ValueError, RecursionError) as exc:
            self.log_once("dropped", f"progress notification dropped: {exc}")
            return
        if len(text) > MAX_NOTIFICATION_BYTES:
            self.log_once("dropped", f"progress notification dropped: larger than {MAX_NOTIFICATION_BYTES} bytes")
            return
        self.emit(Encoded(value, text))

    @staticmethod
    def problem(params: dict[str, Any]) -> str | None:
        if not _number(params.get("progress")):
            return "progress is not a finite number"
        if "total" in params and not _number(params["total"]):
            return "total is not a finite number"
        if "message" in params and not isinstance(params["message"], str):
            return "message is not text"
        return None

    def log_once(self, kind: str, text: str) -> None:
        if kind not in self.logged:
            self.logged.add(kind)
            logger.warning("Tool %s: %s", self.tool_name, text)
