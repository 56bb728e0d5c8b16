"""Who may call what, and how many calls at once: each check in the order the safety model requires.

The tool is looked up in the caller's own view first (grants, permission classes, the credential's scopes),
so that a tool the caller may not use answers exactly as an unknown one whatever its arguments, and no error
tells a caller about a row, value or field it may not see; such refusals count against ``DENIED_RATE``.
Then, in order: the client capabilities the tool needs, the arguments' form, the credential's and the tool's
rates, the arguments against the input schema, and last the places the call takes among the calls running
(the session's in every process, the user's, the session's here), held until it ends (:class:`Places`). On
Redis the places in every process are counted in the same round trip as the rates (``call_counts``), and
the refusals they earn are answered in the same order as elsewhere: after the arguments' checks.
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any

from mcp_tools.access import call_counts, concurrency, permissions, ratelimit, user_calls
from mcp_tools.conf import mcp_settings
from mcp_tools.exceptions import (
    InvalidArguments,
    InvalidParams,
    MissingClientCapability,
    ProtocolError,
    RateLimited,
    TooManyCalls,
    UnknownTool,
)
from mcp_tools.tools import threads
from mcp_tools.tools.entries import Entry
from mcp_tools.tools.snapshot import Snapshot

if TYPE_CHECKING:
    from mcp_tools.server.calls.call import Call


async def admit(call: Call, snapshot: Snapshot) -> tuple[Entry, dict[str, Any]]:
    """The tool and its arguments, once the caller may run it with them (``call.entry`` is set once found)."""
    try:
        call.entry = entry = await find(call, snapshot)
        check_capabilities(call, entry)
    except ProtocolError:
        refuse_if_limited(await ratelimit.check_denied(call.session.user, call.session.token))
        raise
    arguments = {} if call.arguments is None else call.arguments
    if not isinstance(arguments, dict):
        raise InvalidArguments('"arguments" must be an object')
    session = call.session
    request = call_counts.Request(
        session.user, session.token, entry, snapshot.rate_overrides, session.shared_calls, time_limit(entry)
    )
    limited, call.counted = await call_counts.count(request)
    refuse_if_limited(limited)
    validate_arguments(entry, arguments)
    return entry, arguments


def time_limit(entry: Entry) -> float:
    """How long the tool may run: its places are held that long, and a margin more in the shared cache."""
    return float(entry.timeout_seconds or mcp_settings.CALL_TIMEOUT_SECONDS)


def give_back_unused(call: Call) -> None:
    """Give back the places counted with the call's rates that no ``Places`` held (it ended before running)."""
    counted, call.counted = call.counted, None
    if counted is not None:
        counted.give_back_later()


async def find(call: Call, snapshot: Snapshot) -> Entry:
    """The tool, if the caller may use it: an unknown tool and a hidden one are the same UnknownTool."""
    if not isinstance(call.name, str):
        raise InvalidParams('"name" must be a string')
    entry = snapshot.by_name.get(call.name)
    await permissions.prepare(call.session.user)
    if entry is None or entry.name not in call.session.view(snapshot).names:
        raise UnknownTool(call.name)
    return entry


def check_capabilities(call: Call, entry: Entry) -> None:
    """-32021 when the tool needs a client capability this request did not declare (2026-07-28)."""
    required = entry.required_capabilities
    if required and call.revision.is_modern and any(k not in call.capabilities for k in required):
        raise MissingClientCapability(
            f"The tool needs the client capabilities: {', '.join(sorted(required))}",
            {"requiredCapabilities": required},
        )


def refuse_if_limited(limited: ratelimit.Limited | None) -> None:
    if limited is not None:
        # A flood of refusals writes one row per counting window: the first, which names the rate.
        raise RateLimited(limited.message, first=limited.first)


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


# Places among the calls running ---------------------------------------------------------------------


class Places:
    """The call's places among the calls running, held from ``async with`` until it ends (at most ``seconds``).

    In order: the legacy session's calls in every worker process (while the shared cache answers), the
    user's calls in progress (held until the call's last thread returns), the session's calls here. One
    plain object rather than nested generators: every call pays for it.
    """

    __slots__ = ("call", "counted", "entry", "in_batch", "lease", "lease_token", "seconds", "shared_taken")

    def __init__(self, call: Call, entry: Entry, seconds: float) -> None:
        self.call, self.entry, self.seconds = call, entry, seconds
        # The first Places of a call holds what was counted with its rates; a later one takes its own.
        self.counted, call.counted = call.counted, None
        self.shared_taken: bool | None = None
        self.lease: user_calls.Lease | None = None
        self.lease_token: contextvars.Token[user_calls.Lease | None] | None = None
        self.in_batch = False

    async def __aenter__(self) -> None:
        try:
            await self.across_processes()
            await self.users()
            self.in_session()
        except BaseException:
            await self.leave()
            raise

    async def __aexit__(self, *exc_info: object) -> None:
        await self.leave()

    async def across_processes(self) -> None:
        shared, counted = self.call.session.shared_calls, self.counted
        if counted is not None:
            self.shared_taken = None if counted.session is None else counted.session.taken
        elif shared is not None:
            self.shared_taken = await shared.take(int(mcp_settings.MAX_CONCURRENT_CALLS), self.seconds)
        if self.shared_taken is False:
            raise TooManyCalls(too_many_calls())

    async def users(self) -> None:
        entry, counted = self.entry, self.counted
        user = self.call.session.user
        self.lease = await user_calls.take(
            user, entry.id, entry.max_concurrent_calls, self.seconds, None if counted is None else counted.user
        )
        if self.lease is None:
            raise RateLimited(user_calls.too_many(user_calls.limit_for(entry.max_concurrent_calls)))
        self.lease_token = threads.current_lease.set(self.lease)

    def in_session(self) -> None:
        # Checked and counted with nothing awaited until ``run`` hands the call's own in-flight entry its
        # context (which counts it from then on), so calls of one session that arrive together are counted
        # one after another.
        session = self.call.session
        running = session.batched_calls + sum(1 for f in session.in_flight.values() if f.ctx is not None)
        if running >= int(mcp_settings.MAX_CONCURRENT_CALLS):
            raise TooManyCalls(too_many_calls())
        # Members of a batch run outside in_flight; counting them here keeps batches within the limit.
        if self.call.own_entry() is None:
            session.batched_calls += 1
            self.in_batch = True

    async def leave(self) -> None:
        """Give back what was taken: here at once, in the shared cache off the answer's path (one round trip)."""
        if self.in_batch:
            self.call.session.batched_calls -= 1
            self.in_batch = False
        if self.lease_token is not None:
            threads.current_lease.reset(self.lease_token)
            self.lease_token = None
        shared: list[str] = []
        lease, self.lease = self.lease, None
        # The user's place in the shared cache is given back here only when no thread job still holds it.
        if lease is not None and lease.end() and lease.counter is not None:
            shared.append(lease.counter.key)
        session, taken, self.shared_taken = self.call.session.shared_calls, self.shared_taken, None
        if taken and session is not None:
            shared.append(session.key)
        concurrency.give_back_later(shared)


def too_many_calls() -> str:
    return f"Too many calls in progress (at most {mcp_settings.MAX_CONCURRENT_CALLS})."
