"""A call's counts before it runs: its rates, and on Redis its places in every process, in one round trip.

On Redis (``redis_counts``) one script counts every rate that applies to the call (its token's, then the
tool's per user and per token) and takes the call's places among the calls in progress (its legacy
session's, then its user's), undoing the places when any limit binds. The places are handed to the call's
first ``Places`` (``Counted``), and given back if it never enters them. With any other cache the rates are
counted as ``ratelimit.check`` counts them, and each place is taken when the call enters its ``Places``.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from mcp_tools.access import concurrency, ratelimit, redis_counts, user_calls
from mcp_tools.access.cache_breaker import CacheUnavailable, breaker
from mcp_tools.access.concurrency import MARGIN_SECONDS, Counted, SessionCalls, SharedCount
from mcp_tools.conf import mcp_settings

Limited = ratelimit.Limited


@dataclass(frozen=True)
class Request:
    """Who calls which tool, through which session, for how long: what the counts need to know."""

    user: Any
    token: Any
    entry: Any
    overrides: dict[tuple[int, int | None], str]
    session_calls: SessionCalls | None
    seconds: float

    def counters(self) -> list[tuple[SharedCount, int]]:
        """The places the call takes, in order, each with its limit: the legacy session's, then the user's."""
        entry = self.entry
        key = user_calls.place_key(self.user, entry.id, entry.max_concurrent_calls)
        user = (user_calls.shared_counter(key), user_calls.limit_for(entry.max_concurrent_calls))
        if self.session_calls is None:
            return [user]
        return [(self.session_calls, int(mcp_settings.MAX_CONCURRENT_CALLS)), user]


@dataclass(frozen=True)
class Places:
    """The places counted with a call's rates: the legacy session's (if it has one) and the user's."""

    session: Counted | None
    user: Counted

    def taken_keys(self) -> list[str]:
        counted = [self.user] if self.session is None else [self.session, self.user]
        return [place.counter.key for place in counted if place.taken]

    def give_back_later(self) -> None:
        concurrency.give_back_later(self.taken_keys())


async def count(request: Request) -> tuple[Limited | None, Places | None]:
    """Count the call's rates (``Limited`` when it is over one) and, on Redis, take its places."""
    found = await concurrency.loop_scripts() if concurrency.shared() else None
    if found is None:
        return await ratelimit.check(request.user, request.token, request.entry, request.overrides), None
    # Places this loop gave back and still holds go with this count, taken with no wait between here and the
    # count leaving: a loop's counts reach Redis in the order they are made, so any count made after this one
    # finds them lowered. The threads of a pool class of the site's own keep no order: there they go on their own.
    carrying = isinstance(found, redis_counts.LoopScripts)
    await concurrency.settled([counter.key for counter, _limit in request.counters()], carrying=carrying)
    stages = ratelimit.stages(request.user, request.token, request.entry, request.overrides)
    stages = stages if ratelimit.enabled() else []
    carried = concurrency.carry() if carrying else []
    future = asyncio.ensure_future(breaker.acall(_count_in_redis, found, stages, request, carried))
    try:
        return await asyncio.shield(future)
    except CacheUnavailable as outage:
        limited = ratelimit.unavailable(stages[0], outage) if stages else None
        return limited, None if limited is not None else _places(request, [None] * len(request.counters()))
    except asyncio.CancelledError:
        # Cancelled while Redis counted: the places it took are given back once it has.
        future.add_done_callback(_give_back_taken)
        raise


async def _count_in_redis(
    found: redis_counts.AnyScripts, stages: list[ratelimit.Stage], request: Request, carried: list[str]
) -> tuple[Limited | None, Places | None]:
    windows = [stage.windows() for stage in stages]
    make_key, ttl = found.make_key, int(request.seconds + MARGIN_SECONDS)
    places = [redis_counts.Counter(make_key(counter.key), limit, ttl) for counter, limit in request.counters()]
    given_back = [make_key(key) for key in carried]
    counted = await found.take([ratelimit.counters(w, make_key) for w in windows], places, given_back)
    start = 0
    for stage, stage_windows in zip(stages, windows, strict=True):
        end = start + len(stage_windows)
        limited = stage.limited(ratelimit.usages(counted.counts[start:end], stage_windows))
        if limited is not None:
            return limited, None
        start = end
    refused = counted.refused_place
    # A refused place undoes those taken before it: they count as never taken, and the refusal speaks.
    taken: list[bool | None] = [True] * len(places) if refused is None else [None] * len(places)
    if refused is not None:
        taken[refused] = False
    return None, _places(request, taken)


def _places(request: Request, taken: list[bool | None]) -> Places:
    counted = [Counted(counter, was) for (counter, _limit), was in zip(request.counters(), taken, strict=True)]
    return Places(counted[0], counted[1]) if len(counted) == 2 else Places(None, counted[0])


def _give_back_taken(future: asyncio.Future[tuple[Limited | None, Places | None]]) -> None:
    if future.cancelled() or future.exception() is not None:
        return
    _limited, places = future.result()
    if places is not None:
        places.give_back_later()
