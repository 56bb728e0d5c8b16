"""The call context a tool receives as ``ctx``: caller, the caller's rows, progress, cancellation and questions."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any

from mcp_tools.access.scopes import scoped
from mcp_tools.exceptions import CannotAsk
from mcp_tools.tools import asks

SYNC_CANNOT_ASK = "Only async tools can ask for input: a sync tool would hold a thread while a person answers."
# Receives the params of one ``notifications/progress``; the server wraps and sends them.
Progress = Callable[[dict[str, Any]], None]


class CallCancelled(Exception):
    """Raised by :meth:`Context.check_cancelled` once the client cancelled the call."""


class Context:
    """Passed to a tool that declares a ``ctx`` parameter.

    ``report_progress`` works from async and sync tools alike and never blocks; sync tools that run
    long poll ``cancelled`` (or call ``check_cancelled``) because a thread cannot be interrupted. Only async
    tools may ``ask`` (or ``elicit``): a sync tool would hold one of the tools' threads while a person thinks.
    """

    def __init__(
        self,
        *,
        user: Any,
        tool_name: str,
        request_id: int | str | None = None,
        progress_token: int | str | None = None,
        progress: Progress | None = None,
        transport: str = "",
        session_id: str = "",
        credential: Any = None,
    ) -> None:
        self.user = user
        #: What the caller authenticated with: a site token, an OAuth access token, or None for a session login.
        self.credential = credential
        self.tool_name = tool_name
        self.request_id = request_id
        self.progress_token = progress_token
        self.transport = transport
        self.session_id = session_id
        #: Set when a person confirmed the call: the state of the rows they saw (see ``ToolKind.changes``); a
        #: kind that writes them refuses to write on any other.
        self.confirmed_state: str | None = None
        #: Puts the tool's questions to the client; None where the call has nobody to ask (see ``ask``).
        self.asker: asks.Asker | None = None
        #: Set for a sync tool, which runs in a thread: it may not wait for a person.
        self.in_thread = False
        self._progress = progress
        # A plain flag, which sync tools may poll from their thread; the event exists once a tool waits on it.
        self._cancelled = False
        self._event: threading.Event | None = None
        self._loop = _running_loop()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        self._cancelled = True
        if self._event is not None:
            self._event.set()

    def wait_cancelled(self, timeout: float | None = None) -> bool:
        """Block a sync tool's thread until the call is cancelled or ``timeout`` passes; True once cancelled."""
        if self._event is None:
            self._event = threading.Event()
            # ``cancel`` sets the flag before it looks for the event: one of the two sees the other.
            if self._cancelled:
                self._event.set()
        return self._event.wait(timeout)

    def check_cancelled(self) -> None:
        if self._cancelled:
            raise CallCancelled(self.tool_name)

    def queryset(self, model: Any) -> Any:
        """The rows of ``model`` the caller may see, as :func:`mcp_tools.scoped` gives them."""
        return scoped(model, self.user)

    def can_ask(self, method: str) -> bool:
        """Whether ``ask`` can put a ``method`` request (``elicitation/create``, ...) to this call's client."""
        return not self.in_thread and self.asker is not None and self.asker.can_ask(method)

    async def ask(self, requests: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        """Ask the client (and through it, the person) for input mid-call; the answers by key.

        ``requests`` maps keys to ``{"method": ..., "params": ...}`` of ``elicitation/create``,
        ``sampling/createMessage`` or ``roots/list``. On a legacy session each goes to the client and is awaited;
        in 2026-07-28 the call answers ``input_required`` and the tool runs again from the start when the client
        comes back with the answers, each ``ask`` then returning what was given. Raises ``CannotAsk`` (answered in
        band) when the client did not declare what a request needs or nothing can carry it.
        """
        checked = asks.checked_requests(requests)
        if self.in_thread:
            raise CannotAsk(SYNC_CANNOT_ASK)
        if self.asker is None:
            raise CannotAsk("This call cannot ask its client anything.")
        return await self.asker.ask(checked)

    async def elicit(self, message: str, requested_schema: dict[str, Any]) -> asks.Elicited:
        """Ask the person to fill a form (``elicitation/create``); their action and the content they gave."""
        params = {"message": message, "requestedSchema": requested_schema}
        answers = await self.ask({asks.ELICIT_KEY: {"method": "elicitation/create", "params": params}})
        return asks.elicited(answers[asks.ELICIT_KEY])

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` when the client asked for it; otherwise do nothing."""
        if self.progress_token is None or self._progress is None or self.cancelled:
            return
        params: dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        if self._loop is None or _running_loop() is self._loop:
            self._progress(params)
            return
        # A closed loop (the server stopped) leaves nobody to tell.
        with contextlib.suppress(RuntimeError):
            self._loop.call_soon_threadsafe(self._progress, params)


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
