"""Properties of model-query tools over generated arguments, allowed and random alike.

Whatever a caller sends, a call answers in-band (a result or an ``isError`` the engine meant), never with an
internal failure or a JSON-RPC error; every row it returns holds exactly the tool's output keys and belongs
to the caller's scope; secrets never appear; and writes never touch a row outside the scope.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mcp_tools.executors.queries.config import build
from mcp_tools.executors.queries.schema import input_schema, row_schema
from mcp_tools.models import ModelQuery
from mcp_tools.server import GENERIC_FAILURE
from tests.live import query_data
from tests.test_queries import orm, seed_users
from tests.test_server import connected
from tests.testapp.models import Account, Item

pytestmark = pytest.mark.django_db(transaction=True)

PROPERTY_SETTINGS = settings(
    max_examples=200,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
WRITE_SETTINGS = settings(PROPERTY_SETTINGS, max_examples=100)
# The in-band errors the engine raises on purpose; anything else would be an accident.
EXPECTED_ERRORS = (
    "Invalid arguments: ",
    "Invalid cursor: ",
    "This cursor belongs to a different query",
    "No item with ",
    "Not saved: ",
    "Give at least one field to change",
)
MARKERS = (query_data.SECRET_PREFIX, query_data.NOTE_PREFIX, "md5$")
HOSTILE_NAMES = (
    "account__manager__password",
    "account__api_key",
    "name__regex",
    "pk",
    "order_by",
    "n\u0430me",
    "name__",
    "__name",
    "notes",
    "payload__n",
    "id__in",
    "cursor",
    "limit",
)
UTC = datetime.UTC


def config_of(name: str) -> Any:
    return next(config for config in query_data.TOOLS if config.name == name)


def spec_of(name: str) -> Any:
    config = config_of(name)
    return build(ModelQuery(model=config.model, operation=config.operation, **config.options), name)


def output_keys(name: str) -> set[str]:
    return set(row_schema(spec_of(name))["properties"])


# Strategies --------------------------------------------------------------------------------------

json_leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False, allow_infinity=False),  # NaN and Infinity are not JSON: a parse error
    st.text(max_size=12),
)
# Few leaves keep messages far below the server's nesting limit, which would answer a JSON-RPC error instead.
junk = st.recursive(
    json_leaves,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=8,
)


def typed(schema: dict[str, Any], keys: list[int]) -> st.SearchStrategy[Any]:
    """Values of the JSON type ``schema`` describes, with edge cases; ``keys`` are primary keys that exist."""
    kind = schema.get("type")
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if kind == "array":
        items = typed(schema["items"], keys)
        return st.lists(items, min_size=schema.get("minItems", 0), max_size=min(schema.get("maxItems", 4), 4))
    if kind == "boolean":
        return st.booleans()
    if kind == "integer":
        bounded = st.integers(schema.get("minimum", -30), schema.get("maximum", 30))
        return st.one_of(st.sampled_from(keys), st.sampled_from(keys), bounded, st.integers())
    if kind == ["number", "string"]:
        decimals = st.decimals(min_value=-(10**6), max_value=10**6, places=2, allow_nan=False).map(str)
        return st.one_of(decimals, st.floats(allow_nan=False, allow_infinity=False), st.integers(), st.text(max_size=8))
    return text_for(schema)


def text_for(schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    form = schema.get("format")
    if form == "date":
        return st.one_of(st.dates().map(datetime.date.isoformat), st.text(max_size=10))
    if form == "date-time":
        zones = st.sampled_from([UTC, *(datetime.timezone(datetime.timedelta(hours=h)) for h in (-14, -5, 14))])
        moments = st.datetimes(timezones=zones).map(datetime.datetime.isoformat)
        edges = st.sampled_from(["9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+14:00", "9999-12-31T23:59:59"])
        return st.one_of(moments, edges, st.datetimes().map(datetime.datetime.isoformat), st.text(max_size=25))
    if form == "uuid":
        return st.one_of(st.uuids().map(str), st.integers(0, 60).map(lambda n: f"00000000-0000-0000-0000-{n:012d}"))
    words = st.sampled_from(["Widget", "gadget", "%", "_", "Acme", "Gamma", "SECRET", "' OR 1=1 --", " "])
    return st.one_of(words, st.text(max_size=min(schema.get("maxLength", 30), 30)))


def arguments_for(name: str, keys: list[int]) -> st.SearchStrategy[Any]:
    """Arguments for the tool ``name``: well-typed subsets of its allowed names, random names and random values."""
    schema = input_schema(spec_of(name))
    properties = schema["properties"]
    allowed = sorted(properties)
    required = schema.get("required", [])
    chosen = st.lists(st.sampled_from(allowed), max_size=4, unique=True)
    well_typed = chosen.flatmap(
        lambda names: st.fixed_dictionaries({n: typed(properties[n], keys) for n in [*required, *names]})
    )
    names = st.one_of(st.sampled_from(allowed), st.sampled_from(HOSTILE_NAMES), st.text(max_size=12))
    wild = st.dictionaries(names, st.one_of(junk, *(typed(properties[n], keys) for n in allowed)), max_size=4)
    mixed = st.tuples(well_typed, wild).map(lambda pair: {**pair[0], **pair[1]})
    # Mostly well-typed calls, so that queries and writes really run; the rest probe the refusals.
    return st.one_of(well_typed, well_typed, well_typed, mixed, wild, junk)


# Checking one answer -------------------------------------------------------------------------------


def answered(tool: str, reply: dict[str, Any]) -> dict[str, Any] | None:
    """The structured result of a successful call, or None for an in-band error the engine meant."""
    assert "result" in reply, reply
    result = reply["result"]
    answer = json.dumps(reply, ensure_ascii=False)
    shown = output_keys(tool)
    hidden = [m for m in MARKERS if not (m == query_data.NOTE_PREFIX and "notes" in shown)]
    assert not [marker for marker in hidden if marker in answer], answer
    [block] = result["content"]
    if result["isError"]:
        assert block["text"] != GENERIC_FAILURE
        assert block["text"].startswith(EXPECTED_ERRORS), block["text"]
        event(f"refused: {next(e for e in EXPECTED_ERRORS if block['text'].startswith(e))}")
        return None
    structured = dict(result["structuredContent"])
    event("answered with rows" if structured["results"] else "answered without rows")
    return structured


def scope_of(username: str) -> dict[str, Any]:
    accounts = Account.objects.filter(manager__username=username)
    return {
        "accounts": set(accounts.values_list("pk", flat=True)),
        "names": set(accounts.values_list("name", flat=True)),
        "items": Item.objects.filter(account__in=accounts).count(),
        "north": set(Account.objects.filter(tenant="north").values_list("pk", flat=True)),
        # Keys of every row, the caller's own twice so that calls often name a row they may touch.
        "keys": [
            *Item.objects.values_list("pk", flat=True),
            *Account.objects.values_list("pk", flat=True),
            *(2 * list(Item.objects.filter(account__in=accounts).values_list("pk", flat=True))),
            *(2 * list(accounts.values_list("pk", flat=True))),
        ],
    }


def outside(username: str) -> list[dict[str, Any]]:
    return list(Item.objects.exclude(account__manager__username=username).order_by("pk").values())


@pytest.fixture
def people() -> dict[str, Any]:
    return seed_users()


@pytest.fixture
def scopes(people: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each user's scope, read once before the examples run so that every example draws from the same keys."""
    return {username: scope_of(username) for username in people}


# Reads -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("username", ["alice", "bob"])
@PROPERTY_SETTINGS
@given(data=st.data())
async def test_list_rows_hold_the_output_keys_and_belong_to_the_caller(
    people: dict[str, Any], scopes: dict[str, Any], username: str, data: st.DataObject
) -> None:
    scope = scopes[username]
    wire = await connected(people[username])

    result = answered("items", await wire.call("items", data.draw(arguments_for("items", scope["keys"]))))

    if result is not None:
        assert all(set(row) == output_keys("items") for row in result["results"])
        assert {row["account"] for row in result["results"]} <= scope["accounts"]
        assert {row["account__name"] for row in result["results"]} <= scope["names"]
        assert len(result["results"]) <= min(25, result["count"]) <= scope["items"]


@PROPERTY_SETTINGS
@given(data=st.data())
async def test_rows_of_a_tool_scoped_by_a_callable_stay_in_the_callers_tenant(
    people: dict[str, Any], scopes: dict[str, Any], data: st.DataObject
) -> None:
    scope = scopes["alice"]
    wire = await connected(people["alice"])

    result = answered(
        "tenant_items", await wire.call("tenant_items", data.draw(arguments_for("tenant_items", scope["keys"])))
    )

    if result is not None:
        assert all(set(row) == output_keys("tenant_items") for row in result["results"])
        assert {row["account__tenant"] for row in result["results"]} <= {"north"}
        assert {row["account"] for row in result["results"]} <= scope["north"]


@PROPERTY_SETTINGS
@given(data=st.data())
async def test_get_returns_only_a_row_in_scope(
    people: dict[str, Any], scopes: dict[str, Any], data: st.DataObject
) -> None:
    scope = scopes["alice"]
    wire = await connected(people["alice"])

    result = answered("item", await wire.call("item", data.draw(arguments_for("item", scope["keys"]))))

    if result is not None:
        [row] = result["results"]
        assert set(row) == output_keys("item")
        assert row["account"] in scope["accounts"]


@PROPERTY_SETTINGS
@given(data=st.data())
async def test_counts_and_aggregates_never_reach_beyond_the_scope(
    people: dict[str, Any], scopes: dict[str, Any], data: st.DataObject
) -> None:
    scope = scopes["alice"]
    wire = await connected(people["alice"])
    tool = data.draw(st.sampled_from(["item_count", "item_stats"]))

    result = answered(tool, await wire.call(tool, data.draw(arguments_for(tool, scope["keys"]))))

    if result is None:
        return
    if tool == "item_count":
        assert result["results"] == [] and 0 <= result["count"] <= scope["items"]
        return
    allowed = {*output_keys(tool), *spec_of(tool).metrics}
    for row in result["results"]:
        assert set(row) <= allowed
        assert row.get("account__name", "Acme") in scope["names"]
        assert 0 <= (row.get("count") or 0) <= scope["items"]


# Writes ------------------------------------------------------------------------------------------


@WRITE_SETTINGS
@given(data=st.data())
async def test_updates_never_change_a_row_outside_the_scope(
    people: dict[str, Any], scopes: dict[str, Any], data: st.DataObject
) -> None:
    scope = scopes["alice"]
    before = await orm(outside, "alice")
    wire = await connected(people["alice"])

    result = answered(
        "item_update", await wire.call("item_update", data.draw(arguments_for("item_update", scope["keys"])))
    )

    if result is not None:
        [row] = result["results"]
        assert set(row) == output_keys("item_update")
        assert row["account"] in scope["accounts"]
    assert await orm(outside, "alice") == before


@WRITE_SETTINGS
@given(data=st.data())
async def test_creates_land_only_in_the_callers_tenant(
    people: dict[str, Any], scopes: dict[str, Any], data: st.DataObject
) -> None:
    scope = scopes["alice"]
    south = await orm(lambda: list(Item.objects.filter(account__tenant="south").order_by("pk").values()))
    wire = await connected(people["alice"])

    result = answered(
        "item_create", await wire.call("item_create", data.draw(arguments_for("item_create", scope["keys"])))
    )

    if result is not None:
        [row] = result["results"]
        assert set(row) == output_keys("item_create")
        assert row["account"] in scope["north"]
    assert await orm(lambda: list(Item.objects.filter(account__tenant="south").order_by("pk").values())) == south


@WRITE_SETTINGS
@given(data=st.data())
async def test_deletes_never_remove_a_row_outside_the_scope(
    people: dict[str, Any], scopes: dict[str, Any], data: st.DataObject
) -> None:
    scope = scopes["alice"]
    before = await orm(outside, "alice")
    wire = await connected(people["alice"])

    result = answered(
        "item_delete", await wire.call("item_delete", data.draw(arguments_for("item_delete", scope["keys"])))
    )

    if result is not None:
        assert result == {"results": [], "count": 1, "deleted": {"testapp.Item": 1}}
    assert await orm(outside, "alice") == before
