"""The scoped rows a model-query tool starts from are built once per tool configuration and caller object, and
never outlive either: another caller, a reloaded caller, a new configuration or a new scope builds them again."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser

from mcp_tools.access import scopes
from mcp_tools.conf import mcp_settings
from mcp_tools.tools.executors.queries import call, operations
from mcp_tools.tools.executors.queries.arguments import plan
from mcp_tools.tools.executors.queries.call import in_scope
from tests.queries import seed_users, spec_of
from tests.testapp.models import Item

pytestmark = pytest.mark.django_db

ALIAS = "default"


def ids(queryset: Any) -> list[int]:
    return sorted(queryset.values_list("pk", flat=True))


@pytest.fixture
def people() -> dict[str, Any]:
    return seed_users()


def test_one_caller_object_reuses_its_scoped_rows_and_sees_only_its_own(people: dict[str, Any]) -> None:
    spec = spec_of("tenant_items")

    alice, bob = people["alice"], people["bob"]
    first = in_scope(spec, alice, ALIAS)

    assert in_scope(spec, alice, ALIAS) is first
    assert ids(first) == ids(Item.objects.filter(account__tenant="north"))
    assert ids(in_scope(spec, bob, ALIAS)) == ids(Item.objects.filter(account__tenant="south"))


def test_a_reloaded_caller_a_new_configuration_and_a_new_scope_build_the_rows_again(people: dict[str, Any]) -> None:
    spec = spec_of("tenant_items")
    alice = people["alice"]
    first = in_scope(spec, alice, ALIAS)

    alice.is_superuser = True  # a change in rights reaches sessions as a freshly read user object
    alice.save()
    fresh = get_user_model()._default_manager.get(pk=alice.pk)

    assert in_scope(spec, fresh, ALIAS) is not first
    assert in_scope(spec_of("tenant_items"), alice, ALIAS) is not first
    scopes.query_scope("testapp.tenant_items")(scopes.get("testapp.tenant_items"))
    assert in_scope(spec, alice, ALIAS) is not first


def test_anonymous_callers_get_no_reused_rows(people: dict[str, Any]) -> None:
    spec, anonymous = spec_of("tenant_items"), AnonymousUser()

    assert in_scope(spec, anonymous, ALIAS) is not in_scope(spec, anonymous, ALIAS)


def test_a_reused_listing_pages_and_sorts_each_callers_own_rows(people: dict[str, Any]) -> None:
    spec = spec_of("tenant_items")

    def listed(username: str, arguments: dict[str, Any]) -> list[int]:
        return [
            row["id"] for row in operations.execute(spec, plan(spec, arguments), arguments, people[username])["results"]
        ]

    for _ in range(2):  # the second round reads what the first built
        for username, tenant in (("alice", "north"), ("bob", "south")):
            for order in ("pk", "name", "-name"):
                arguments = {"limit": 100} if order == "pk" else {"limit": 100, "order_by": order}
                expected = Item.objects.filter(account__tenant=tenant).order_by(order, "pk")
                assert listed(username, arguments) == list(expected.values_list("pk", flat=True))


def test_reused_rows_are_built_again_once_the_freshness_bound_passes(people: dict[str, Any], monkeypatch) -> None:
    # A scope may read values when it builds its filter (a profile's regions, say): a change to them must bind
    # within FRESHNESS_SECONDS, as the owner's other decisions do.
    spec, alice = spec_of("tenant_items"), people["alice"]
    now = [1000.0]
    monkeypatch.setattr(call.time, "monotonic", lambda: now[0])
    first = in_scope(spec, alice, ALIAS)

    now[0] += float(mcp_settings.FRESHNESS_SECONDS) - 0.01
    assert in_scope(spec, alice, ALIAS) is first
    now[0] += 0.02
    assert in_scope(spec, alice, ALIAS) is not first
