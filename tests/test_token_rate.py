"""A token's own rate: counted across every tool, binding whenever it is the lower rate, set by admin and command."""

from __future__ import annotations

import io
import re
from types import SimpleNamespace
from typing import Any

import django_ratelimit.core
import pytest
from django.core.management import CommandError, call_command

from mcp_tools.access import ratelimit
from mcp_tools.models import AccessToken, Tool
from tests.db import db_call
from tests.websocket import WSClient, ws_headers

pytestmark = pytest.mark.django_db(transaction=True)

LIMITED = re.compile(r"Rate limit (?P<rate>\S+) exceeded: retry after \d+ s\.")
TOKENS_URL = "/admin/mcp_tools/accesstoken/"


@pytest.fixture(autouse=True)
def own_counters(own_cache: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cache of this test's own (in memory, and on Redis), and django-ratelimit's clock held still inside
    one counting window."""
    monkeypatch.setattr(django_ratelimit.core, "time", SimpleNamespace(time=lambda: 1_800_000_000.25))


def set_rate(name: str, rate: str) -> None:
    tool = Tool.objects.get(name=name)
    tool.rate_limit = rate
    tool.full_clean()
    tool.save()


async def open_client(ws_connect: Any, raw_token: str) -> WSClient:
    communicator, accepted, _ = await ws_connect(ws_headers(raw_token))
    assert accepted
    client = WSClient(communicator)
    await client.initialize()
    return client


async def refused_rates(client: WSClient, calls: list[tuple[str, dict[str, Any]]]) -> list[str | None]:
    """For each call in turn: the rate named by its refusal, or None when it was answered."""
    rates: list[str | None] = []
    for name, arguments in calls:
        result = (await client.request("tools/call", {"name": name, "arguments": arguments}))["result"]
        found = LIMITED.fullmatch(result["content"][0]["text"]) if result["isError"] else None
        assert result["isError"] == (found is not None), result
        rates.append(found["rate"] if found else None)
    return rates


ADD = ("add", {"a": 1, "b": 2})
GREET = ("greet", {"name": "Ada"})


async def test_a_tokens_rate_counts_calls_across_every_tool_and_binds_below_the_tools_rate(
    tools: None, user: Any, ws_connect: Any
) -> None:
    await db_call(set_rate, "add", "100/m")
    _token, raw = await db_call(AccessToken.objects.issue, user, rate="2/m")
    client = await open_client(ws_connect, raw)

    assert await refused_rates(client, [ADD, GREET, ADD, GREET]) == [None, None, "2/m", "2/m"]


async def test_a_tools_lower_rate_still_binds_a_token_with_a_higher_one(
    tools: None, user: Any, ws_connect: Any
) -> None:
    await db_call(set_rate, "add", "1/m")
    _token, raw = await db_call(AccessToken.objects.issue, user, rate="10/m")
    client = await open_client(ws_connect, raw)

    assert await refused_rates(client, [ADD, ADD, GREET]) == [None, "1/m", None]


async def test_another_token_of_the_same_user_keeps_its_own_count(tools: None, user: Any, ws_connect: Any) -> None:
    _token, limited = await db_call(AccessToken.objects.issue, user, rate="1/m")
    _token, other = await db_call(AccessToken.objects.issue, user)
    first = await open_client(ws_connect, limited)
    second = await open_client(ws_connect, other)

    assert await refused_rates(first, [ADD, ADD]) == [None, "1/m"]
    assert await refused_rates(second, [ADD, ADD, ADD]) == [None, None, None]


async def test_credentials_without_a_rate_of_their_own_are_never_counted_by_it() -> None:
    oauth_token = SimpleNamespace(pk=1)  # an OAuth access token has no rate_limit field
    site_token = SimpleNamespace(pk=2, rate_limit="")

    assert [await ratelimit.check_token(t) for t in (None, oauth_token, site_token)] == [None, None, None]


def test_mcp_token_create_sets_the_tokens_rate(user: Any) -> None:
    out = io.StringIO()
    call_command("mcp_token", "create", user.get_username(), "--rate", "60/m", stdout=out)

    token = AccessToken.objects.get()
    assert (token.rate_limit, token.hint) == ("60/m", out.getvalue().strip()[:12])


def test_mcp_token_create_refuses_a_rate_it_cannot_read(user: Any) -> None:
    with pytest.raises(CommandError, match=r'--rate must be a rate like "30/m"'):
        call_command("mcp_token", "create", user.get_username(), "--rate", "lots", stdout=io.StringIO())
    assert not AccessToken.objects.exists()


def test_the_token_admin_sets_and_lists_the_rate(admin_client: Any, user: Any) -> None:
    admin_client.post(
        f"{TOKENS_URL}add/",
        {"user": user.pk, "name": "ci", "expires_at_0": "", "expires_at_1": "", "rate_limit": "30/m"},
    )
    token = AccessToken.objects.get()
    response = admin_client.post(
        f"{TOKENS_URL}{token.pk}/change/", {"name": "ci", "expires_at_0": "", "expires_at_1": "", "rate_limit": "oops"}
    )

    assert response.context["adminform"].form.errors["rate_limit"] == ['Write a rate like "30/m", "1000/h" or "10/5s".']
    token.refresh_from_db()
    assert token.rate_limit == "30/m"
    assert "30/m" in admin_client.get(TOKENS_URL).content.decode()
