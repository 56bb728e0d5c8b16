"""Properties of model-query tools over generated arguments, allowed and random alike.

Whatever a caller sends, a call answers in-band (a result or an ``isError`` the engine meant), never with an
internal failure or a JSON-RPC error; every row it returns holds exactly the tool's output keys and belongs
to the caller's scope; secrets never appear; and writes never touch a row outside the scope. Over generated
models, no configuration of any tool kind reaches a field whose name looks like a secret.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable
from typing import Any
from unittest import mock

import pytest
from django.db import models as dj_models
from django.test.utils import isolate_apps
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from mcp_tools.access.sensitive import is_secret_name, is_secret_path
from mcp_tools.models import ModelQuery
from mcp_tools.server.calls import GENERIC_FAILURE
from mcp_tools.tools.executors.queries import fields as query_fields
from mcp_tools.tools.executors.queries.config import AGGREGATE_FUNCTIONS, build
from mcp_tools.tools.executors.queries.exposure import walk
from mcp_tools.tools.executors.queries.fields import FieldPathError, excluded, lookups_for, resolve
from mcp_tools.tools.executors.queries.schema import input_schema, row_schema
from tests.db import orm
from tests.live import query_data
from tests.queries import seed_users
from tests.testapp.models import Account, Item
from tests.wire import connected

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


# Configurations over generated models --------------------------------------------------------------

CONFIG_SETTINGS = settings(PROPERTY_SETTINGS, max_examples=500)
SECRET_PARTS = ("password", "token", "secret", "key", "hash", "salt", "otp", "pin", "credential", "private", "digest")
PLAIN_PARTS = ("name", "total", "status", "keyboard", "turkey", "owner", "code", "sort", "label", "note", "hashtag")
RESERVED = frozenset({"id", "pk", *dir(dj_models.Model)})
FIELD_KINDS: tuple[Callable[..., Any], ...] = (
    lambda **kw: dj_models.CharField(max_length=20, **kw),
    lambda **kw: dj_models.CharField(max_length=20, unique=True, **kw),
    lambda **kw: dj_models.IntegerField(**kw),
    lambda **kw: dj_models.DecimalField(max_digits=8, decimal_places=2, **kw),
    lambda **kw: dj_models.DateTimeField(**kw),
    lambda **kw: dj_models.BooleanField(default=False, **kw),
)
MODEL_NAMES = ("Related", "Customer", "ApiToken", "UserCredential", "SigningKey", "Vault")


def joined(parts: list[str], camel: bool) -> str:
    return parts[0] + "".join(p.title() for p in parts[1:]) if camel else "_".join(parts)


# A secret word in about one part in five, so that generated models mix plain and secret-looking fields and
# a good share of configurations name no secret at all.
words = st.one_of(
    st.sampled_from(SECRET_PARTS),
    st.sampled_from(PLAIN_PARTS),
    st.sampled_from(PLAIN_PARTS),
    st.from_regex(r"[a-z]{2,7}", fullmatch=True),
    st.from_regex(r"[a-z]{2,7}", fullmatch=True),
)
names = st.builds(joined, st.lists(words, min_size=1, max_size=3), st.booleans()).filter(lambda n: n not in RESERVED)


@st.composite
def model_graphs(draw: st.DrawFn) -> dict[str, Any]:
    """A related model and a root model with foreign keys to it: field names, columns and kinds drawn at random."""
    taken: set[str] = set()

    def fresh() -> str:
        name = draw(names.filter(lambda n: n not in taken and f"{n}_id" not in taken))
        taken.update({name, f"{name}_id"})
        return name

    def fields(count: int) -> dict[str, Any]:
        found = {}
        for _ in range(count):
            column = draw(st.one_of(st.none(), names))
            found[fresh()] = draw(st.sampled_from(FIELD_KINDS))(**({"db_column": column} if column else {}))
        return found

    related = {
        "name": draw(st.sampled_from(MODEL_NAMES)),
        "pk": fresh() if draw(st.booleans()) else None,
        "fields": fields(draw(st.integers(1, 3))),
    }
    taken.clear()
    root = {"fields": fields(draw(st.integers(1, 4))), "relations": [fresh() for _ in range(draw(st.integers(1, 2)))]}
    return {"related": related, "root": root}


def make_models(graph: dict[str, Any]) -> type[dj_models.Model]:
    """The graph as model classes in the current (isolated) app registry; returns the root model."""
    meta = type("Meta", (), {"app_label": "testapp"})
    related_spec = graph["related"]
    attrs: dict[str, Any] = {"__module__": __name__, "Meta": meta, **related_spec["fields"]}
    if related_spec["pk"]:
        attrs[related_spec["pk"]] = dj_models.CharField(max_length=20, primary_key=True)
    related = type(related_spec["name"], (dj_models.Model,), attrs)
    attrs = {"__module__": __name__, "Meta": meta, **graph["root"]["fields"]}
    attrs.update(
        {
            name: dj_models.ForeignKey(related, dj_models.CASCADE, related_name="+")
            for name in graph["root"]["relations"]
        }
    )
    return type("Root", (dj_models.Model,), attrs)


def looks_secret(field: Any) -> bool:
    """The requirement, stated without the engine: a name, attribute or column with a secret part, or a key to one."""
    if any(is_secret_name(n) for n in (field.name, field.attname, field.column) if n):
        return True
    return isinstance(field, dj_models.ForeignKey) and looks_secret(field.target_field)


def typed_paths(root: type[dj_models.Model], relations: list[str]) -> dict[str, list[str]]:
    """Candidates for each allow-list, by field type only: whether a name looks secret is left to the engine."""
    pairs: list[tuple[str, Any]] = [(f.name, f) for f in root._meta.concrete_fields]
    for relation in relations:
        target = root._meta.get_field(relation).related_model
        pairs += [(f"{relation}__{f.name}", f) for f in target._meta.concrete_fields]
    numbers = (dj_models.IntegerField, dj_models.DecimalField, dj_models.DateTimeField)
    local = [f for f in root._meta.concrete_fields if not f.primary_key]
    return {
        "output_fields": [p for p, _ in pairs],
        "ordering_fields": [p for p, _ in pairs],
        "group_by_fields": [p for p, _ in pairs],
        "search_fields": [p for p, f in pairs if isinstance(f, dj_models.CharField)],
        "aggregate_fields": [p for p, f in pairs if isinstance(f, numbers) and not isinstance(f, dj_models.ForeignKey)],
        "filters": [f"{p}__{lookup}" for p, f in pairs for lookup in lookups_for(f)],
        "writable_fields": [f.name for f in local],
        "lookup_field": ["pk", *(f.name for f in local if f.unique)],
        "scope_field": [""],
    }


@st.composite
def configurations(draw: st.DrawFn, root: type[dj_models.Model]) -> dict[str, Any]:
    keys = [f.name for f in root._meta.concrete_fields if isinstance(f, dj_models.ForeignKey)]
    relations = draw(st.lists(st.sampled_from(keys), max_size=len(keys), unique=True))
    options: dict[str, Any] = {
        "operation": draw(st.sampled_from(ModelQuery.Operation.values)),
        "relations": relations,
        "aggregate_functions": draw(st.lists(st.sampled_from(AGGREGATE_FUNCTIONS), max_size=3, unique=True)),
    }
    for allow_list, candidates in typed_paths(root, relations).items():
        if allow_list in ("lookup_field", "scope_field"):
            options[allow_list] = draw(st.sampled_from(candidates))
        elif candidates:
            options[allow_list] = draw(st.one_of(st.just([]), st.lists(st.sampled_from(candidates), max_size=2)))
    return options


def named_paths(options: dict[str, Any]) -> list[str]:
    """Every field path a configuration names, lookups stripped."""
    lists = ("output_fields", "ordering_fields", "group_by_fields", "search_fields", "aggregate_fields")
    paths = [p for name in lists for p in options.get(name, [])]
    paths += [entry.rpartition("__")[0] for entry in options.get("filters", [])]
    return [*paths, *options.get("writable_fields", []), *options["relations"], options["lookup_field"]]


def names_secret(root: type[dj_models.Model], path: str) -> bool:
    """Whether a path crosses or ends at a secret-looking field, or reads a field of an excluded model (a key to
    one is only a value of the row that holds it)."""
    if path == "pk":
        return looks_secret(root._meta.pk)
    for prefix, field, target in walk(root, path):
        if looks_secret(field) or (target is not None and excluded(target) and prefix != path):
            return True
    return False


def reached_paths(spec: Any) -> list[Any]:
    """Every path a built tool may read, filter, sort, aggregate or group by, resolved."""
    named = (*spec.ordering, *spec.search, *spec.aggregate_fields, *spec.relations)
    resolved = [*spec.output, *(f for f, _ in spec.filters.values()), *spec.group_by]
    return resolved + [resolve(spec.model, path, spec.relations) for path in named]


def reached_fields(spec: Any) -> list[tuple[str, Any]]:
    """Every (path, field) a built tool may read, filter, sort, aggregate, group, write or look rows up by."""
    found = [(r.path, field) for r in reached_paths(spec) for _, field, _ in walk(spec.model, r.path)]
    found += [(f.name, f) for f in spec.writable]
    if spec.operation in ("get", "update", "delete"):
        found.append((spec.lookup.name, spec.lookup))
    return found


def schema_names(spec: Any) -> list[str]:
    """Every name the generated schemas publish: arguments, enum values and result keys."""
    arguments = input_schema(spec)["properties"]
    published = list(arguments)
    for schema in arguments.values():
        published += [str(v) for v in schema.get("enum", schema.get("items", {}).get("enum", []))]
    return [*published, *row_schema(spec)["properties"]]


@CONFIG_SETTINGS
@given(graph=model_graphs(), data=st.data())
def test_no_configuration_of_any_tool_kind_reaches_a_secret_looking_field(graph: dict[str, Any], data: Any) -> None:
    """Over generated models, field names and columns: a configuration is refused exactly when it names a
    secret-looking field (at any segment, by name, attribute or column) or a field of an excluded model; one that
    builds reaches no such field on any allow-list, publishes none in its schemas, and the admin offers none."""
    with isolate_apps("tests.testapp") as registry, mock.patch.object(query_fields, "apps", registry):
        root = make_models(graph)
        options = data.draw(configurations(root))
        secret = [path for path in named_paths(options) if names_secret(root, path)]
        secret += [path for path in options["relations"] if excluded(root._meta.get_field(path).related_model)]
        try:
            spec = build(ModelQuery(model="testapp.Root", **options), "generated")
        except FieldPathError as exc:
            # Every candidate fits its allow-list by type, so a refusal can only be about a secret.
            assert secret, exc
            event("refused, naming a secret")
            return
        assert secret == [], secret
        event(f"built a {spec.operation} tool")
        for path, field in reached_fields(spec):
            assert not looks_secret(field), (path, field)
            assert not any(is_secret_name(part) for part in path.split("__")), path
        assert not any(is_secret_path(name.lstrip("-")) for name in schema_names(spec))
        offered = query_fields.filter_choices(root, spec.relations) + query_fields.field_paths(root, spec.relations)
        assert not [path for path in offered if is_secret_path(path)]
        assert not [r.path for r in reached_paths(spec) if any(excluded(m) for m in r.models_crossed)]
