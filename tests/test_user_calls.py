"""A user's calls in progress in this process: one count per user, anonymous callers as one, tools apart."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from django.contrib.auth.models import AnonymousUser

from mcp_tools.access import user_calls


@pytest.fixture(autouse=True)
def counted_in_this_process(settings: Any) -> None:
    """Counts in this process only: the shared cache's counters are the cross-process tests' subject, and a
    place these tests end without giving it back there would stay taken for the next test."""
    settings.CACHES = {**settings.CACHES, "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}


def user(pk: int) -> Any:
    return SimpleNamespace(pk=pk, is_authenticated=True)


async def test_a_user_takes_places_up_to_the_limit_and_gets_one_back_when_a_call_ends(settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CALLS_PER_USER": 2}

    taken = [await user_calls.take(user(1), 7, None, 60) for _ in range(3)]
    elsewhere = await user_calls.take(user(2), 7, None, 60)
    first = taken[0]
    assert first is not None
    given_back = first.end()
    again = await user_calls.take(user(1), 7, None, 60)

    assert [lease is not None for lease in taken] == [True, True, False]
    assert (elsewhere is not None, given_back, again is not None) == (True, True, True)
    for lease in (taken[1], elsewhere, again):
        assert lease is not None
        lease.end()
    assert (user_calls.running("1"), user_calls.running("2")) == (0, 0)


async def test_anonymous_callers_share_one_count(settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CALLS_PER_USER": 1}

    first = await user_calls.take(AnonymousUser(), 7, None, 60)
    second = await user_calls.take(AnonymousUser(), 7, None, 60)

    assert (first is not None, second) == (True, None)
    assert first is not None and first.end()


async def test_a_tool_with_its_own_limit_counts_apart_from_the_users_other_calls(settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "MAX_CALLS_PER_USER": 1}

    other = await user_calls.take(user(1), 7, None, 60)
    own = [await user_calls.take(user(1), 8, 2, 60) for _ in range(3)]

    assert other is not None
    assert [lease is not None for lease in own] == [True, True, False]
    assert user_calls.running("1.tool.8") == 2
    for lease in [other, *own]:
        if lease is not None:
            lease.end()


def test_the_refusal_names_the_limit_and_what_to_do():
    assert user_calls.too_many(3) == "Too many of your calls are in progress (at most 3); retry when one ends."
