"""A tools/call in flight: its steps in order, and its one way of answering a failure."""

from __future__ import annotations

import asyncio
import time
from typing import Any

from mcp_tools.access import call_counts
from mcp_tools.exceptions import CancelledByAdmin, InputRequired, NotConfirmed, ResultRefused, RowsChanged
from mcp_tools.models import ToolCall
from mcp_tools.protocol import errors
from mcp_tools.protocol.jsonrpc import Encoded, Request
from mcp_tools.protocol.versions import Revision
from mcp_tools.server.calls import admission, asking, confirmation, output, record, request_state, run
from mcp_tools.server.running_calls import ADMIN_CANCELLED, running_calls
from mcp_tools.server.session import InFlight, Session
from mcp_tools.tools.catalog import catalog
from mcp_tools.tools.content import CallResult
from mcp_tools.tools.context import Context
from mcp_tools.tools.entries import Entry

Outcome = ToolCall.Outcome
# Rows that change between every question and its answer end the call after this many questions.
MAX_ROUNDS = 3
KEPT_CHANGING = "The rows this call would change kept changing while you were asked. Nothing was changed."


class Call:
    """A tools/call in flight; every way it can end is recorded once.

    :meth:`answer` walks the steps: :mod:`.admission` (may the caller run this tool with these arguments,
    now), :mod:`.run` (the tool under its time limit), :mod:`.output` (its result checked, shaped and
    measured) and :mod:`.record` (the audit row). The steps raise; :func:`mcp_tools.protocol.errors.call_failure`
    says how each failure is answered and recorded.
    """

    def __init__(self, session: Session, request: Request, revision: Revision, capabilities: dict[str, Any]) -> None:
        self.session, self.request, self.revision, self.capabilities = session, request, revision, capabilities
        self.name = request.params.get("name")
        self.arguments = request.params.get("arguments")
        self.started = time.perf_counter()
        self.outcome = Outcome.OK
        self.message = ""
        self.result_bytes = 0
        self.entry: Entry | None = None
        self.ctx: Context | None = None
        self.task: asyncio.Task[Any] | None = None
        self.cancelling = -1  # the task's cancellation count before an administrator cancelled it; -1: never
        self.recorded = True  # False for a refusal that its counting window has already recorded
        self.confirmed: confirmation.Confirmed | None = None
        self.counted: call_counts.Places | None = None  # places counted with the rates, for the first Places

    async def answer(self) -> dict[str, Any]:
        self.task = asyncio.current_task()
        registry = running_calls()
        key = registry.add(self)
        try:
            return await self.respond()
        except asyncio.CancelledError:
            if not self.admin_cancelled():
                self.outcome, self.message = Outcome.CANCELLED, "cancelled by the client"
                raise
            return self.failed(CancelledByAdmin(ADMIN_CANCELLED)).answer(self.revision)
        finally:
            registry.discard(key)
            admission.give_back_unused(self)
            await self.audit()

    async def respond(self) -> dict[str, Any]:
        """The answer: the tool's result, or a failure as the boundary answers it."""
        try:
            result = await self.result()
        except InputRequired as asked:
            self.outcome, self.message = Outcome.ASKED, asked.note
            return asked.result
        except Exception as exc:
            failure = self.failed(exc)
            if failure.reply is not errors.Reply.RESULT:
                return failure.answer(self.revision)
            result = failure.result()
        if result.is_error and self.outcome == Outcome.OK:
            self.outcome, self.message = Outcome.ERROR, output.error_text(result)
        shaped = output.shaped(result, self.revision, self.message)
        try:
            text = output.encoded(shaped)
            self.result_bytes = len(text)
            output.check_size(shaped, text)
        except ResultRefused as exc:
            return self.failed(exc).answer(self.revision)
        # Encoded to measure it, the result is sent as it was measured rather than encoded again.
        return Encoded(shaped, text)

    async def result(self) -> CallResult:
        """What the tool produced, once admitted; the steps raise, and hold their places until it returns."""
        snapshot = await catalog.get()
        entry, arguments = await admission.admit(self, snapshot)
        if self.revision.is_modern:
            request_state.check(self.request.params)
        seconds = admission.time_limit(entry)
        # A yes given in an earlier round of this call's questions stands (once): nobody confirms twice.
        carried = await asking.carried_confirmation(self, entry, arguments)
        for _round in range(MAX_ROUNDS):
            confirmed = carried or await confirmation.confirm(self, entry, arguments, seconds)
            self.confirmed, carried = confirmed, None
            state = confirmed.state if confirmed is not None else None
            try:
                async with admission.Places(self, entry, seconds):
                    return output.check_output(entry, await run.run_tool(self, entry, arguments, seconds, state))
            except RowsChanged:
                self.confirmed = None  # the yes was for rows that are no longer there: ask again
        raise NotConfirmed(KEPT_CHANGING)

    def failed(self, exc: Exception) -> errors.Failure:
        """How ``exc`` ends the call, as the boundary says, noted for the audit row; raised again when the
        boundary does not answer it (the request then fails as a whole)."""
        failure = errors.call_failure(exc, str(self.name))
        if failure is None:
            raise exc
        self.outcome, self.message, self.recorded = Outcome(failure.outcome), failure.message, failure.recorded
        return failure

    async def audit(self) -> None:
        await record.record(self)

    # The registry of calls in flight (running_calls.Stoppable) -------------------------------------

    def describe(self) -> dict[str, Any]:
        """Who runs what, as the admin's list of calls in flight shows it."""
        user = self.session.user
        authenticated = getattr(user, "is_authenticated", False)
        return {
            "user_id": user.pk if authenticated else None,
            "username": user.get_username()[:150] if authenticated else "",
            "tool_name": str(self.name)[:128],
            "transport": self.session.transport[:16],
            "session_id": self.session.session_id[:64],
        }

    def stop_by_admin(self) -> None:
        """Cancel the call for an administrator: unlike a client's cancellation, it is answered."""
        if self.cancelling >= 0 or self.task is None:
            return
        self.cancelling = self.task.cancelling()
        if self.ctx is not None:
            self.ctx.cancel()
        self.task.cancel(ADMIN_CANCELLED)

    def admin_cancelled(self) -> bool:
        """Whether the cancellation that reached the call is an administrator's alone (the client's wins)."""
        if self.cancelling < 0 or self.task is None:
            return False
        return self.task.uncancel() <= self.cancelling

    def own_entry(self) -> InFlight | None:
        """This call's in-flight entry; a batch member has none, though a spawned request may hold its id."""
        running = self.session.in_flight.get(self.request.id)
        return running if running is not None and running.task is asyncio.current_task() else None
