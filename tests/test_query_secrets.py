"""Secret-looking fields: recognised by pattern on every allow-list and every path segment, never reachable."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from mcp_tools.exceptions import INVALID_PARAMS
from mcp_tools.models import ModelQuery, Tool
from mcp_tools.tools.catalog import catalog
from mcp_tools.tools.executors.queries.fields import field_paths, filter_choices, local_fields
from tests.db import orm
from tests.live.query_data import grant
from tests.queries import failed, ok, seed_users
from tests.testapp.models import Account, Integration
from tests.wire import connected, listed

SECRET_NAMES = ("access_token", "password_hash", "client_secret", "apiKey", "refresh_token", "private_key")


def refusal(model: str, options: dict[str, Any]) -> list[str]:
    config = ModelQuery(tool=Tool(name="probe"), model=model, **options)
    with pytest.raises(ValidationError) as raised:
        config.clean()
    return list(raised.value.message_dict["__all__"])


def no_field(name: str, model: str = "testapp.Integration") -> list[str]:
    return [f"{model} has no field {name!r} that may be exposed."]


def test_only_the_plain_fields_of_a_model_full_of_secrets_may_be_exposed() -> None:
    assert [f.name for f in local_fields(Integration)] == ["id", "account", "name"]
    assert field_paths(Integration, frozenset()) == ["id", "account", "name"]


def test_no_secret_is_offered_as_a_filter_even_through_a_relation() -> None:
    offered = filter_choices(Account, frozenset({"manager"}))

    assert [entry for entry in offered if "password" in entry or "api_key" in entry] == []
    assert "manager__username__startswith" in offered


# Every allow-list refuses a secret-looking name ---------------------------------------------------

ALLOW_LISTS: list[tuple[str, dict[str, Any]]] = [
    ("access_token", {"output_fields": ["name", "access_token"]}),
    ("password_hash", {"output_fields": ["name"], "filters": ["password_hash__startswith"]}),
    ("client_secret", {"output_fields": ["name"], "ordering_fields": ["client_secret"]}),
    ("apiKey", {"output_fields": ["name"], "search_fields": ["apiKey"]}),
    (
        "refresh_token",
        {"operation": "aggregate", "aggregate_functions": ["count"], "group_by_fields": ["refresh_token"]},
    ),
    ("private_key", {"operation": "update", "output_fields": ["name"], "writable_fields": ["private_key"]}),
    ("refresh_token", {"operation": "get", "output_fields": ["name"], "lookup_field": "refresh_token"}),
]


@pytest.mark.parametrize(("name", "options"), ALLOW_LISTS, ids=[f"{n} {sorted(o)}" for n, o in ALLOW_LISTS])
def test_a_secret_looking_field_is_refused_on_every_allow_list(name: str, options: dict[str, Any]) -> None:
    assert refusal("testapp.Integration", options) == no_field(name)


def test_a_plain_name_over_a_secret_column_is_refused() -> None:
    assert refusal("testapp.Integration", {"output_fields": ["fingerprint"]}) == no_field("fingerprint")


def test_a_relation_whose_value_is_a_secret_key_is_refused_as_a_value_and_as_a_path() -> None:
    assert refusal("testapp.Integration", {"output_fields": ["licence"]}) == no_field("licence")
    assert refusal("testapp.Integration", {"output_fields": ["licence__name"], "relations": ["licence"]}) == no_field(
        "licence"
    )
    assert refusal("testapp.Integration", {"output_fields": ["licence_id"]}) == no_field("licence_id")


def test_a_secret_segment_anywhere_in_a_path_is_refused() -> None:
    options = {"output_fields": ["id"], "relations": ["account"], "filters": ["account__api_key__startswith"]}

    assert refusal("testapp.Integration", options) == no_field("api_key", "testapp.Account")


def test_the_scope_field_follows_the_same_rule() -> None:
    assert refusal("testapp.Integration", {"output_fields": ["id"], "scope_field": "access_token"}) == no_field(
        "access_token"
    )


def test_extra_secret_fields_add_to_the_built_in_patterns(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "SECRET_FIELDS": ["tenant"]}

    assert [f.name for f in local_fields(Account)] == ["id", "name", "manager"]
    assert refusal("testapp.Integration", {"output_fields": ["access_token"]}) == no_field("access_token")


# A call cannot reach one ----------------------------------------------------------------------------


def make_integrations() -> Any:
    people = seed_users()
    acme = Account.objects.get(name="Acme")
    Integration.objects.create(
        account=acme, name="billing", access_token="tok-9f2", client_secret="cs-1", private_key="pk-1"
    )
    tool = Tool.objects.create(name="integrations", kind=Tool.Kind.MODEL_QUERY, everyone=True)
    ModelQuery.objects.create(
        tool=tool,
        model="testapp.Integration",
        output_fields=["id", "name"],
        filters=["name__startswith"],
        ordering_fields=["name"],
        scope_field="account__manager",
        relations=["account"],
    )
    return grant(people["alice"], "testapp.view_integration")


@pytest.mark.django_db(transaction=True)
async def test_a_call_naming_a_secret_field_is_refused_with_the_allowed_names() -> None:
    wire = await connected(await orm(make_integrations))
    allowed = "cursor, limit, name__startswith, order_by"

    probe = failed(await wire.call("integrations", {"access_token__startswith": "t"}))
    ordered = failed(await wire.call("integrations", {"order_by": "client_secret"}))
    listed = ok(await wire.call("integrations"))

    assert probe == f"Invalid arguments: Unknown argument 'access_token__startswith'. Allowed: {allowed}."
    assert ordered == "Invalid arguments: order_by: 'client_secret' is not one of ['name', '-name']"
    assert listed["results"] == [{"id": listed["results"][0]["id"], "name": "billing"}]


@pytest.mark.django_db(transaction=True)
async def test_a_tool_saved_before_the_rule_that_names_a_secret_is_an_unknown_tool() -> None:
    def widen() -> None:
        ModelQuery.objects.filter(tool__name="integrations").update(
            output_fields=["id", "name", "access_token"], filters=["name__startswith", "access_token__startswith"]
        )
        catalog.invalidate()

    wire = await connected(await orm(make_integrations))
    await orm(widen)

    reply = await wire.call("integrations", {"access_token__startswith": "t"})
    names = await listed(wire)

    assert reply["error"] == {
        "code": INVALID_PARAMS,
        "message": "Unknown tool: integrations",
        "data": {"reason": "Unknown tool: integrations"},
    }
    assert "integrations" not in names and "items" in names
