"""A call's counts on Redis: one round trip before it runs and one after, limits binding across processes as
django-ratelimit's and the cache's counters do, nothing left raised by a refusal, and an outage as before."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import django_ratelimit.core
import pytest
import redis
import redis.asyncio
from django.core.cache import cache
from django_ratelimit.core import get_usage
from redis._parsers import _RESP2Parser

from mcp_tools.access import call_counts, concurrency, credentials, ratelimit, ratelimit_windows, redis_counts
from mcp_tools.access.concurrency import PREFIX, SessionCalls
from mcp_tools.access.ratelimit import Limited, Unavailable
from mcp_tools.loops import EARLY_SECONDS
from mcp_tools.models import AccessToken, Tool
from mcp_tools.server.calls import run
from tests.db import db_call
from tests.wire import Wire

pytestmark = pytest.mark.django_db(transaction=True)

REDIS = "django.core.cache.backends.redis.RedisCache"
LOCMEM = "django.core.cache.backends.locmem.LocMemCache"
UNREACHABLE = "redis://127.0.0.1:1/0"  # nothing listens on port 1 of the loopback
NOW = 1_800_000_000.25
ADDED = {"content": [{"type": "text", "text": "3"}], "structuredContent": {"result": 3}, "isError": False}
USER = SimpleNamespace(pk=7, is_authenticated=True)
TOOL = SimpleNamespace(id=3, name="add", rate_limit="", max_concurrent_calls=None, timeout_seconds=None)


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> None:
    """django-ratelimit's clock, held still inside one counting window."""
    monkeypatch.setattr(django_ratelimit.core, "time", SimpleNamespace(time=lambda: NOW))


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every command any Redis client of this process sends, in order, and ``RUN`` when a tool starts."""
    commands: list[str] = []
    send, send_async, run_tool = redis.Redis.execute_command, redis.asyncio.Redis.execute_command, run.run_tool

    def counted(client: redis.Redis, *args: Any, **options: Any) -> Any:
        commands.append(str(args[0]))
        return send(client, *args, **options)

    async def counted_async(client: redis.asyncio.Redis, *args: Any, **options: Any) -> Any:
        commands.append(str(args[0]))
        return await send_async(client, *args, **options)

    async def marked(*args: Any, **kwargs: Any) -> Any:
        commands.append("RUN")
        return await run_tool(*args, **kwargs)

    monkeypatch.setattr(redis.Redis, "execute_command", counted)
    monkeypatch.setattr(redis.asyncio.Redis, "execute_command", counted_async)
    monkeypatch.setattr(run, "run_tool", marked)
    return commands


def request(session: SessionCalls | None = None, user: Any = USER, tool: Any = TOOL) -> call_counts.Request:
    return call_counts.Request(user, None, tool, {}, session, 60.0)


def rated(rate: str, name: str = "add") -> Any:
    return SimpleNamespace(**{**vars(TOOL), "rate_limit": rate, "name": name})


def count_of(key: str) -> Any:
    return cache.get(PREFIX + key)


def rate_count(group: str, rate: str, key: str) -> Any:
    return cache.get(ratelimit_windows.window(group, rate, key).key)


# One round trip ----------------------------------------------------------------------------------


def set_rate(name: str, rate: str) -> None:
    tool = Tool.objects.get(name=name)
    tool.rate_limit = rate
    tool.save()


def issue(user: Any, rate: str) -> AccessToken:
    return AccessToken.objects.issue(user, name="tests", rate=rate)[0]


async def session_with_everything_counted(user: Any) -> Wire:
    """A session whose calls count against a token's rate, the tool's rate per user and per token, the
    session's calls in every process and the user's."""
    await db_call(set_rate, "add", "100/m")
    wire = Wire(user)
    wire.session.token = await db_call(issue, user, "100/m")
    wire.session.shared_calls = SessionCalls(uuid.uuid4().hex)
    await wire.initialize()
    return wire


async def add(wire: Wire, **arguments: Any) -> dict[str, Any]:
    reply = await wire.request("tools/call", {"name": "add", "arguments": arguments or {"a": 1, "b": 2}})
    session = wire.session.shared_calls
    assert session is not None
    # The places' give-back, sent off the answer's path.
    await concurrency.settled([session.key, f"{PREFIX}user.{wire.session.user.pk}"])
    return reply


async def test_a_call_counts_everything_in_one_round_trip_before_it_runs_and_gives_back_in_one_after(
    redis_cache: str, tools: None, user: Any, sent: list[str]
) -> None:
    wire = await session_with_everything_counted(user)
    assert (await add(wire))["result"] == ADDED  # the first call also loads the scripts into Redis
    sent.clear()

    assert (await add(wire))["result"] == ADDED

    assert sent == ["EVALSHA", "RUN", "EVALSHA"]
    token, session = wire.session.token, wire.session.shared_calls
    assert session is not None
    identity, group, who = credentials.identity(token), "mcp_tools.call:add", f"user:{user.pk}"
    # The counters are the cache's own: two calls counted against each rate, and no place left taken.
    assert rate_count(ratelimit.TOKEN_GROUP, "100/m", identity) == 2
    assert (rate_count(group, "100/m", who), rate_count(group, "100/m", identity)) == (2, 2)
    assert (cache.get(session.key), count_of(f"user.{user.pk}")) == (0, 0)


async def test_a_call_refused_for_its_arguments_gives_its_places_back(
    redis_cache: str, tools: None, user: Any, sent: list[str]
) -> None:
    wire = await session_with_everything_counted(user)
    assert (await add(wire))["result"] == ADDED
    sent.clear()

    reply = await add(wire, a="one", b=2)

    assert "RUN" not in sent and sent.count("EVALSHA") == 2, sent
    assert reply["result"]["isError"] is True
    session = wire.session.shared_calls
    assert session is not None
    assert (cache.get(session.key), count_of(f"user.{user.pk}")) == (0, 0)


@pytest.fixture
def long_hold(monkeypatch: pytest.MonkeyPatch) -> None:
    """Places given back wait for a count however slow the machine is: only a count or ``settled`` sends them."""
    monkeypatch.setattr(concurrency, "HOLD_SECONDS", 3600.0)


async def test_an_agents_calls_one_after_another_cost_one_round_trip_each(
    redis_cache: str, tools: None, user: Any, sent: list[str], long_hold: None
) -> None:
    wire = await session_with_everything_counted(user)
    assert (await add(wire))["result"] == ADDED  # loads the scripts
    sent.clear()

    for _ in range(3):
        reply = await wire.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})
        assert reply["result"] == ADDED

    # Each call's count carried the places of the call before it; the last call's go on their own.
    assert sent == ["EVALSHA", "RUN"] * 3, sent
    session = wire.session.shared_calls
    assert session is not None
    await concurrency.settled([session.key])
    assert sent[6:] == ["EVALSHA"], sent
    assert (cache.get(session.key), count_of(f"user.{user.pk}")) == (0, 0)


async def test_places_given_back_meanwhile_go_with_the_next_count(
    redis_cache: str, sent: list[str], long_hold: None
) -> None:
    sessions = [SessionCalls(f"s{n}") for n in range(3)]
    counted = [(await call_counts.count(request(session)))[1] for session in sessions]
    sent.clear()

    for places in counted:
        assert places is not None
        places.give_back_later()
    assert [cache.get(session.key) for session in sessions] == [1, 1, 1]  # held, not yet given back
    sent.clear()
    later = SessionCalls("later")
    _, places_later = await call_counts.count(request(later))
    await concurrency.settled([session.key for session in sessions])

    # One round trip gave the three places back and counted the later call, which found the user's free.
    assert sent == ["EVALSHA"], sent
    assert [cache.get(session.key) for session in sessions] == [0, 0, 0]
    assert places_later is not None and count_of(f"user.{USER.pk}") == 1


async def test_a_count_refused_by_a_rate_still_gives_back_the_places_it_carried(
    redis_cache: str, sent: list[str], long_hold: None
) -> None:
    session = SessionCalls("s1")
    _, places = await call_counts.count(request(session, tool=rated("1/m")))
    assert places is not None
    places.give_back_later()
    sent.clear()

    limited, _ = await call_counts.count(request(SessionCalls("s2"), tool=rated("1/m")))

    assert limited is not None and sent == ["EVALSHA"], sent
    assert (cache.get(session.key), count_of(f"user.{USER.pk}")) == (0, 0)


async def test_a_count_made_while_the_carrying_count_is_on_its_way_finds_the_places_lowered(
    redis_cache: str, settings: Any, long_hold: None
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CONCURRENT_CALLS": 1}
    session = SessionCalls("s1")
    _, ended = await call_counts.count(request(session))
    assert ended is not None
    ended.give_back_later()

    # Another session's count carries s1's place back; s1's next call, counted meanwhile, must find it free.
    (_, other), (_, again) = await asyncio.gather(
        call_counts.count(request(SessionCalls("s2"))), call_counts.count(request(session))
    )

    assert other is not None and again is not None
    assert again.session is not None and again.session.taken is True
    assert (cache.get(session.key), count_of(f"user.{USER.pk}")) == (1, 2)


async def test_places_no_count_carries_go_on_their_own_once_the_hold_ends(
    redis_cache: str, monkeypatch: pytest.MonkeyPatch, sent: list[str]
) -> None:
    session = SessionCalls("s1")
    _, places = await call_counts.count(request(session))
    assert places is not None
    sent.clear()
    landed = asyncio.Event()
    give_back = concurrency.give_back

    async def recorded(keys: Any) -> None:
        await give_back(keys)
        landed.set()

    monkeypatch.setattr(concurrency, "give_back", recorded)
    loop = asyncio.get_running_loop()
    ended = loop.time()

    places.give_back_later()
    async with asyncio.timeout(5):
        await landed.wait()

    # Another process saw the places held for the hold, and not longer than a timer's lateness.
    assert loop.time() - ended >= concurrency.HOLD_SECONDS - EARLY_SECONDS
    assert sent == ["EVALSHA"], sent
    assert (cache.get(session.key), count_of(f"user.{USER.pk}")) == (0, 0)


async def test_counts_made_while_one_is_on_its_way_go_together_in_one_pipeline(
    redis_cache: str, monkeypatch: pytest.MonkeyPatch, sent: list[str]
) -> None:
    execute = redis.asyncio.client.Pipeline.execute

    async def counted_pipeline(pipe: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(f"PIPELINE of {len(pipe.command_stack)}")
        return await execute(pipe, *args, **kwargs)

    monkeypatch.setattr(redis.asyncio.client.Pipeline, "execute", counted_pipeline)
    await call_counts.count(request(tool=rated("4/m")))  # loads the script
    await concurrency.settled([f"{PREFIX}user.{USER.pk}"])
    sent.clear()

    counted = await asyncio.gather(*(call_counts.count(request(tool=rated("4/m"))) for _ in range(4)))

    assert sent == ["EVALSHA", "PIPELINE of 3"], sent
    # Each count got its own answer: the rate's second to fourth calls pass, and its fifth is over it.
    assert [limited is not None for limited, _places in counted] == [False, False, False, True]
    assert count_of(f"user.{USER.pk}") == 3 + 1  # the first call's place, never given back here


async def test_a_pipelined_count_that_finds_the_script_gone_loads_it_and_counts(redis_cache: str) -> None:
    found = await concurrency.loop_scripts()
    assert isinstance(found, redis_counts.LoopScripts)
    place = redis_counts.Counter(cache.make_key(PREFIX + "flushed"), 10, 60)
    await found.take([], [place])
    await found.client.script_flush()

    counted = await asyncio.gather(*(found.take([], [place]) for _ in range(3)))

    assert [c.refused_place for c in counted] == [None, None, None]
    assert cache.get(PREFIX + "flushed") == 4


async def test_a_pipelined_count_whose_retry_fails_fails_alone(
    redis_cache: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    found = await concurrency.loop_scripts()
    assert isinstance(found, redis_counts.LoopScripts)
    await found.client.script_flush()
    loop = asyncio.get_running_loop()
    places = [redis_counts.Counter(cache.make_key(f"{PREFIX}retried{n}"), 10, 60) for n in range(2)]
    waiting = [(*redis_counts._arguments([], [place], []), loop.create_future()) for place in places]
    take = found._take

    async def dropped_for_the_first(*, keys: list[str], args: list[int]) -> Any:
        if keys == waiting[0][0]:
            raise redis.ConnectionError("dropped")
        return await take(keys=keys, args=args)

    dropped_for_the_first.sha = take.sha  # type: ignore[attr-defined]  # what the pipeline sends first
    monkeypatch.setattr(found, "_take", dropped_for_the_first)
    replies = await found._pipelined(waiting)

    assert isinstance(replies[0], redis.ConnectionError)
    assert redis_counts._counted(replies[1]).refused_place is None
    assert (cache.get(f"{PREFIX}retried0"), cache.get(f"{PREFIX}retried1")) == (None, 1)


# Limits across processes -------------------------------------------------------------------------


@pytest.fixture
async def two_processes(redis_cache: str, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[None]:
    """Two clients of their own, as two worker processes have; each count uses the next, in turn."""
    processes = [redis_counts.connect_on_loop("default") for _ in range(2)]
    assert all(isinstance(found, redis_counts.LoopScripts) for found in processes)
    turns = iter(range(1000))

    async def next_process() -> redis_counts.AnyScripts | None:
        return processes[next(turns) % 2]

    monkeypatch.setattr(concurrency, "loop_scripts", next_process)
    yield
    for found in processes:
        if found is not None:
            await found.close()


async def no_scripts() -> None:
    return None


async def test_a_users_places_bind_across_processes_and_free_up_when_given_back(
    two_processes: Any, settings: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CALLS_PER_USER": 2}

    counted = [await call_counts.count(request()) for _ in range(3)]
    takes = [places.user.taken if places else "none" for _, places in counted]
    first = counted[0][1]
    assert first is not None
    await concurrency.give_back(first.taken_keys())
    _, again = await call_counts.count(request())

    assert ([limited for limited, _ in counted], takes) == ([None, None, None], [True, True, False])
    assert again is not None and again.user.taken is True
    assert count_of(f"user.{USER.pk}") == 2


async def test_rates_bind_across_processes_exactly_as_django_ratelimit_counts_them(
    two_processes: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_script = [(await call_counts.count(request(tool=rated("3/m"))))[0] for _ in range(5)]
    monkeypatch.setattr(concurrency, "loop_scripts", no_scripts)
    # The same key, so the same window: another tool, so counters of its own.
    by_get_usage = [(await call_counts.count(request(tool=rated("3/m", "other"))))[0] for _ in range(5)]

    assert by_script == by_get_usage
    assert by_script[:3] == [None, None, None]
    assert [(limited.first, limited.retry_after > 0) for limited in by_script[3:] if limited] == [
        (True, True),
        (False, True),
    ]


async def test_the_script_and_get_usage_count_the_same_counter_in_the_same_window(redis_cache: str) -> None:
    """The one test that fails when django-ratelimit's private windows and keys change (ratelimit_windows)."""
    found = concurrency.scripts()
    assert found is not None
    stage = ratelimit.Stage("3/m", "mcp_tools.call:add", ["user:9"])
    windows = stage.windows()

    for _ in range(2):
        found.take([ratelimit.counters(windows, found.make_key)], [])
        usage = get_usage(None, group=stage.group, key=lambda _g, _r: "user:9", rate=stage.rate, increment=True)

    assert usage is not None
    assert (usage["count"], usage["time_left"]) == (4, windows[0].time_left)
    assert cache.get(windows[0].key) == 4


# Refusals ----------------------------------------------------------------------------------------


async def test_a_refused_place_leaves_no_counter_raised(redis_cache: str, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CALLS_PER_USER": 1}
    session = SessionCalls("s1")

    _, first = await call_counts.count(request(session))
    _, second = await call_counts.count(request(session))

    assert first is not None and second is not None
    assert (first.session and first.session.taken, first.user.taken) == (True, True)
    # The session's place was undone with the refused one: it counts as never taken.
    assert (second.session and second.session.taken, second.user.taken) == (None, False)
    assert (cache.get(session.key), count_of(f"user.{USER.pk}")) == (1, 1)


async def test_a_call_over_its_rate_takes_no_place(redis_cache: str) -> None:
    session = SessionCalls("s1")
    tool = rated("1/m")
    _, first = await call_counts.count(request(session, tool=tool))
    assert first is not None
    await concurrency.give_back(first.taken_keys())

    limited, places = await call_counts.count(request(session, tool=tool))

    assert isinstance(limited, Limited) and limited.first is True and places is None
    assert (cache.get(session.key), count_of(f"user.{USER.pk}")) == (0, 0)


async def test_a_call_over_its_tokens_rate_is_not_counted_against_the_tools(redis_cache: str) -> None:
    token = SimpleNamespace(pk=5, rate_limit="1/m")
    counted = [
        await call_counts.count(call_counts.Request(USER, token, rated("5/m"), {}, None, 60.0)) for _ in range(2)
    ]

    assert [limited.rate if limited else None for limited, _ in counted] == [None, "1/m"]
    assert rate_count(ratelimit.GROUP + ":add", "5/m", credentials.identity(token)) == 1


# The cache down ----------------------------------------------------------------------------------


@pytest.fixture
def unreachable(settings: Any) -> None:
    settings.CACHES = {"default": {"BACKEND": REDIS, "LOCATION": UNREACHABLE}}


async def test_a_cache_down_refuses_rated_calls_once_per_attempt_and_is_logged_once(
    unreachable: None, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="mcp_tools"):
        counted = [await call_counts.count(request(SessionCalls("s1"), tool=rated("5/m"))) for _ in range(2)]

    assert [(type(limited), limited and limited.first, places) for limited, places in counted] == [
        (Unavailable, True, None),
        (Unavailable, False, None),
    ]
    assert [r.getMessage().split(" (")[0] for r in caplog.records if r.name == "mcp_tools"] == [
        "The shared cache cannot be reached"
    ]


@pytest.mark.parametrize("fail_open", [True, False])
async def test_a_cache_down_lets_calls_without_a_rate_or_failing_open_run_uncounted(
    unreachable: None, settings: Any, fail_open: bool
) -> None:
    settings.RATELIMIT_FAIL_OPEN = fail_open
    tool = rated("5/m") if fail_open else TOOL

    limited, places = await call_counts.count(request(SessionCalls("s1"), tool=tool))

    assert limited is None and places is not None
    assert (places.session and places.session.taken, places.user.taken, places.taken_keys()) == (None, None, [])


async def test_a_process_local_cache_counts_as_before_without_places_ahead(settings: Any) -> None:
    settings.CACHES = {"default": {"BACKEND": LOCMEM, "LOCATION": f"call-counts-{uuid.uuid4().hex}"}}

    counted = [await call_counts.count(request(tool=rated("1/m"))) for _ in range(2)]

    assert [(limited is not None, places) for limited, places in counted] == [(False, None), (True, None)]


# Each loop's own client --------------------------------------------------------------------------


class SitesOwnPool(redis.ConnectionPool):
    """A pool class of the site's own, which has no asyncio counterpart in redis-py."""


async def connection_of(found: redis_counts.AnyScripts | None) -> Any:
    """The connection the loop's client counted on (its pool's only one)."""
    assert isinstance(found, redis_counts.LoopScripts)
    pool = found.client.connection_pool
    connection = await pool.get_connection()
    await pool.release(connection)
    return connection


def test_a_loops_client_counts_on_the_loop_and_closes_when_the_loop_shuts_down(redis_cache: str) -> None:
    async def count_once() -> tuple[Any, Any, bool]:
        found = await concurrency.loop_scripts()
        place = redis_counts.Counter(cache.make_key(PREFIX + "loop"), 5, 60)
        counted = await found.take([], [place]) if found is not None else None
        connection = await connection_of(found)
        return found, connection, connection.is_connected and counted is not None

    found, connection, was_connected = asyncio.run(count_once())

    assert was_connected is True
    assert isinstance(found.client, redis.asyncio.Redis)
    assert connection.is_connected is False
    assert cache.get(PREFIX + "loop") == 1


async def test_a_loops_client_is_built_afresh_when_the_cache_settings_change(redis_cache: str, settings: Any) -> None:
    before = await concurrency.loop_scripts()
    connection = await connection_of(before)
    assert connection.is_connected is True

    settings.CACHES = {"default": {**settings.CACHES["default"], "KEY_PREFIX": redis_cache + "-2"}}
    after = await concurrency.loop_scripts()

    assert after is not before and connection.is_connected is False
    assert await concurrency.loop_scripts() is after


@pytest.mark.parametrize(
    ("pool_class", "expected"),
    [
        ("redis.BlockingConnectionPool", redis.asyncio.BlockingConnectionPool),
        (SitesOwnPool, None),
    ],
)
async def test_a_cache_pool_class_runs_on_the_loop_when_redis_py_has_its_asyncio_counterpart(
    redis_cache: str, settings: Any, pool_class: Any, expected: Any
) -> None:
    default = settings.CACHES["default"]
    options = {**default["OPTIONS"], "pool_class": pool_class, "parser_class": "redis._parsers._RESP2Parser"}
    settings.CACHES = {"default": {**default, "OPTIONS": options}}
    session = SessionCalls("s1")

    found = await concurrency.loop_scripts()
    _, places = await call_counts.count(request(session))

    if expected is None:
        assert isinstance(found, redis_counts.ThreadScripts)
        # The blocking client takes the cache's parser, as RedisCache's own does.
        assert found.scripts.client.connection_pool.connection_kwargs["parser_class"] is _RESP2Parser
    else:
        assert isinstance(found, redis_counts.LoopScripts)
        assert type(found.client.connection_pool) is expected
    assert places is not None and places.user.taken is True
    assert (cache.get(session.key), count_of(f"user.{USER.pk}")) == (1, 1)


async def test_a_redis_that_never_answers_is_given_up_on_after_the_caches_socket_timeout(
    settings: Any, caplog: pytest.LogCaptureFixture
) -> None:
    held: list[asyncio.StreamWriter] = []

    async def accept_and_stay_silent(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    silent = await asyncio.start_server(accept_and_stay_silent, "127.0.0.1", 0)
    port = silent.sockets[0].getsockname()[1]
    options = {"socket_connect_timeout": 1, "socket_timeout": 0.2}
    settings.CACHES = {"default": {"BACKEND": REDIS, "LOCATION": f"redis://127.0.0.1:{port}/0", "OPTIONS": options}}
    try:
        found = await concurrency.loop_scripts()
        with caplog.at_level(logging.WARNING, logger="mcp_tools"):
            async with asyncio.timeout(10):  # a bound for the test itself, far above the cache's
                limited, places = await call_counts.count(request(SessionCalls("s1"), tool=rated("5/m")))
    finally:
        silent.close()
        for writer in held:
            writer.close()
        await silent.wait_closed()

    assert isinstance(found, redis_counts.LoopScripts)
    assert isinstance(limited, Unavailable) and limited.first is True and places is None
    assert [r.getMessage().split(" (")[0] for r in caplog.records if r.name == "mcp_tools"] == [
        "The shared cache cannot be reached"
    ]
