"""Rate limits: a tool's own rate, the site default, counting per user and per token, group overrides."""

from __future__ import annotations

import re
import threading
import uuid
from typing import Any

import django_ratelimit.core
import pytest
from django.contrib.auth.models import Group
from django.core import checks

from mcp_tools.access import ratelimit
from mcp_tools.access.ratelimit import calls_per_second
from mcp_tools.exceptions import INVALID_PARAMS
from mcp_tools.models import AccessToken, RateLimitOverride, Tool, ToolCall
from tests.db import db_call
from tests.messages import MODERN_SERVER_META, error, rpc, text_result
from tests.websocket import WSClient, ws_headers
from tests.wire import Wire, connected

pytestmark = pytest.mark.django_db(transaction=True)

LIMITED = re.compile(r"Rate limit (?P<rate>\S+) exceeded: retry after (?P<retry>\d+) s\.")
LOCMEM = "django.core.cache.backends.locmem.LocMemCache"


@pytest.fixture(autouse=True)
def own_counters(own_cache: str) -> None:
    """A cache of this test's own, so that no count carries over from another test: in memory, and on Redis
    (where one script counts every rate of a call)."""


class Clock:
    """The time django-ratelimit reads, held still so that no test straddles two counting windows."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.25

    def time(self) -> float:
        return self.now


@pytest.fixture(autouse=True)
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    held = Clock()
    monkeypatch.setattr(django_ratelimit.core, "time", held)
    return held


def added(a: int, b: int) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": str(a + b)}], "structuredContent": {"result": a + b}, "isError": False}


def set_rate(name: str, rate: str) -> None:
    tool = Tool.objects.get(name=name)
    tool.rate_limit = rate
    tool.full_clean()
    tool.save()


def override(group: str, rate: str, tool: str | None = None) -> None:
    RateLimitOverride.objects.create(
        group=Group.objects.get_or_create(name=group)[0],
        tool=Tool.objects.get(name=tool) if tool else None,
        rate=rate,
    )


def join(user: Any, *groups: str) -> None:
    user.groups.add(*(Group.objects.get_or_create(name=name)[0] for name in groups))


def refusal(result: dict[str, Any]) -> tuple[str, int]:
    """The rate and retry delay of an in-band rate-limit refusal, after checking its whole shape."""
    text = result["content"][0]["text"]
    found = LIMITED.fullmatch(text)
    assert found is not None, result
    assert result == text_result(text, is_error=True)
    return found["rate"], int(found["retry"])


async def calls_until_refused(wire: Wire | WSClient, limit: int = 20) -> int:
    """How many ``add`` calls succeed before the first refusal (which must be a rate-limit refusal)."""
    for done in range(limit):
        reply = await add(wire)
        if reply["result"]["isError"]:
            refusal(reply["result"])
            return done
        assert reply["result"] == added(1, 2)
    return limit


async def add(client: Wire | WSClient) -> dict[str, Any]:
    return await client.request("tools/call", {"name": "add", "arguments": {"a": 1, "b": 2}})


# A tool's own rate and the default ---------------------------------------------------------------


async def test_the_call_after_a_tools_rate_is_refused_in_band_with_a_retry_delay(tools: None, user: Any) -> None:
    await db_call(set_rate, "add", "3/m")
    wire = await connected(user)

    answered = [(await add(wire))["result"] for _ in range(3)]
    fourth = (await add(wire))["result"]

    assert answered == [added(1, 2)] * 3
    rate, retry = refusal(fourth)
    assert rate == "3/m"
    assert 1 <= retry <= 60


@pytest.mark.parametrize("rate", ["3/m", "3/s", "3/10s", "3/h"])
async def test_a_refused_caller_may_call_again_once_the_retry_delay_has_passed(
    tools: None, user: Any, clock: Clock, rate: str
) -> None:
    await db_call(set_rate, "add", rate)
    wire = await connected(user)
    for _ in range(3):
        await add(wire)

    _rate, retry = refusal((await add(wire))["result"])
    clock.now += retry - 1
    early = (await add(wire))["result"]
    clock.now += 1
    on_time = (await add(wire))["result"]

    assert refusal(early)[0] == rate
    assert on_time == added(1, 2)


async def test_a_refused_call_still_lets_other_requests_and_other_tools_through(tools: None, user: Any) -> None:
    await db_call(set_rate, "add", "1/m")
    wire = await connected(user)

    await add(wire)
    refused = (await add(wire))["result"]
    other = await wire.call("multiply", {"x": 2, "y": 3})
    pong = await wire.request("ping")

    assert refusal(refused)[0] == "1/m"
    assert other["result"] == {
        "content": [{"type": "text", "text": "6"}],
        "structuredContent": {"result": 6.0},
        "isError": False,
    }
    assert pong["result"] == {}


async def test_default_rate_limits_tools_without_a_rate_of_their_own(tools: None, user: Any, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DEFAULT_RATE": "2/m"}
    await db_call(set_rate, "multiply", "4/m")
    wire = await connected(user)

    allowed_add = await calls_until_refused(wire)
    allowed_multiply = 0
    while not (await wire.call("multiply", {"x": 1}))["result"]["isError"]:
        allowed_multiply += 1

    assert (allowed_add, allowed_multiply) == (2, 4)


async def test_without_a_rate_calls_are_never_refused(tools: None, user: Any) -> None:
    wire = await connected(user)

    assert await calls_until_refused(wire, limit=25) == 25


async def test_rates_count_each_tool_apart(tools: None, user: Any) -> None:
    await db_call(set_rate, "add", "1/m")
    await db_call(set_rate, "greet", "1/m")
    wire = await connected(user)

    await add(wire)
    greeted = await wire.call("greet", {"name": "Ann"})

    assert greeted["result"] == text_result("Hello, Ann!")
    assert await calls_until_refused(wire) == 0


@pytest.mark.parametrize("version", ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"])
async def test_a_refusal_is_an_in_band_error_after_the_draft(tools: None, user: Any, version: str) -> None:
    await db_call(set_rate, "add", "1/m")
    wire = await connected(user, version)

    await add(wire)
    refused = (await add(wire))["result"]

    assert refusal(refused)[0] == "1/m"


@pytest.mark.parametrize("version", [1, "2024-10-07"])
async def test_a_refusal_is_invalid_params_for_draft_clients(tools: None, user: Any, version: Any) -> None:
    await db_call(set_rate, "add", "1/m")
    wire = await connected(user, version)

    await add(wire)
    refused = await add(wire)

    reason = refused["error"]["data"]["reason"]
    assert LIMITED.fullmatch(reason)
    assert refused == error(3, INVALID_PARAMS, "Tool execution failed", {"reason": reason})


async def test_a_modern_request_is_refused_in_band_too(tools: None, user: Any) -> None:
    await db_call(set_rate, "add", "1/m")
    wire = Wire(user)
    params = {"name": "add", "arguments": {"a": 1, "b": 2}}

    first = await wire.modern("tools/call", params)
    second = await wire.modern("tools/call", params)

    text = second["result"]["content"][0]["text"]
    assert first["result"]["structuredContent"] == {"result": 3}
    assert second["result"] == {**text_result(text, is_error=True), "resultType": "complete", **MODERN_SERVER_META}
    assert LIMITED.fullmatch(text)["rate"] == "1/m"  # type: ignore[index]


async def test_a_refused_call_is_audited_as_rate_limited(tools: None, user: Any) -> None:
    await db_call(set_rate, "add", "1/m")
    wire = await connected(user)

    await add(wire)
    refused = (await add(wire))["result"]
    rows = await db_call(lambda: list(ToolCall.objects.order_by("pk").values("tool_name", "outcome", "message")))

    assert rows == [
        {"tool_name": "add", "outcome": "ok", "message": ""},
        {"tool_name": "add", "outcome": "rate_limited", "message": refused["content"][0]["text"]},
    ]


async def test_a_flood_of_refused_calls_writes_one_row_per_counting_window(
    tools: None, user: Any, clock: Clock
) -> None:
    await db_call(set_rate, "add", "1/m")
    wire = await connected(user)

    for _ in range(10):
        await add(wire)
    clock.now += 60
    for _ in range(10):
        await add(wire)

    assert await db_call(outcomes) == [
        ("add", "ok"),
        ("add", "rate_limited"),
        ("add", "ok"),
        ("add", "rate_limited"),
    ]


# Denied and unknown calls: DENIED_RATE -----------------------------------------------------------


def unknown(request_id: Any, name: str) -> dict[str, Any]:
    return error(request_id, INVALID_PARAMS, f"Unknown tool: {name}", {"reason": f"Unknown tool: {name}"})


def outcomes() -> list[tuple[str, str]]:
    return list(ToolCall.objects.order_by("pk").values_list("tool_name", "outcome"))


def revoke_everyone(name: str) -> None:
    tool = Tool.objects.get(name=name)
    tool.everyone = False
    tool.save()


async def test_denied_and_unknown_calls_count_together_against_denied_rate(
    tools: None, user: Any, settings: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DENIED_RATE": "3/m"}
    await db_call(revoke_everyone, "whoami")
    wire = await connected(user)

    replies = [await wire.call(name) for name in ("nope", "whoami", "gone", "nope", "whoami")]
    granted = await add(wire)

    assert replies[:3] == [unknown(2, "nope"), unknown(3, "whoami"), unknown(4, "gone")]
    assert [refusal(reply["result"])[0] for reply in replies[3:]] == ["3/m", "3/m"]
    assert granted["result"] == added(1, 2)
    # Only the first refusal of the window is recorded.
    assert await db_call(outcomes) == [
        ("nope", "denied"),
        ("whoami", "denied"),
        ("gone", "denied"),
        ("nope", "rate_limited"),
        ("add", "ok"),
    ]


async def test_a_flood_of_unknown_calls_is_answered_again_once_its_window_passes(
    tools: None, user: Any, settings: Any, clock: Clock
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DENIED_RATE": "2/m"}
    wire = await connected(user)

    flood = [await wire.call(f"probe_{i}") for i in range(50)]
    _rate, retry = refusal(flood[-1]["result"])
    clock.now += retry
    later = await wire.call("probe_again")

    assert [reply.get("error", {}).get("code") for reply in flood[:2]] == [INVALID_PARAMS] * 2
    assert all(refusal(reply["result"])[0] == "2/m" for reply in flood[2:])
    assert later == unknown(later["id"], "probe_again")
    assert await db_call(outcomes) == [
        ("probe_0", "denied"),
        ("probe_1", "denied"),
        ("probe_2", "rate_limited"),
        ("probe_again", "denied"),
    ]


async def test_denied_calls_are_counted_per_user(tools: None, user: Any, settings: Any, django_user_model: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DENIED_RATE": "1/m"}
    bob = await db_call(django_user_model.objects.create_user, "bob", password="pw")
    alice_wire, bob_wire = await connected(user), await connected(bob)

    await alice_wire.call("nope")
    refused = await alice_wire.call("nope")
    elsewhere = await bob_wire.call("nope")

    assert refusal(refused["result"])[0] == "1/m"
    assert elsewhere == unknown(2, "nope")


@pytest.mark.parametrize("version", [1, "2024-10-07"])
async def test_a_denied_call_over_the_rate_is_invalid_params_for_draft_clients(
    tools: None, user: Any, settings: Any, version: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DENIED_RATE": "1/m"}
    wire = await connected(user, version)

    await wire.call("nope")
    refused = await wire.call("nope")

    reason = refused["error"]["data"]["reason"]
    assert LIMITED.fullmatch(reason)["rate"] == "1/m"  # type: ignore[index]
    assert refused == error(3, INVALID_PARAMS, "Tool execution failed", {"reason": reason})


async def test_without_a_denied_rate_every_unknown_call_is_answered_and_recorded(tools: None, user: Any) -> None:
    wire = await connected(user)

    replies = [await wire.call("nope") for _ in range(40)]

    assert replies == [unknown(request_id, "nope") for request_id in range(2, 42)]
    assert await db_call(outcomes) == [("nope", "denied")] * 40


async def test_the_unknown_calls_of_a_batch_count_against_denied_rate(tools: None, user: Any, settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DENIED_RATE": "2/m"}
    wire = await connected(user, "2025-03-26")

    await wire.send([rpc(1, "tools/call", {"name": f"probe_{i}"}) for i in range(5)])

    answers = wire.sent[-1]
    assert sorted("error" in answer for answer in answers) == [False, False, False, True, True]
    assert sorted(outcome for _name, outcome in await db_call(outcomes)) == ["denied", "denied", "rate_limited"]


# Who is counted ----------------------------------------------------------------------------------


async def open_client(ws_connect: Any, raw_token: str) -> WSClient:
    communicator, accepted, _ = await ws_connect(ws_headers(raw_token))
    assert accepted
    client = WSClient(communicator)
    await client.initialize()
    return client


async def test_two_tokens_of_one_user_share_the_users_count(ws_connect: Any, tools: None, user: Any) -> None:
    await db_call(set_rate, "add", "3/m")
    first = await open_client(ws_connect, await db_call(lambda: AccessToken.objects.issue(user, name="one")[1]))
    second = await open_client(ws_connect, await db_call(lambda: AccessToken.objects.issue(user, name="two")[1]))

    answered = [(await add(client))["result"] for client in (first, second, first)]
    refused_second = (await add(second))["result"]
    refused_first = (await add(first))["result"]

    assert answered == [added(1, 2)] * 3
    assert (refusal(refused_second)[0], refusal(refused_first)[0]) == ("3/m", "3/m")


async def test_a_tokens_calls_and_its_users_other_sessions_count_together(
    tools: None, user: Any, ws_connect: Any, token: str
) -> None:
    await db_call(set_rate, "add", "2/m")
    with_token = await open_client(ws_connect, token)
    without_token = await connected(user)

    await add(with_token)
    await add(without_token)

    assert await calls_until_refused(with_token) == 0
    assert await calls_until_refused(without_token) == 0


async def test_each_user_is_counted_apart(tools: None, user: Any, ws_connect: Any, django_user_model: Any) -> None:
    await db_call(set_rate, "add", "2/m")
    bob = await db_call(django_user_model.objects.create_user, "bob", password="pw")
    alice_client = await open_client(ws_connect, await db_call(lambda: AccessToken.objects.issue(user)[1]))
    bob_client = await open_client(ws_connect, await db_call(lambda: AccessToken.objects.issue(bob)[1]))

    alice_allowed = await calls_until_refused(alice_client)
    bob_allowed = await calls_until_refused(bob_client)

    assert (alice_allowed, bob_allowed) == (2, 2)


# Group overrides ---------------------------------------------------------------------------------


async def test_a_group_override_for_the_tool_replaces_its_rate_for_members(
    tools: None, user: Any, django_user_model: Any
) -> None:
    await db_call(set_rate, "add", "2/m")
    await db_call(override, "power", "5/m", "add")
    await db_call(join, user, "power")
    bob = await db_call(django_user_model.objects.create_user, "bob", password="pw")

    member = await calls_until_refused(await connected(user))
    other = await calls_until_refused(await connected(bob))

    assert (member, other) == (5, 2)


async def test_a_group_override_for_every_tool_applies_to_tools_with_and_without_a_rate(
    tools: None, user: Any, settings: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DEFAULT_RATE": "1/m"}
    await db_call(set_rate, "add", "2/m")
    await db_call(override, "power", "4/m")
    await db_call(join, user, "power")
    wire = await connected(user)

    allowed_add = await calls_until_refused(wire)
    allowed_multiply = 0
    while not (await wire.call("multiply", {"x": 1}))["result"]["isError"]:
        allowed_multiply += 1

    assert (allowed_add, allowed_multiply) == (4, 4)


async def test_an_override_for_the_tool_comes_before_an_override_for_every_tool(tools: None, user: Any) -> None:
    await db_call(override, "everything", "10/m")
    await db_call(override, "adders", "3/m", "add")
    await db_call(join, user, "everything", "adders")

    assert await calls_until_refused(await connected(user)) == 3


@pytest.mark.parametrize(
    ("tool", "rates", "allowed"),
    [
        ("add", ["3/m", "5/m"], 5),
        (None, ["2/m", "4/m"], 4),
        ("add", ["100/h", "6/m"], 6),  # 6/m is 360 an hour: generosity compares calls per second
        (None, ["7/10s", "3/m"], 7),
    ],
    ids=["tool-overrides", "every-tool-overrides", "per-hour-vs-per-minute", "short-period"],
)
async def test_among_a_users_groups_the_most_generous_override_wins(
    tools: None, user: Any, tool: str | None, rates: list[str], allowed: int
) -> None:
    await db_call(set_rate, "add", "1/m")
    for index, rate in enumerate(rates):
        await db_call(override, f"group-{index}", rate, tool)
    await db_call(join, user, *(f"group-{index}" for index in range(len(rates))))

    assert await calls_until_refused(await connected(user)) == allowed


async def test_an_override_for_a_group_the_user_is_not_in_changes_nothing(tools: None, user: Any) -> None:
    await db_call(set_rate, "add", "2/m")
    await db_call(override, "others", "50/m", "add")

    assert await calls_until_refused(await connected(user)) == 2


@pytest.mark.parametrize(
    ("rate", "per_second"), [("30/m", 0.5), ("1/s", 1.0), ("3600/h", 1.0), ("10/5s", 2.0), ("24/d", 24 / 86400)]
)
def test_calls_per_second_reads_django_ratelimit_rates(rate: str, per_second: float) -> None:
    assert calls_per_second(rate) == pytest.approx(per_second)


# The deploy check --------------------------------------------------------------------------------


def rate_limit_cache_warnings() -> list[checks.CheckMessage]:
    found = checks.run_checks(tags=[checks.Tags.caches], include_deployment_checks=True)
    return [message for message in found if message.id == "mcp_tools.W003"]


@pytest.mark.parametrize(
    ("alias", "backend", "kind"),
    [
        ("default", LOCMEM, "LocMemCache"),
        ("default", "django.core.cache.backends.dummy.DummyCache", "DummyCache"),
        ("limits", LOCMEM, "LocMemCache"),
    ],
)
def test_a_process_local_rate_limit_cache_is_a_deploy_warning(
    settings: Any, alias: str, backend: str, kind: str
) -> None:
    settings.CACHES = {"default": {"BACKEND": LOCMEM}, alias: {"BACKEND": backend}}
    settings.RATELIMIT_USE_CACHE = alias

    assert rate_limit_cache_warnings() == [
        checks.Warning(
            "Rate limits and a legacy HTTP session's concurrent calls count in the "
            f"{alias!r} cache, which is {kind}: "
            "each worker process counts on its own, so limits do not hold across processes.",
            hint="Use a shared cache (Redis or Memcached) for the cache RATELIMIT_USE_CACHE names.",
            id="mcp_tools.W003",
        )
    ]


def test_a_shared_rate_limit_cache_passes_the_deploy_check(settings: Any) -> None:
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:6379"}
    }

    assert rate_limit_cache_warnings() == []


async def test_credentials_of_different_kinds_numbered_alike_are_counted_apart(
    settings: Any, django_user_model: Any
) -> None:
    from mcp_tools.access import ratelimit
    from mcp_tools.oauth.tokens import OAuthCredential

    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "DENIED_RATE": "2/m"}
    alice = await db_call(django_user_model.objects.create_user, "alice-rate")
    bob = await db_call(django_user_model.objects.create_user, "bob-rate")
    site_token, _ = await db_call(AccessToken.objects.issue, alice)
    oauth = OAuthCredential(pk=site_token.pk, expires_at=None, client_label="", client_id="", scopes=frozenset())

    alice_counts = [await ratelimit.check_denied(alice, site_token) for _ in range(3)]
    bob_count = await ratelimit.check_denied(bob, oauth)

    assert [limited is None for limited in alice_counts] == [True, True, False]
    assert bob_count is None


# Where the count runs -----------------------------------------------------------------------------


async def test_an_in_memory_cache_is_counted_on_the_event_loop_without_a_thread_hop(
    tools: None, user: Any, monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    settings.CACHES = {"default": {"BACKEND": LOCMEM, "LOCATION": f"ratelimit-{uuid.uuid4().hex}"}}
    await db_call(set_rate, "add", "100/m")
    wire = await connected(user)
    counted_in: list[int] = []
    real = ratelimit.get_usage

    def noted(*args: Any, **kwargs: Any) -> Any:
        counted_in.append(threading.get_ident())
        return real(*args, **kwargs)

    monkeypatch.setattr(ratelimit, "get_usage", noted)

    assert (await add(wire))["result"] == added(1, 2)

    # A thread hop would cost more than counting in memory does (a cache server is still counted off the loop).
    assert counted_in == [threading.get_ident()]
