"""Hostile arguments and configurations against the model-query engine.

Every attack is a real ``tools/call`` from alice (2025-11-25, so invalid arguments come back as ``isError``
results). Each must be rejected with a message that names the allowed choices, refused in-band, or
neutralised to rows alice may see; whatever happens, no response carries a secret, a field outside the
tool's output, or a row outside alice's scope, and the database is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.core import signing
from django.core.exceptions import ValidationError

from mcp_tools.conf import DEFAULTS
from mcp_tools.exceptions import INVALID_PARAMS, PARSE_ERROR, InvalidArguments
from mcp_tools.models import ModelQuery, Tool
from mcp_tools.tools.executors.queries.arguments import CURSOR_SALT, fingerprint, plan
from mcp_tools.tools.executors.queries.config import build
from tests.db import orm
from tests.live import query_data
from tests.queries import failed, ok, seed_users, snapshot
from tests.testapp.models import Account, Item
from tests.wire import Wire, connected

# Calls run the engine in worker threads, which see only committed rows.
hostile = pytest.mark.django_db(transaction=True)

INVALID_CURSOR = "Invalid cursor: pass next_cursor from the previous page unchanged."
OTHER_QUERY = "This cursor belongs to a different query: repeat the same filters to page on."
NOT_AN_ACCOUNT = "Not saved: account: not one of the accounts you may use."
MARKERS = (query_data.SECRET_PREFIX, query_data.NOTE_PREFIX, "md5$")
# Tools scoped by a tenant callable show carol's north rows to alice; the others only alice's own.
MAX_IN = DEFAULTS["MAX_IN_ITEMS"]  # tests.settings keeps the default
TENANT_TOOLS = ("accounts", "tenant_items", "item_by_ref", "item_create")


@dataclass(frozen=True)
class Targets:
    """Keys and cursors the attacks aim at: alice's own rows and rows outside her scope."""

    alice_item: int
    bob_item: int
    carol_item: int
    bob_ref: str
    acme: int
    gamma: int
    delta: int
    bob: int
    cursor: str
    draft_cursor: str


Arguments = dict[str, Any] | list[Any] | str | Callable[[Targets], dict[str, Any]]


@dataclass(frozen=True)
class Unknown:
    """Rejected: the names are not arguments of the tool; the message lists every allowed one."""

    names: tuple[str, ...]


@dataclass(frozen=True)
class Invalid:
    """Rejected by validation; the message starts with this text."""

    prefix: str


@dataclass(frozen=True)
class Refused:
    """Refused in-band by the engine with exactly this text (a callable of the targets when it names one)."""

    text: str | Callable[[Targets], str]


@dataclass(frozen=True)
class Rows:
    """Neutralised: a successful result whose rows (if ``nonempty``, at least one) all satisfy ``check``."""

    check: Callable[[dict[str, Any]], bool] = lambda row: True
    nonempty: bool = False


NONE = Rows(lambda row: False)


def unknown(*names: str) -> Unknown:
    return Unknown(names)


def not_found(key: str) -> Refused:
    return Refused(lambda t: f"No item with id={getattr(t, key)}.")


NEW = {"name": "Evil", "price": "1.00", "created_at": "2025-01-01T00:00:00Z"}

ATTACKS: list[tuple[str, str, Arguments, Any]] = [
    # Relations into auth.User, secret fields and fields outside the allow-list
    (
        "password through two relations",
        "items",
        {"account__manager__password__startswith": "md5"},
        unknown("account__manager__password__startswith"),
    ),
    ("password of a manager", "items", {"manager__password": "x"}, unknown("manager__password")),
    ("undeclared relation", "items", lambda t: {"account__manager": t.bob}, unknown("account__manager")),
    (
        "undeclared relation field",
        "items",
        {"account__manager__username": "bob"},
        unknown("account__manager__username"),
    ),
    ("secret field through a relation", "items", {"account__api_key": "SECRET-KEY-0"}, unknown("account__api_key")),
    ("secret field prefix", "items", {"account__api_key__startswith": "S"}, unknown("account__api_key__startswith")),
    ("secret field of the model", "accounts", {"api_key": "x"}, unknown("api_key")),
    (
        "password from accounts",
        "accounts",
        {"manager__password__startswith": "md5$"},
        unknown("manager__password__startswith"),
    ),
    ("field outside the filters", "items", {"notes__icontains": "HIDDEN"}, unknown("notes__icontains")),
    ("json key path", "items", {"payload__note": "x"}, unknown("payload__note")),
    ("pk alias", "items", {"pk": 1}, unknown("pk")),
    # Lookups that are never offered
    ("regex", "items", {"name__regex": ".*"}, unknown("name__regex")),
    ("iregex", "items", {"name__iregex": "^w"}, unknown("name__iregex")),
    ("extra", "items", {"extra": {"where": ["1=1"]}}, unknown("extra")),
    ("raw", "items", {"raw": "SELECT * FROM auth_user"}, unknown("raw")),
    ("full-text search lookup", "items", {"name__search": "x"}, unknown("name__search")),
    ("two unknown names at once", "items", {"where": "1=1", "select": "*"}, unknown("select", "where")),
    # Ordering and search on hidden fields
    ("order by a secret", "items", {"order_by": "-api_key"}, Invalid("order_by: '-api_key' is not one of ['name'")),
    ("order by password", "items", {"order_by": "password"}, Invalid("order_by: 'password' is not one of")),
    (
        "order by a password through relations",
        "items",
        {"order_by": "account__manager__password"},
        Invalid("order_by:"),
    ),
    ("random order", "items", {"order_by": "?"}, Invalid("order_by: '?' is not one of")),
    ("order by with SQL", "items", {"order_by": "name; DROP TABLE testapp_item"}, Invalid("order_by:")),
    (
        "order by a list",
        "items",
        {"order_by": ["name", "-api_key"]},
        Invalid("order_by: ['name', '-api_key'] is not of type 'string'"),
    ),
    (
        "accounts ordered by their secret",
        "accounts",
        {"order_by": "api_key"},
        Invalid("order_by: 'api_key' is not one of"),
    ),
    ("search for a secret", "items", {"search": "SECRET-KEY"}, NONE),
    ("search for a hidden note", "items", {"search": "HIDDEN-NOTE"}, NONE),
    ("search accounts for a secret", "accounts", {"search": "SECRET"}, NONE),
    # Row caps
    ("a billion rows", "items", {"limit": 10**9}, Invalid("limit: 1000000000 is greater than the maximum of 25")),
    ("negative limit", "items", {"limit": -1}, Invalid("limit: -1 is less than the minimum of 1")),
    ("zero limit", "items", {"limit": 0}, Invalid("limit: 0 is less than the minimum of 1")),
    ("fractional limit", "items", {"limit": 2.5}, Invalid("limit: 2.5 is not of type 'integer'")),
    ("limit as text", "items", {"limit": "10"}, Invalid("limit: '10' is not of type 'integer'")),
    ("limit as a boolean", "items", {"limit": True}, Invalid("limit: True is not of type 'integer'")),
    ("a million groups", "item_stats", {"limit": 10**6}, Invalid("limit: 1000000 is greater than the maximum of 100")),
    # Cursors
    ("garbage cursor", "items", {"cursor": "garbage"}, Refused(INVALID_CURSOR)),
    (
        "tampered cursor",
        "items",
        lambda t: {"cursor": t.cursor[:-2] + ("AA" if t.cursor[-2:] != "AA" else "BB")},
        Refused(INVALID_CURSOR),
    ),
    ("cursor with a rewritten offset", "items", lambda t: {"cursor": _rewritten(t.cursor, 0)}, Refused(INVALID_CURSOR)),
    (
        "cursor of another tool",
        "items",
        lambda t: {"cursor": _signed({"o": 2, "f": fingerprint({})}, "tenant_items")},
        Refused(INVALID_CURSOR),
    ),
    (
        "signed negative offset",
        "items",
        lambda t: {"cursor": _signed({"o": -5, "f": fingerprint({})}, "items")},
        Refused(OTHER_QUERY),
    ),
    (
        "signed offset of the wrong type",
        "items",
        lambda t: {"cursor": _signed({"o": "5", "f": fingerprint({})}, "items")},
        Refused(OTHER_QUERY),
    ),
    ("signed cursor that is not an object", "items", lambda t: {"cursor": _signed([5], "items")}, Refused(OTHER_QUERY)),
    (
        "signed offset past the end",
        "items",
        lambda t: {"cursor": _signed({"o": 10**12, "f": fingerprint({})}, "items")},
        NONE,
    ),
    (
        "cursor from other filters",
        "items",
        lambda t: {"cursor": t.draft_cursor, "status": "active"},
        Refused(OTHER_QUERY),
    ),
    ("cursor without its filters", "items", lambda t: {"cursor": t.draft_cursor}, Refused(OTHER_QUERY)),
    ("numeric cursor", "items", {"cursor": 5}, Invalid("cursor: 5 is not of type 'string'")),
    ("oversized cursor", "items", {"cursor": "x" * 501}, Invalid("cursor: 'xxxx")),
    # Type confusion
    ("list for a string", "items", {"name": ["Widget 00"]}, Invalid("name: ['Widget 00'] is not of type 'string'")),
    (
        "object for a number",
        "items",
        {"price__gte": {"$gt": 0}},
        Invalid("price__gte: {'$gt': 0} is not of type 'number', 'string'"),
    ),
    # A decimal is a number or a string of digits: text of the right type is told what it lacks.
    ("text for a decimal", "items", {"price__gte": "cheap"}, Invalid("price__gte: 'cheap' does not match ")),
    ("boolean for an integer", "items", {"quantity": True}, Invalid("quantity: True is not of type 'integer'")),
    ("NaN as text", "items", {"price__gte": "NaN"}, Invalid("price__gte: 'NaN' does not match")),
    ("Infinity as text", "items", {"price__gte": "Infinity"}, Invalid("price__gte: 'Infinity' does not match")),
    ("exponent notation", "items", {"price__gte": "1e5"}, Invalid("price__gte: '1e5' does not match")),
    ("boolean as text", "items", {"active": "true"}, Invalid("active: 'true' is not of type 'boolean'")),
    ("boolean as a number", "items", {"active": 1}, Invalid("active: 1 is not of type 'boolean'")),
    (
        "isnull as text",
        "items",
        {"released_on__isnull": "yes"},
        Invalid("released_on__isnull: 'yes' is not of type 'boolean'"),
    ),
    ("list as comma text", "items", {"id__in": "1,2"}, Invalid("id__in: '1,2' is not of type 'array'")),
    (
        "epoch for a datetime",
        "items",
        {"created_at__gte": 1700000000},
        Invalid("created_at__gte: 1700000000 is not of type 'string'"),
    ),
    ("words for a datetime", "items", {"created_at__gte": "yesterday"}, Invalid("created_at: ")),
    ("not a uuid", "items", {"ref": "not-a-uuid"}, Invalid("ref: ")),
    ("impossible date", "items", {"released_on": "2024-02-30"}, Invalid("released_on: ")),
    ("SQL for a key", "item", {"id": "1 OR 1=1"}, Invalid("id: '1 OR 1=1' is not of type 'integer'")),
    ("null key", "item", {"id": None}, Invalid("id: None is not of type 'integer'")),
    ("half a range", "items", {"price__range": ["1"]}, Invalid("price__range: ['1'] is too short")),
    (
        "status outside the choices",
        "items",
        {"status": "deleted"},
        Invalid("status: 'deleted' is not one of ['draft', 'active', 'retired']"),
    ),
    ("arguments as a list", "items", [], Invalid('"arguments" must be an object')),
    ("arguments as text", "items", "name=x", Invalid('"arguments" must be an object')),
    # Sizes and ranges
    ("in list one over the cap", "items", {"name__in": ["x"] * (MAX_IN + 1)}, Invalid("name__in: ['x', ")),
    ("keys one over the cap", "items", {"id__in": list(range(MAX_IN + 1))}, Invalid("id__in: [0, 1, ")),
    ("empty in list", "items", {"name__in": []}, Invalid("name__in: [] should be non-empty")),
    ("integer beyond 64 bits", "items", {"quantity__in": [2**70]}, Invalid(f"quantity: {2**70} is out of range.")),
    ("key beyond 64 bits", "items", {"id__in": [2**64]}, Invalid(f"id: {2**64} is out of range.")),
    ("get a key beyond 64 bits", "item", {"id": 2**63}, Invalid(f"id: {2**63} is out of range.")),
    ("year past the calendar", "items", {"created_at__year": 10**30}, Invalid("created_at__year: ")),
    ("year zero", "items", {"created_at__year": 0}, Invalid("created_at__year: 0 is less than the minimum of 1")),
    ("search too long", "items", {"search": "x" * 201}, Invalid("search: 'xxxx")),
    (
        "a moment after year 9999 in UTC",
        "items",
        {"created_at__gte": "9999-12-31T23:59:59-05:00"},
        Invalid("created_at: 9999-12-31T23:59:59-05:00 is out of range."),
    ),
    (
        "a moment before year 1 in UTC",
        "items",
        {"created_at__range": ["0001-01-01T00:00:00+05:00", "2025-01-01T00:00:00Z"]},
        Invalid("created_at: 0001-01-01T00:00:00+05:00 is out of range."),
    ),
    (
        "writing a moment after year 9999 in UTC",
        "item_create",
        lambda t: {**NEW, "account": t.acme, "created_at": "9999-12-31T23:00:00-14:00"},
        Invalid("created_at: 9999-12-31T23:00:00-14:00 is out of range."),
    ),
    # Injection strings
    ("SQL in an exact match", "items", {"name": "' OR 1=1 --"}, NONE),
    (
        "percent matches only a percent",
        "items",
        {"name__contains": "%"},
        Rows(lambda row: "%" in row["name"], nonempty=True),
    ),
    (
        "underscore matches only an underscore",
        "items",
        {"name__contains": "_"},
        Rows(lambda row: "_" in row["name"], nonempty=True),
    ),
    ("percent as a prefix", "items", {"name__startswith": "%"}, NONE),
    ("SQL in search", "items", {"search": "'; DROP TABLE testapp_item; --"}, NONE),
    ("double percent", "items", {"search": "%%"}, NONE),
    ("backslash", "items", {"name": "\\"}, NONE),
    ("union in a filter", "accounts", {"name__icontains": "' UNION SELECT password FROM auth_user --"}, NONE),
    ("NUL in a filter", "items", {"name__icontains": "a\x00b"}, Invalid("name: text may not contain NUL characters.")),
    ("NUL in search", "items", {"search": "\x00"}, Invalid("search: text may not contain NUL characters.")),
    (
        "NUL in a write",
        "item_update",
        lambda t: {"id": t.alice_item, "name": "a\x00b"},
        Invalid("name: text may not contain NUL characters."),
    ),
    # Look-alike names
    ("Cyrillic a", "items", {"n\u0430me": "x"}, unknown("n\u0430me")),
    ("zero-width joiner", "items", {"na\u200dme": "x"}, unknown("na\u200dme")),
    ("fullwidth letters", "items", {"\uff4e\uff41\uff4d\uff45": "x"}, unknown("\uff4e\uff41\uff4d\uff45")),
    ("trailing NUL in a name", "items", {"name\x00": "x"}, unknown("name\x00")),
    ("upper case", "items", {"NAME": "x"}, unknown("NAME")),
    ("combining accent", "items", {"name\u0301": "x"}, unknown("name\u0301")),
    ("long s", "items", {"\u017ftatus": "active"}, unknown("\u017ftatus")),
    # Separator abuse
    ("four underscores", "items", {"name____exact": "x"}, unknown("name____exact")),
    ("trailing separator", "items", {"name__": "x"}, unknown("name__")),
    ("leading separator", "items", {"__name": "x"}, unknown("__name")),
    ("lookup twice", "items", {"name__exact__exact": "x"}, unknown("name__exact__exact")),
    ("two lookups", "items", {"price__gte__lt": 1}, unknown("price__gte__lt")),
    (
        "lookup after an allowed lookup",
        "items",
        {"account__name__icontains__regex": "x"},
        unknown("account__name__icontains__regex"),
    ),
    ("empty path part", "items", {"account____name": "x"}, unknown("account____name")),
    ("explicit exact", "items", {"status__exact": "active"}, unknown("status__exact")),
    # Spaces
    ("trailing space", "items", {"name ": "x"}, unknown("name ")),
    ("leading space", "items", {" name": "x"}, unknown(" name")),
    ("inner space", "items", {"na me": "x"}, unknown("na me")),
    ("empty name", "items", {"": "x"}, unknown("")),
    # Writes beyond the writable fields
    ("pk__in on a write", "item_update", lambda t: {"id": t.alice_item, "pk__in": [t.bob_item]}, unknown("pk__in")),
    (
        "a unique field",
        "item_update",
        lambda t: {"id": t.alice_item, "ref": "00000000-0000-0000-0000-000000000063"},
        unknown("ref"),
    ),
    (
        "a field that is not writable",
        "item_update",
        lambda t: {"id": t.alice_item, "created_at": "2020-01-01T00:00:00Z"},
        unknown("created_at"),
    ),
    (
        "a relation path",
        "item_update",
        lambda t: {"id": t.alice_item, "account__manager": t.bob},
        unknown("account__manager"),
    ),
    ("a column name", "item_update", lambda t: {"id": t.alice_item, "account_id": t.gamma}, unknown("account_id")),
    ("a json field", "item_update", lambda t: {"id": t.alice_item, "payload": {}}, unknown("payload")),
    ("a chosen key", "item_create", lambda t: {**NEW, "account": t.acme, "id": 99999}, unknown("id")),
    (
        "the scope field",
        "account_create",
        lambda t: {"name": "Evil", "tenant": "south", "manager": t.bob},
        unknown("manager"),
    ),
    ("a secret field", "account_create", {"name": "Evil", "tenant": "north", "api_key": "mine"}, unknown("api_key")),
    ("a filter on delete", "item_delete", lambda t: {"id": t.alice_item, "id__in": [t.bob_item]}, unknown("id__in")),
    (
        "a key out of range in a write",
        "item_update",
        lambda t: {"id": t.alice_item, "account": 10**30},
        Invalid("account: "),
    ),
    # Escaping the scope
    ("get bob's row", "item", lambda t: {"id": t.bob_item}, not_found("bob_item")),
    ("get carol's row", "item", lambda t: {"id": t.carol_item}, not_found("carol_item")),
    ("update bob's row", "item_update", lambda t: {"id": t.bob_item, "name": "mine"}, not_found("bob_item")),
    ("delete carol's row", "item_delete", lambda t: {"id": t.carol_item}, not_found("carol_item")),
    (
        "move a row to bob's account",
        "item_update",
        lambda t: {"id": t.alice_item, "account": t.gamma},
        Refused(NOT_AN_ACCOUNT),
    ),
    (
        "move a row to carol's account in alice's tenant",
        "item_update",
        lambda t: {"id": t.alice_item, "account": t.delta},
        Refused(NOT_AN_ACCOUNT),
    ),
    (
        "move a row to no account at all",
        "item_update",
        lambda t: {"id": t.alice_item, "account": 10**9},
        Refused(NOT_AN_ACCOUNT),
    ),
    ("create in another tenant", "item_create", lambda t: {**NEW, "account": t.gamma}, Refused(NOT_AN_ACCOUNT)),
    ("create in no account at all", "item_create", lambda t: {**NEW, "account": 10**9}, Refused(NOT_AN_ACCOUNT)),
    ("filter on bob's account", "items", lambda t: {"account": t.gamma}, NONE),
    ("filter on other accounts", "items", lambda t: {"account__in": [t.gamma, t.delta]}, NONE),
    ("filter on the other tenant", "items", {"account__tenant": "south"}, NONE),
    ("tenant scope with bob's account", "tenant_items", lambda t: {"account": t.gamma}, NONE),
    (
        "bob's row by reference",
        "item_by_ref",
        lambda t: {"ref": t.bob_ref},
        Refused(lambda t: f"No item with ref=UUID('{t.bob_ref}')."),
    ),
    ("count bob's account by search", "item_count", {"search": "Gamma"}, NONE),
    (
        "groups are alice's",
        "item_stats",
        {"group_by": ["account__name"], "metrics": ["count"]},
        Rows(lambda row: row["account__name"] in ("Acme", "Beta_Corp"), nonempty=True),
    ),
    # Aggregates outside the allow-list
    (
        "max of a secret",
        "item_stats",
        {"metrics": ["max__account__api_key"]},
        Invalid("metrics/0: 'max__account__api_key' is not one of ['count'"),
    ),
    (
        "group by a password",
        "item_stats",
        {"group_by": ["account__manager__password"]},
        Invalid("group_by/0: 'account__manager__password' is not one of"),
    ),
    (
        "group by a secret",
        "item_stats",
        {"group_by": ["account__api_key"]},
        Invalid("group_by/0: 'account__api_key' is not one of"),
    ),
    ("sum of user keys", "item_stats", {"metrics": ["sum__account__manager__id"]}, Invalid("metrics/0: ")),
    (
        "an unknown function",
        "item_stats",
        {"metrics": ["stddev__price"]},
        Invalid("metrics/0: 'stddev__price' is not one of"),
    ),
    (
        "order by an unrequested metric",
        "item_stats",
        {"group_by": ["status"], "metrics": ["count"], "order_by": "-sum__price"},
        Invalid("order_by: '-sum__price' is not one of this call's groups or metrics: status, -status, count, -count."),
    ),
    (
        "order by an unrequested group",
        "item_stats",
        {"group_by": ["status"], "order_by": "account__name"},
        Invalid("order_by: 'account__name' is not one of this call's"),
    ),
]


def _signed(data: Any, tool: str) -> str:
    """A cursor signed with the server's key: what only a leaked key would let an attacker make."""
    return signing.dumps(data, salt=f"{CURSOR_SALT}:{tool}")


def _rewritten(cursor: str, offset: int) -> str:
    """``cursor`` with another offset in its payload, keeping its timestamp and signature."""
    payload, signed = cursor.split(":", 1)
    data = json.loads(signing.b64_decode(payload.encode()))
    forged = signing.b64_encode(json.dumps({**data, "o": offset}, separators=(",", ":")).encode()).decode()
    return f"{forged}:{signed}"


def targets() -> Targets:
    alice_items = Item.objects.filter(account__manager__username="alice").order_by("pk")
    bob_item = Item.objects.filter(account__manager__username="bob").order_by("pk").first()
    assert bob_item is not None
    carol_item = Item.objects.filter(account__manager__username="carol").order_by("pk").first()
    assert carol_item is not None
    accounts = {account.name: account.pk for account in Account.objects.all()}
    draft = {"status": "draft"}
    return Targets(
        alice_item=alice_items[0].pk,
        bob_item=bob_item.pk,
        carol_item=carol_item.pk,
        bob_ref=str(bob_item.ref),
        acme=accounts["Acme"],
        gamma=accounts["Gamma 100%"],
        delta=accounts["Delta"],
        bob=get_user_model()._default_manager.get(username="bob").pk,
        cursor=_signed({"o": 2, "f": fingerprint({})}, "items"),
        draft_cursor=_signed({"o": 2, "f": fingerprint(draft)}, "items"),
    )


def forbidden_text(tool: str) -> list[str]:
    """Text that must not appear in any answer to alice from ``tool``: secrets and rows outside her scope."""
    outside = ("bob",) if tool in TENANT_TOOLS else ("bob", "carol")
    names = Item.objects.filter(account__manager__username__in=outside).values_list("name", flat=True)
    hashes = get_user_model()._default_manager.values_list("password", flat=True)
    accounts = Account.objects.filter(manager__username__in=outside).values_list("name", flat=True)
    keys = Account.objects.values_list("api_key", flat=True)
    return [*MARKERS, *names, *hashes, *accounts, *keys]


def allowed_arguments(tool: str) -> list[str]:
    return sorted(Tool.objects.get(name=tool).input_schema["properties"])


def output_keys(tool: str) -> set[str]:
    return set(Tool.objects.get(name=tool).output_schema["properties"]["results"]["items"]["properties"])


@pytest.fixture
async def alice() -> Wire:
    people = await orm(seed_users)
    return await connected(people["alice"])


@hostile
@pytest.mark.parametrize(("tool", "arguments", "expected"), [a[1:] for a in ATTACKS], ids=[a[0] for a in ATTACKS])
async def test_a_hostile_call_is_rejected_or_neutralised_and_reveals_nothing(
    alice: Wire, tool: str, arguments: Arguments, expected: Any
) -> None:
    aimed = await orm(targets)
    before = await orm(snapshot)
    sent = arguments(aimed) if callable(arguments) else arguments

    reply = await alice.call(tool, sent)

    assert "result" in reply, reply
    check_expected(reply, expected, aimed, await orm(allowed_arguments, tool))
    answer = json.dumps(reply, ensure_ascii=False)
    leaked = [text for text in await orm(forbidden_text, tool) if text and text in answer]
    assert leaked == []
    assert await orm(snapshot) == before


def check_expected(reply: dict[str, Any], expected: Any, aimed: Targets, allowed: list[str]) -> None:
    if isinstance(expected, Unknown):
        names = ", ".join(map(repr, sorted(expected.names)))
        assert failed(reply) == f"Invalid arguments: Unknown argument {names}. Allowed: {', '.join(allowed)}."
    elif isinstance(expected, Invalid):
        assert failed(reply).startswith(f"Invalid arguments: {expected.prefix}")
    elif isinstance(expected, Refused):
        text = expected.text(aimed) if callable(expected.text) else expected.text
        assert failed(reply) == text
    else:
        result = ok(reply)
        assert all(expected.check(row) for row in result["results"]), result
        assert bool(result["results"]) or not expected.nonempty
        if expected is NONE:
            assert result["results"] == []


def test_the_attack_table_covers_at_least_forty_distinct_calls() -> None:
    assert len(ATTACKS) >= 40
    assert len({name for name, *_ in ATTACKS}) == len(ATTACKS)


@hostile
@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
async def test_numbers_json_cannot_carry_are_a_parse_error_before_any_tool_runs(alice: Wire, number: str) -> None:
    before = await orm(snapshot)

    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "items", "arguments": {"price__gte": 0}},
    }
    await alice.send_text(json.dumps(call).replace('"price__gte": 0', f'"price__gte": {number}'))

    reply = await alice.wait_for(lambda message: isinstance(message, dict) and "error" in message)
    assert reply == {"jsonrpc": "2.0", "id": None, "error": {"code": PARSE_ERROR, "message": "Parse error"}}
    assert await orm(snapshot) == before


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_the_engine_refuses_numbers_that_are_not_finite_on_its_own(value: float) -> None:
    config = next(config for config in query_data.TOOLS if config.name == "items")
    spec = build(ModelQuery(model=config.model, operation=config.operation, **config.options), "items")

    with pytest.raises(InvalidArguments) as raised:
        plan(spec, {"price__gte": value})

    assert str(raised.value) == f"price: \u201c{value}\u201d value must be a decimal number."


@hostile
async def test_rows_a_hostile_call_returns_hold_only_the_tools_output_fields(alice: Wire) -> None:
    for tool, arguments in [("items", {"name__contains": "%"}), ("tenant_items", {"status": "draft"})]:
        result = ok(await alice.call(tool, arguments))
        keys = await orm(output_keys, tool)
        assert result["results"]
        assert all(set(row) == keys for row in result["results"])


@hostile
async def test_before_2025_11_25_invalid_arguments_are_a_protocol_error_that_lists_the_allowed_names() -> None:
    people = await orm(seed_users)
    wire = await connected(people["alice"], "2025-06-18")

    reply = await wire.call("item_count", {"account__manager__password": "x"})

    reason = "Unknown argument 'account__manager__password'. Allowed: active, price__gte, search, status."
    assert reply["error"] == {"code": INVALID_PARAMS, "message": "Invalid arguments", "data": {"reason": reason}}


@hostile
async def test_an_unknown_argument_is_refused_even_when_the_stored_schema_would_accept_it(alice: Wire) -> None:
    def open_schema() -> None:
        Tool.objects.filter(name="items").update(input_schema={"type": "object"})

    await orm(open_schema)
    from mcp_tools.tools.catalog import catalog

    catalog.invalidate()

    text = failed(await alice.call("items", {"account__manager__password__startswith": "md5"}))

    assert text.startswith("Invalid arguments: Unknown argument 'account__manager__password__startswith'. Allowed: ")


@hostile
@pytest.mark.parametrize("operation", ["create", "update"])
async def test_a_write_tool_saved_without_output_fields_shows_no_column(operation: str) -> None:
    def make_tool() -> Any:
        people = seed_users()
        tool = Tool.objects.create(name="blind_write", kind=Tool.Kind.MODEL_QUERY, everyone=True)
        # Saved without clean(), as a migration or a script might: no output fields at all.
        ModelQuery.objects.create(
            tool=tool,
            model="testapp.Account",
            operation=operation,
            writable_fields=["name", "tenant"],
            scope_field="manager",
        )
        return people["alice"], Account.objects.filter(manager=people["alice"]).first()

    alice, acme = await orm(make_tool)
    wire = await connected(await orm(query_data.grant, alice, "testapp.add_account", "testapp.change_account"))
    arguments = {"name": "Renamed", "tenant": "north"} if operation == "create" else {"id": acme.pk, "name": "Renamed"}

    reply = await wire.call("blind_write", arguments)

    answer = json.dumps(reply)
    assert query_data.SECRET_PREFIX not in answer
    assert "api_key" not in answer


# Configuration-level attacks: ModelQuery.clean() refuses -------------------------------------------

CONFIGURATIONS: list[tuple[str, str, dict[str, Any], str]] = [
    (
        "secret field",
        "testapp.Account",
        {"output_fields": ["name", "api_key"]},
        "testapp.Account has no field 'api_key' that may be exposed.",
    ),
    (
        "secret through a relation",
        "testapp.Item",
        {"output_fields": ["account__api_key"], "relations": ["account"]},
        "testapp.Account has no field 'api_key' that may be exposed.",
    ),
    (
        "password of a user",
        "testapp.Account",
        {"output_fields": ["manager__password"], "relations": ["manager"]},
        "auth.User has no field 'password' that may be exposed.",
    ),
    (
        "password two relations away",
        "testapp.Item",
        {
            "output_fields": ["id"],
            "relations": ["account", "account__manager"],
            "filters": ["account__manager__password__startswith"],
        },
        "auth.User has no field 'password' that may be exposed.",
    ),
    (
        "order by a secret",
        "testapp.Account",
        {"output_fields": ["id"], "ordering_fields": ["api_key"]},
        "testapp.Account has no field 'api_key' that may be exposed.",
    ),
    (
        "search a password",
        "auth.User",
        {"output_fields": ["id"], "search_fields": ["password"]},
        "auth.User has no field 'password' that may be exposed.",
    ),
    (
        "group by a secret",
        "testapp.Account",
        {"aggregate_functions": ["count"], "group_by_fields": ["api_key"]},
        "testapp.Account has no field 'api_key' that may be exposed.",
    ),
    (
        "write a secret",
        "testapp.Account",
        {"operation": "update", "writable_fields": ["api_key"]},
        "testapp.Account has no field 'api_key' that may be exposed.",
    ),
    (
        "access tokens",
        "mcp_tools.AccessToken",
        {"output_fields": ["id"]},
        "The model 'mcp_tools.AccessToken' may not be exposed.",
    ),
    ("tools", "mcp_tools.Tool", {"output_fields": ["id"]}, "The model 'mcp_tools.Tool' may not be exposed."),
    (
        "sessions",
        "sessions.Session",
        {"output_fields": ["session_key"]},
        "The model 'sessions.Session' may not be exposed.",
    ),
    ("a model that does not exist", "auth.Nope", {"output_fields": ["id"]}, "No installed model 'auth.Nope'."),
    ("not a model label", "auth", {"output_fields": ["id"]}, "No installed model 'auth'."),
    (
        "undeclared relation in output",
        "testapp.Item",
        {"output_fields": ["account__name"]},
        "The relation 'account' is not declared.",
    ),
    (
        "undeclared relation in a filter",
        "testapp.Item",
        {"output_fields": ["id"], "filters": ["account__tenant__exact"]},
        "The relation 'account' is not declared.",
    ),
    (
        "undeclared second hop",
        "testapp.Item",
        {"output_fields": ["account__manager__username"], "relations": ["account"]},
        "The relation 'account__manager' is not declared.",
    ),
    (
        "relation into an excluded model",
        "auth.User",
        {"output_fields": ["id"], "relations": ["mcp_tokens"]},
        "auth.User has no field 'mcp_tokens' that may be exposed.",
    ),
    (
        "a reverse relation",
        "testapp.Account",
        {"output_fields": ["items__name"], "relations": ["items"]},
        "testapp.Account has no field 'items' that may be exposed.",
    ),
    (
        "a path through a plain field",
        "testapp.Item",
        {"output_fields": ["name__upper"], "relations": ["name"]},
        "'name' is not a relation.",
    ),
    (
        "regex lookup",
        "testapp.Item",
        {"output_fields": ["id"], "filters": ["name__regex"]},
        "Filter 'name__regex': name allows the lookups "
        "exact, iexact, contains, icontains, startswith, istartswith, in, isnull.",
    ),
    (
        "a lookup on json",
        "testapp.Item",
        {"output_fields": ["id"], "filters": ["payload__contains"]},
        "Filter 'payload__contains': payload allows the lookups none.",
    ),
    (
        "a filter without a lookup",
        "testapp.Item",
        {"output_fields": ["id"], "filters": ["name"]},
        "Filter 'name' must be written field__lookup, e.g. status__exact.",
    ),
    (
        "order by json",
        "testapp.Item",
        {"output_fields": ["id"], "ordering_fields": ["payload"]},
        "'payload' cannot be ordered by.",
    ),
    (
        "search a number",
        "testapp.Item",
        {"output_fields": ["id"], "search_fields": ["price"]},
        "Search field 'price' must be a text field.",
    ),
    (
        "aggregate text",
        "testapp.Item",
        {"operation": "aggregate", "aggregate_fields": ["name"], "aggregate_functions": ["max"]},
        "Aggregate field 'name' must be a number, date or duration.",
    ),
    (
        "aggregate a key",
        "testapp.Item",
        {"operation": "aggregate", "aggregate_fields": ["account"], "aggregate_functions": ["max"]},
        "Aggregate field 'account' must be a number, date or duration.",
    ),
    (
        "an aggregate function from SQL",
        "testapp.Item",
        {"operation": "aggregate", "aggregate_fields": ["price"], "aggregate_functions": ["stddev"]},
        "Aggregate function 'stddev' is not one of count, sum, avg, min, max.",
    ),
    ("write the key", "testapp.Item", {"operation": "update", "writable_fields": ["id"]}, "'id' is not writable."),
    (
        "write through a relation",
        "testapp.Item",
        {"operation": "update", "writable_fields": ["account__name"], "relations": ["account"]},
        "The relation 'account' is not declared.",
    ),
    (
        "look up by a field that is not unique",
        "testapp.Item",
        {"operation": "get", "output_fields": ["id"], "lookup_field": "name"},
        "Lookup field 'name' must be the primary key or unique.",
    ),
    (
        "scope by a text field",
        "testapp.Item",
        {"output_fields": ["id"], "scope_field": "name"},
        "Scope field 'name' must be a relation to the user model.",
    ),
    (
        "scope by a relation to another model",
        "testapp.Item",
        {"output_fields": ["id"], "scope_field": "account"},
        "Scope field 'account' must point at the user model.",
    ),
    (
        "scope through a secret",
        "testapp.Item",
        {"output_fields": ["id"], "scope_field": "account__api_key"},
        "testapp.Account has no field 'api_key' that may be exposed.",
    ),
    (
        "an unregistered scope",
        "testapp.Item",
        {"output_fields": ["id"], "scope": "everything"},
        "No scope is registered as 'everything'.",
    ),
    (
        "create scoped through a relation",
        "testapp.Item",
        {
            "operation": "create",
            "output_fields": ["id"],
            "writable_fields": ["account", "name", "price", "created_at"],
            "scope_field": "account__manager",
        },
        "A create tool can only be scoped by a direct user field, which it sets to the caller.",
    ),
    ("a list without output", "testapp.Item", {}, "Choose at least one output field."),
    (
        "an aggregate without metrics",
        "testapp.Item",
        {"operation": "aggregate"},
        "Choose aggregate functions (and fields for sum, avg, min and max).",
    ),
    (
        "sums of dates only",
        "testapp.Item",
        {"operation": "aggregate", "aggregate_fields": ["released_on"], "aggregate_functions": ["sum"]},
        "Choose aggregate functions (and fields for sum, avg, min and max).",
    ),
]


@pytest.mark.parametrize(
    ("model", "options", "message"), [c[1:] for c in CONFIGURATIONS], ids=[c[0] for c in CONFIGURATIONS]
)
def test_a_configuration_reaching_beyond_the_safety_model_is_refused_by_clean(
    model: str, options: dict[str, Any], message: str
) -> None:
    config = ModelQuery(tool=Tool(name="attack"), model=model, **options)

    with pytest.raises(ValidationError) as raised:
        config.clean()

    assert raised.value.message_dict == {"__all__": [message]}


def test_models_excluded_in_settings_and_extra_secret_fields_are_refused(settings: Any) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "EXCLUDED_MODELS": ["auth.User"], "SECRET_FIELDS": ["tenant"]}

    checks = [
        ModelQuery(tool=Tool(name="a"), model="auth.User", output_fields=["id"]),
        ModelQuery(
            tool=Tool(name="b"), model="testapp.Account", output_fields=["manager__username"], relations=["manager"]
        ),
        ModelQuery(tool=Tool(name="c"), model="testapp.Account", output_fields=["tenant"]),
    ]
    messages = []
    for config in checks:
        with pytest.raises(ValidationError) as raised:
            config.clean()
        messages.append(raised.value.message_dict["__all__"])

    assert messages == [
        ["The model 'auth.User' may not be exposed."],
        ["The relation 'manager' leads to a model that may not be exposed."],
        ["testapp.Account has no field 'tenant' that may be exposed."],
    ]
