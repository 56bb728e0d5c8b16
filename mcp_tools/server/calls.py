"""One tools/call from lookup to audit: access, capabilities, rate, validation, limits, execution, shape."""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from django.db import InterfaceError, OperationalError

from mcp_tools.access import credentials, permissions, ratelimit, user_calls
from mcp_tools.access.audit import audit_log
from mcp_tools.access.audit_arguments import stored_arguments
from mcp_tools.conf import mcp_settings
from mcp_tools.connections import connection_lost, log_lost
from mcp_tools.exceptions import (
    DatabaseUnavailable,
    InvalidArguments,
    InvalidParams,
    MissingClientCapability,
    ProtocolError,
    ToolError,
    UnknownTool,
)
from mcp_tools.loops import Deadline
from mcp_tools.models import Tool, ToolCall
from mcp_tools.protocol import errors, shapes
from mcp_tools.protocol import versions as v
from mcp_tools.protocol.jsonrpc import Encoded, Request, compact_encoder, depth_exceeds
from mcp_tools.protocol.versions import Revision
from mcp_tools.server.progress import ProgressSender
from mcp_tools.server.running_calls import ADMIN_CANCELLED, running_calls
from mcp_tools.server.session import InFlight, Session
from mcp_tools.tools import threads
from mcp_tools.tools.catalog import catalog
from mcp_tools.tools.content import CallResult, MalformedContent, Unsendable
from mcp_tools.tools.context import CallCancelled, Context
from mcp_tools.tools.entries import Entry
from mcp_tools.tools.executors import execute
from mcp_tools.tools.snapshot import Snapshot

logger = logging.getLogger("mcp_tools")
GENERIC_FAILURE = "The tool failed with an internal error."
UNSENDABLE = "The tool returned a value that cannot be sent as JSON."
MALFORMED = "The tool returned a content block that clients cannot read."
TOO_DEEP = "The result is nested deeper than {} levels."
# Deeper than this, common JSON parsers on the client side (serde_json stops at 128) refuse a message.
MAX_RESULT_DEPTH = 100
DATABASE_UNAVAILABLE = DatabaseUnavailable.default_message
Outcome = ToolCall.Outcome


class Refused(Exception):
    """Ends a call early with an in-band error and its audit outcome."""

    def __init__(self, outcome: Outcome, message: str) -> None:
        super().__init__(message)
        self.outcome = outcome


class Call:
    """A tools/call in flight; every way it can end is recorded once."""

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

    async def answer(self) -> dict[str, Any]:
        self.task = asyncio.current_task()
        registry = running_calls()
        key = registry.add(self)
        try:
            return await self._answer()
        except ProtocolError as exc:
            if self.outcome == Outcome.OK:
                self.outcome, self.message = Outcome.DENIED, exc.message
            raise
        except asyncio.CancelledError:
            if self.admin_cancelled():
                return self.cancelled_by_admin()
            self.outcome, self.message = Outcome.CANCELLED, "cancelled by the client"
            raise
        finally:
            registry.discard(key)
            await self.audit()

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

    def cancelled_by_admin(self) -> dict[str, Any]:
        self.outcome, self.message = Outcome.CANCELLED, ADMIN_CANCELLED
        return errors.tool_failure(ADMIN_CANCELLED, self.revision)

    async def _answer(self) -> dict[str, Any]:
        try:
            result = await self.result(await catalog.get())
        except InvalidArguments as exc:
            self.outcome, self.message = Outcome.INVALID, str(exc)
            return errors.invalid_arguments(str(exc), self.revision)
        except Refused as exc:
            self.outcome, self.message = exc.outcome, str(exc)
            result = CallResult([{"type": "text", "text": str(exc)}], is_error=True, value=str(exc))
        except (OperationalError, InterfaceError) as exc:
            if not connection_lost(exc):
                raise
            # The thread that met it has closed the lost connection: the next call connects anew.
            log_lost(exc, f"calling {self.name}")
            self.outcome, self.message = Outcome.ERROR, DATABASE_UNAVAILABLE
            result = CallResult([{"type": "text", "text": DATABASE_UNAVAILABLE}], is_error=True)
        if result.is_error and self.outcome == Outcome.OK:
            self.outcome = Outcome.ERROR
            self.message = " ".join(b.get("text", "") for b in result.content if b.get("type") == "text")
        if result.is_error and self.revision <= v.DRAFT:
            return errors.tool_failure(self.message or GENERIC_FAILURE, self.revision)
        shaped = shapes.call_result(result, self.revision)
        try:
            text = self.measure(shaped)
        except Refused as exc:
            self.outcome, self.message = exc.outcome, str(exc)
            return errors.tool_failure(str(exc), self.revision)
        # Encoded to measure it, the result is sent as it was measured rather than encoded again.
        return Encoded(shaped, text)

    def measure(self, shaped: dict[str, Any]) -> str:
        """The result's JSON, its size recorded; Refused when it cannot be sent."""
        try:
            text = _encode_result(shaped)
        except (TypeError, ValueError, RecursionError) as exc:
            logger.error("Tool %s returned a value that cannot be sent as JSON: %s", self.name, exc)
            raise Refused(Outcome.ERROR, UNSENDABLE) from None
        self.result_bytes = len(text)
        if self.result_bytes > int(mcp_settings.MAX_RESULT_BYTES):
            raise Refused(Outcome.ERROR, f"The result is larger than {mcp_settings.MAX_RESULT_BYTES} bytes.")
        # Each level opens a bracket: a result with no more brackets than the limit cannot nest deeper.
        if text.count("[") + text.count("{") > MAX_RESULT_DEPTH and depth_exceeds(shaped, MAX_RESULT_DEPTH):
            logger.error("Tool %s returned a result nested deeper than %d levels", self.name, MAX_RESULT_DEPTH)
            raise Refused(Outcome.ERROR, TOO_DEEP.format(MAX_RESULT_DEPTH))
        return text

    async def result(self, snapshot: Snapshot) -> CallResult:
        """What the tool produced; a denied or unknown call counts against DENIED_RATE first."""
        try:
            self.entry = await self.find(snapshot)
            self.check_capabilities(self.entry)
        except ProtocolError:
            self.refuse_if_limited(await ratelimit.check_denied(self.session.user, self.session.token))
            raise
        return await self.run(snapshot, self.entry)

    def refuse_if_limited(self, limited: ratelimit.Limited | None) -> None:
        if limited is None:
            return
        # A flood of refusals writes one row per counting window: the first, which names the rate.
        self.recorded = limited.first
        raise Refused(Outcome.RATE_LIMITED, limited.message)

    async def find(self, snapshot: Snapshot) -> Entry:
        if not isinstance(self.name, str):
            raise InvalidParams('"name" must be a string')
        entry = snapshot.by_name.get(self.name)
        await permissions.prepare(self.session.user)
        if entry is None or entry.name not in self.session.view(snapshot).names:
            raise UnknownTool(self.name)
        return entry

    def check_capabilities(self, entry: Entry) -> None:
        """-32021 when the tool needs a client capability this request did not declare (2026-07-28)."""
        required = entry.required_capabilities
        if required and self.revision.is_modern and any(k not in self.capabilities for k in required):
            raise MissingClientCapability(
                f"The tool needs the client capabilities: {', '.join(sorted(required))}",
                {"requiredCapabilities": required},
            )

    async def run(self, snapshot: Snapshot, entry: Entry) -> CallResult:
        arguments = {} if self.arguments is None else self.arguments
        if not isinstance(arguments, dict):
            raise InvalidArguments('"arguments" must be an object')
        self.refuse_if_limited(
            await ratelimit.check(self.session.user, self.session.token, entry, snapshot.rate_overrides)
        )
        validate_arguments(entry, arguments)
        shared = self.session.shared_calls
        if shared is None:
            return await self.run_leased(entry, arguments)
        # The session's calls in other worker processes count too (while the shared cache answers).
        taken = await shared.take(int(mcp_settings.MAX_CONCURRENT_CALLS), self.time_limit(entry))
        if taken is False:
            raise Refused(Outcome.ERROR, too_many_calls())
        try:
            return await self.run_leased(entry, arguments)
        finally:
            if taken:
                await asyncio.shield(shared.give_back())

    async def run_leased(self, entry: Entry, arguments: dict[str, Any]) -> CallResult:
        """Run within the user's calls in progress; the place is held until the call's last thread returns."""
        lease = await user_calls.take(self.session.user, entry.id, entry.max_concurrent_calls, self.time_limit(entry))
        if lease is None:
            raise Refused(Outcome.RATE_LIMITED, user_calls.too_many(user_calls.limit_for(entry.max_concurrent_calls)))
        token = threads.current_lease.set(lease)
        try:
            return await self.run_counted(entry, arguments)
        finally:
            threads.current_lease.reset(token)
            # Only a place counted in the shared cache has anything to give back there (a task otherwise).
            if lease.end() and lease.counter is not None:
                await asyncio.shield(lease.give_back())

    async def run_counted(self, entry: Entry, arguments: dict[str, Any]) -> CallResult:
        # Checked and counted with no await in between (this call's own entry counts once ``execute`` gives it
        # its context), so calls of one session that arrive together are counted one after another.
        running = self.session.batched_calls + sum(1 for f in self.session.in_flight.values() if f.ctx is not None)
        if running >= int(mcp_settings.MAX_CONCURRENT_CALLS):
            raise Refused(Outcome.ERROR, too_many_calls())
        if self.own_entry() is not None:
            return await self.execute(entry, arguments)
        # Members of a batch run outside in_flight; counting them here keeps batches within the limit.
        self.session.batched_calls += 1
        try:
            return await self.execute(entry, arguments)
        finally:
            self.session.batched_calls -= 1

    async def execute(self, entry: Entry, arguments: dict[str, Any]) -> CallResult:
        progress = ProgressSender(self.session.emit, entry.name)
        ctx = self.context(entry, progress)
        timeout = self.time_limit(entry)
        try:
            # A deadline on this task rather than wait_for's: no second task per call, and no timer either.
            with Deadline(timeout):
                result = await execute(entry, arguments, ctx)
        except ToolError as exc:
            return CallResult([{"type": "text", "text": str(exc)}], is_error=True, value=str(exc))
        except TimeoutError:
            ctx.cancel()
            raise Refused(Outcome.TIMEOUT, f"The tool did not finish within {timeout:g} s.") from None
        except (InvalidArguments, asyncio.CancelledError):
            raise
        except CallCancelled:
            # The tool saw its cancellation (ctx.check_cancelled()): the call ends as cancelled, unanswered.
            raise asyncio.CancelledError from None
        except MalformedContent as exc:
            logger.error("Tool %s returned a content block that clients cannot read: %s", entry.name, exc)
            return CallResult([{"type": "text", "text": MALFORMED}], is_error=True)
        except Unsendable as exc:
            logger.error("Tool %s returned a value that cannot be sent as JSON: %s", entry.name, exc)
            return CallResult([{"type": "text", "text": UNSENDABLE}], is_error=True)
        except Exception as exc:
            if connection_lost(exc):
                raise
            logger.error("Tool %s failed", entry.name, exc_info=bool(mcp_settings.LOG_TRACEBACKS))
            return CallResult([{"type": "text", "text": GENERIC_FAILURE}], is_error=True)
        finally:
            # Answered from here on: progress from a thread or a task the tool left behind is not sent.
            progress.close()
        return check_output(entry, result)

    @staticmethod
    def time_limit(entry: Entry) -> float:
        return float(entry.timeout_seconds or mcp_settings.CALL_TIMEOUT_SECONDS)

    def context(self, entry: Entry, progress: ProgressSender) -> Context:
        meta = self.request.params.get("_meta")
        token = meta.get("progressToken") if isinstance(meta, dict) else None
        ctx = Context(
            user=self.session.user,
            tool_name=entry.name,
            request_id=self.request.id,
            progress_token=token if isinstance(token, int | str) and not isinstance(token, bool) else None,
            progress=progress,
            transport=self.session.transport,
            session_id=self.session.session_id,
            credential=self.session.token,
        )
        self.ctx = ctx
        running = self.own_entry()
        if running is not None:
            running.ctx = ctx
        return ctx

    def own_entry(self) -> InFlight | None:
        """This call's in-flight entry; a batch member has none, though a spawned request may hold its id."""
        running = self.session.in_flight.get(self.request.id)
        return running if running is not None and running.task is asyncio.current_task() else None

    async def audit(self) -> None:
        if not mcp_settings.AUDIT or not self.recorded:
            return
        user = self.session.user
        authenticated = getattr(user, "is_authenticated", False)
        credential = credentials.audit_fields(self.session.token)
        if self.session.audit_client:
            credential["client"] = self.session.audit_client[:255]
        await audit_log().record(
            user_id=user.pk if authenticated else None,
            username=user.get_username() if authenticated else "",
            **credential,
            transport=self.session.transport,
            session_id=self.session.session_id,
            tool_name=str(self.name)[:128],
            arguments=await stored_arguments(self.arguments or {}, parameter_names(self.entry)),
            outcome=self.outcome,
            message=self.message[:2000],
            duration_ms=(time.perf_counter() - self.started) * 1000,
            result_bytes=self.result_bytes,
        )


def too_many_calls() -> str:
    return f"Too many calls in progress (at most {mcp_settings.MAX_CONCURRENT_CALLS})."


# A tool's result as it is sent: compact, ASCII, and never NaN or Infinity, which JSON cannot carry.
_encode_result = compact_encoder(allow_nan=False)


def parameter_names(entry: Entry | None) -> frozenset[str]:
    """The argument names a tool declares, which the audit trail keeps first when it must cut."""
    if entry is None:
        return frozenset()
    if entry.argument_names is not None:
        return entry.argument_names
    properties = entry.spec.input_schema.get("properties")
    return frozenset(properties) if isinstance(properties, dict) else frozenset()


def validate_arguments(entry: Entry, arguments: dict[str, Any]) -> None:
    if entry.argument_names is not None:
        unknown = sorted(set(arguments) - entry.argument_names)
        if unknown:
            allowed = ", ".join(sorted(entry.argument_names)) or "none"
            raise InvalidArguments(f"Unknown argument {', '.join(map(repr, unknown))}. Allowed: {allowed}.")
    error = entry.input_check.first_error(arguments)
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path)
        raise InvalidArguments(f"{where}: {error.message}" if where else error.message)


def check_output(entry: Entry, result: CallResult) -> CallResult:
    check = entry.output_check
    # A model query's rows come from the same allow-list its output schema was generated from.
    if check is None or result.is_error or entry.kind == Tool.Kind.MODEL_QUERY:
        return result
    error = check.first_error(result.structured if result.has_structured else None)
    if error is None:
        return result
    logger.error("Tool %s returned output that does not match its output schema: %s", entry.name, error.message)
    return CallResult([{"type": "text", "text": GENERIC_FAILURE}], is_error=True)
