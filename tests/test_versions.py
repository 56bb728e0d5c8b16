"""Protocol revisions: lookup by wire value, ordering, negotiation and era detection, alone and as served."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcp_tools.exceptions import INVALID_PARAMS, METHOD_NOT_FOUND, UNSUPPORTED_PROTOCOL_VERSION
from mcp_tools.protocol import versions as v
from tests.messages import LEGACY, MISSING_META, MODERN, SERVER_INFO, error, modern_meta, text_result
from tests.wire import Wire, connected

db = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("wire", [*LEGACY, "2026-07-28"])
def test_lookup_finds_the_revision_a_wire_value_names(wire: Any) -> None:
    revision = v.lookup(wire)
    assert revision is not None
    assert revision.wire == wire and type(revision.wire) is type(wire)


@pytest.mark.parametrize(
    "value",
    [True, False, 1.0, "1", 0, 2, -1, None, "", "2025-11-26", "2025-11-25 ", ["2025-11-25"], {}, b"1"],
)
def test_lookup_knows_nothing_else_and_true_is_not_1(value: Any) -> None:
    assert v.lookup(value) is None


def test_revisions_are_ordered_by_position_from_the_integer_draft_to_the_modern_era() -> None:
    ordered = [*v.LEGACY, *v.MODERN]
    assert [r.wire for r in ordered] == [*LEGACY, "2026-07-28"]
    assert ordered == sorted(ordered, reverse=True)[::-1]
    assert v.DRAFT_INT < v.DRAFT < v.V2024_11_05 < v.V2025_11_25 < v.V2026_07_28
    assert v.LATEST_LEGACY is v.V2025_11_25


def test_only_2026_07_28_is_modern() -> None:
    assert [r.is_modern for r in (*v.LEGACY, *v.MODERN)] == [False] * 6 + [True]


def test_a_revision_prints_as_its_wire_value() -> None:
    assert [str(r) for r in (v.DRAFT_INT, v.V2025_03_26)] == ["1", "2025-03-26"]


@pytest.mark.parametrize("wire", LEGACY)
def test_negotiation_echoes_every_supported_legacy_revision(wire: Any) -> None:
    assert v.negotiate_legacy(wire) == v.lookup(wire)


@pytest.mark.parametrize("requested", ["2026-07-28", "2030-01-01", "2024-01-01", "2025-11-26", "9999-99-99"])
def test_negotiation_answers_an_unknown_date_with_the_latest_legacy_revision(requested: str) -> None:
    assert v.negotiate_legacy(requested) is v.V2025_11_25


@pytest.mark.parametrize(
    "requested",
    [
        True,
        False,
        None,
        2,
        0,
        1.0,
        "1",
        "banana",
        "",
        "2025-11",
        "25-11-2025",
        "2025-1x-25",
        "2025/11/25",
        {},
        [],
    ],
)
def test_negotiation_refuses_garbage(requested: Any) -> None:
    assert v.negotiate_legacy(requested) is None


@given(st.one_of(st.text(), st.integers(), st.floats(), st.booleans(), st.none()))
def test_negotiation_never_raises_and_never_picks_the_modern_era(requested: Any) -> None:
    negotiated = v.negotiate_legacy(requested)
    assert negotiated is None or negotiated in v.LEGACY


@given(st.dates())
def test_negotiation_accepts_any_date_shaped_revision(day: Any) -> None:
    assert v.negotiate_legacy(day.isoformat()) in v.LEGACY


def test_supported_values_list_each_era_in_order() -> None:
    assert v.supported_wire_values() == LEGACY
    assert v.supported_modern_values() == ["2026-07-28"]


@pytest.mark.parametrize(
    ("params", "modern"),
    [
        ({"_meta": {v.PROTOCOL_VERSION_META: "2026-07-28"}}, True),
        ({"_meta": {v.PROTOCOL_VERSION_META: None, v.CLIENT_CAPABILITIES_META: {}}}, True),
        ({"_meta": {v.CLIENT_CAPABILITIES_META: {}}}, False),
        ({"_meta": {"progressToken": 1}}, False),
        ({"_meta": [v.PROTOCOL_VERSION_META]}, False),
        ({v.PROTOCOL_VERSION_META: "2026-07-28"}, False),
        ({}, False),
        (None, False),
        ([], False),
    ],
)
def test_a_request_is_modern_when_its_meta_names_a_protocol_version(params: Any, modern: bool) -> None:
    assert v.is_modern_request(params) is modern


# Negotiation in initialize ---------------------------------------------------------------------


@db
@pytest.mark.parametrize("version", LEGACY)
async def test_initialize_echoes_every_supported_legacy_revision(user: Any, version: Any) -> None:
    wire = Wire(user)
    reply = await wire.initialize(version)
    assert reply == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": SERVER_INFO},
    }
    assert wire.session.revision == v.lookup(version)


@db
@pytest.mark.parametrize("version", ["2030-01-01", MODERN, "2024-01-01"])
async def test_initialize_answers_an_unknown_date_with_the_latest_legacy_revision(user: Any, version: str) -> None:
    reply = await Wire(user).initialize(version)
    assert reply["result"]["protocolVersion"] == "2025-11-25"


@db
@pytest.mark.parametrize("version", ["banana", None, True, False, {}, [], 2, 1.0, "1", "2025-11", ""])
async def test_initialize_refuses_a_garbage_version_naming_the_supported_ones(user: Any, version: Any) -> None:
    wire = Wire(user)
    reply = await wire.request("initialize", {"protocolVersion": version, "capabilities": {}})
    data = {"supported": LEGACY, "requested": version}
    assert reply == error(1, INVALID_PARAMS, "Unsupported protocol version", data)
    assert wire.session.revision is None


@db
async def test_initialize_without_a_version_is_refused_as_requesting_none(user: Any) -> None:
    reply = await Wire(user).request("initialize", {"capabilities": {}})
    data = {"supported": LEGACY, "requested": None}
    assert reply == error(1, INVALID_PARAMS, "Unsupported protocol version", data)


@db
async def test_a_refused_initialize_leaves_the_session_open_for_a_proper_one(user: Any) -> None:
    wire = Wire(user)
    await wire.request("initialize", {"protocolVersion": "banana"})
    reply = await wire.initialize("2025-06-18")
    assert reply["result"]["protocolVersion"] == "2025-06-18"


# Eras on the modern request path ----------------------------------------------------------------


@db
@pytest.mark.parametrize("version", ["2025-11-25", "2099-01-01", "banana", "1"])
async def test_a_modern_request_naming_an_unsupported_version_gets_32022(tools: None, user: Any, version: str) -> None:
    reply = await Wire(user).modern("tools/list", meta=modern_meta(version))
    data = {"supported": [MODERN], "requested": version}
    assert reply == error(1, UNSUPPORTED_PROTOCOL_VERSION, "Unsupported protocol version", data)


@db
@pytest.mark.parametrize(
    ("meta", "message"),
    [
        ({v.PROTOCOL_VERSION_META: MODERN}, f"_meta lacks {v.CLIENT_CAPABILITIES_META}"),
        (modern_meta(capabilities=[]), f"_meta {v.CLIENT_CAPABILITIES_META} must be an object"),
        (modern_meta(version=20260728), f"_meta {v.PROTOCOL_VERSION_META} must be a string"),
        (modern_meta(version=None), f"_meta {v.PROTOCOL_VERSION_META} must be a string"),
    ],
)
async def test_modern_meta_lacking_capabilities_or_a_string_version_is_invalid_params(
    tools: None, user: Any, meta: dict[str, Any], message: str
) -> None:
    reply = await Wire(user).modern("tools/list", meta=meta)
    data = {"missing": [v.CLIENT_CAPABILITIES_META]} if "lacks" in message else None
    assert reply == error(1, INVALID_PARAMS, message, data)


@db
@pytest.mark.parametrize("method", ["initialize", "ping", "logging/setLevel", "resources/list"])
async def test_methods_outside_the_modern_era_are_not_found(user: Any, method: str) -> None:
    reply = await Wire(user).modern(method, {"protocolVersion": "2025-11-25"})
    assert reply == error(1, METHOD_NOT_FOUND, f"Method not found: {method}")


@db
@pytest.mark.parametrize("method", ["subscriptions/listen", "server/discover"])
async def test_modern_only_methods_on_a_legacy_session_ask_for_the_modern_envelope(user: Any, method: str) -> None:
    wire = await connected(user)
    reply = await wire.request(method, {"notifications": {}})
    # Without the modern envelope a 2026-07-28-only method cannot be served: the client is told what is missing.
    missing = {"missing": [v.PROTOCOL_VERSION_META, v.CLIENT_CAPABILITIES_META]}
    assert reply == error(2, INVALID_PARAMS, MISSING_META, missing)


@db
async def test_modern_requests_work_beside_a_legacy_session(tools: None, user: Any) -> None:
    wire = await connected(user, "2024-11-05")
    modern = await wire.modern("tools/call", {"name": "add", "arguments": {"a": 1, "b": 1}})
    legacy = await wire.call("add", {"a": 1, "b": 1})
    assert modern["result"]["resultType"] == "complete"
    assert legacy["result"] == text_result("2")
    assert wire.session.revision == v.V2024_11_05
