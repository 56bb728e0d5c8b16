"""Scopes registered for a model: every read of its rows is narrowed, in model-query tools, through their
relations, and in registered callables through ``mcp_tools.scoped`` and ``ctx.queryset``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import checks

from mcp_tools import Context, ToolError, scoped
from mcp_tools.access import scopes as scope_registry
from mcp_tools.models import ModelQuery, Tool
from mcp_tools.tools.registry import build, registry
from tests.db import orm
from tests.live.query_data import grant
from tests.queries import failed, ok, seed_users
from tests.system_checks import mcp_checks
from tests.testapp.models import Account, Item
from tests.wire import connected

pytestmark = pytest.mark.django_db(transaction=True)


def account_name(ctx: Context, account_id: int) -> dict[str, str]:
    """The name of one account the caller may see."""
    account = ctx.queryset(Account).filter(pk=account_id).first()
    if account is None:
        raise ToolError(f"No account {account_id}.")
    return {"name": account.name}


@pytest.fixture
def people() -> dict[str, Any]:
    return seed_users()


@pytest.fixture
def account_name_tool() -> Iterator[None]:
    registry.register(build(account_name))
    tool = Tool(name="account_name", callable_name="account_name", everyone=True)
    tool.full_clean()  # takes the callable's input schema
    tool.save()
    yield
    registry.unregister("account_name")


def names(queryset: Any) -> list[str]:
    return sorted(queryset.values_list("name", flat=True))


def test_scoped_is_the_default_managers_rows_narrowed_by_the_scopes_registered_for_the_model(
    people: dict[str, Any],
) -> None:
    assert names(scoped(Account, people["alice"])) == ["Acme", "Beta_Corp", "Delta"]
    assert names(scoped(Account, people["bob"])) == ["Gamma 100%"]


def test_without_the_view_permission_scoped_is_empty(people: dict[str, Any]) -> None:
    stranger = get_user_model()._default_manager.create_user("erin", password="erin")
    stranger.groups.add(*people["alice"].groups.all())

    assert names(scoped(Account, stranger)) == []
    assert names(scoped(Account, grant(stranger, "testapp.view_account"))) == ["Acme", "Beta_Corp", "Delta"]


def test_a_model_without_a_registered_scope_is_only_gated_by_its_view_permission(people: dict[str, Any]) -> None:
    assert scoped(Item, people["alice"]).count() == Item.objects.count()


def test_ctx_queryset_gives_the_callers_scoped_rows(people: dict[str, Any]) -> None:
    ctx = Context(user=people["bob"], tool_name="probe")

    assert names(ctx.queryset(Account)) == ["Gamma 100%"]


async def test_a_callable_reading_through_ctx_queryset_cannot_tell_a_hidden_row_from_a_missing_one(
    people: dict[str, Any], account_name_tool: None
) -> None:
    acme = await orm(lambda: Account.objects.get(name="Acme"))
    alice, bob = await connected(people["alice"]), await connected(people["bob"])

    assert ok(await alice.call("account_name", {"account_id": acme.pk})) == {"name": "Acme"}
    assert failed(await bob.call("account_name", {"account_id": acme.pk})) == f"No account {acme.pk}."
    assert failed(await bob.call("account_name", {"account_id": 999_999})) == "No account 999999."


def make_unscoped_tools() -> None:
    for name, model, options in [
        ("all_accounts", "testapp.Account", {"output_fields": ["id", "name"]}),
        (
            "all_items",
            "testapp.Item",
            {"output_fields": ["id", "account__name"], "relations": ["account"], "filters": ["account__name__exact"]},
        ),
    ]:
        tool = Tool.objects.create(name=name, kind=Tool.Kind.MODEL_QUERY, everyone=True)
        ModelQuery.objects.create(tool=tool, model=model, default_limit=100, **options)


async def test_model_query_tools_apply_a_model_scope_without_naming_it(people: dict[str, Any]) -> None:
    await orm(make_unscoped_tools)
    bob = await connected(people["bob"])

    result = ok(await bob.call("all_accounts"))

    gamma = await orm(lambda: Account.objects.get(name="Gamma 100%"))
    assert result == {"results": [{"id": gamma.pk, "name": "Gamma 100%"}], "count": 1}


async def test_rows_related_to_a_row_outside_a_model_scope_are_hidden_and_cannot_be_filtered_for(
    people: dict[str, Any],
) -> None:
    await orm(make_unscoped_tools)
    alice = await connected(people["alice"])

    listed = ok(await alice.call("all_items", {"limit": 100}))
    probed = ok(await alice.call("all_items", {"account__name": "Gamma 100%"}))

    assert listed["count"] == await orm(lambda: Item.objects.filter(account__tenant="north").count())
    assert {row["account__name"] for row in listed["results"]} == {"Acme", "Beta_Corp", "Delta"}
    assert probed == {"results": [], "count": 0}


def test_a_scope_registered_for_a_model_that_is_not_installed_is_a_check_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(scope_registry._model_scopes, "testapp.acount", ["testapp.tenant_accounts"])

    assert mcp_checks() == [
        checks.Error(
            "A scope is registered for 'testapp.acount', which is not an installed model: it applies to no rows.",
            hint='Pass @query_scope(..., model=...) a model class or its "app_label.ModelName".',
            id="mcp_tools.E009",
        )
    ]
