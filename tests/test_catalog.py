"""The tool catalog: snapshots and their invalidation, cursors, and tools/list pagination."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.db import database_sync_to_async
from hypothesis import given
from hypothesis import strategies as st

from mcp_tools.access import permissions
from mcp_tools.exceptions import INVALID_PARAMS, InvalidParams
from mcp_tools.models import Tool, UserGrant
from mcp_tools.protocol import shapes
from mcp_tools.protocol import versions as v
from mcp_tools.protocol.jsonrpc import encode
from mcp_tools.server import listing
from mcp_tools.server.listing import decode_cursor, definition_json, encode_cursor, page
from mcp_tools.tools import catalog as catalog_module
from mcp_tools.tools.catalog import Catalog, catalog
from mcp_tools.tools.snapshot import Snapshot
from tests.messages import LEGACY, MODERN, error
from tests.wire import Wire, connected

PAGE_SIZE = 5
BAD_CURSOR = {"reason": "The cursor is not one this server issued."}


def load(source: Catalog) -> Snapshot:
    """The catalog's snapshot, loaded the way the server loads it.

    ``database_sync_to_async`` closes the calling thread's connection when it is inside a transaction, so the
    tests that load this way run outside one (``transaction=True``); on PostgreSQL a test transaction would
    lose its connection.
    """
    return async_to_sync(source.get)()


def cursor_of(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode()


# Cursors ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("offset", [0, 1, 5, 99, 100])
def test_a_cursor_decodes_to_the_offset_it_was_issued_for(offset: int) -> None:
    assert decode_cursor(encode_cursor(offset), 100) == offset


def test_no_cursor_means_the_first_page() -> None:
    assert decode_cursor(None, 0) == 0


@pytest.mark.parametrize(
    "cursor",
    [
        "garbage",
        "!!!",
        "",
        "é",
        cursor_of(b"hello"),
        cursor_of(b"mcp-tools:"),
        cursor_of(b"mcp-tools:-1"),
        cursor_of(b"mcp-tools:+1"),
        cursor_of(b"mcp-tools:1.5"),
        cursor_of(b"mcp-tools: 1"),
        cursor_of(b"mcp-tools:abc"),
        cursor_of(b"mcp-tools:101"),
        cursor_of(b"mcp-tools:" + b"1" * 10),
        cursor_of(b"other:5"),
        encode_cursor(5).rstrip("="),
        5,
        0,
        True,
        [],
        {"offset": 5},
    ],
)
def test_a_cursor_this_server_did_not_issue_is_invalid_params(cursor: Any) -> None:
    with pytest.raises(InvalidParams) as raised:
        decode_cursor(cursor, 100)
    assert (raised.value.code, raised.value.data) == (INVALID_PARAMS, BAD_CURSOR)


@given(st.one_of(st.text(), st.binary().map(lambda b: base64.urlsafe_b64encode(b).decode())), st.integers(0, 500))
def test_decoding_any_text_gives_an_offset_within_the_list_or_invalid_params(cursor: str, total: int) -> None:
    try:
        offset = decode_cursor(cursor, total)
    except InvalidParams:
        return
    assert 0 <= offset <= total


# Snapshots and invalidation ---------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_snapshot_is_served_until_the_catalog_is_invalidated(tools: None) -> None:
    local = Catalog()
    first = load(local)
    assert load(local) is first
    local.invalidate()
    second = load(local)
    assert second is not first
    assert second.generation > first.generation
    assert [e.name for e in second.entries] == [e.name for e in first.entries]


@pytest.mark.django_db(transaction=True)
def test_a_change_heard_again_under_the_same_stamp_is_ignored(tools: None) -> None:
    local = Catalog()
    local.invalidate("change-1")
    snapshot = load(local)
    local.invalidate("change-1")
    assert load(local) is snapshot
    local.invalidate("change-2")
    assert load(local) is not snapshot


@pytest.mark.django_db(transaction=True)
def test_invalidating_without_a_stamp_always_drops_the_snapshot(tools: None) -> None:
    local = Catalog()
    snapshot = load(local)
    local.invalidate()
    load(local)
    local.invalidate()
    assert load(local) is not snapshot


@pytest.mark.django_db(transaction=True)
def test_a_snapshot_loaded_while_the_tools_change_is_not_kept(tools: None, monkeypatch: pytest.MonkeyPatch) -> None:
    local = Catalog()
    real = catalog_module.entry_from_row

    def change_during_load(row: Any, *args: Any) -> Any:
        local.invalidate()
        return real(row, *args)

    monkeypatch.setattr(catalog_module, "entry_from_row", change_during_load)
    stale = load(local)
    monkeypatch.setattr(catalog_module, "entry_from_row", real)
    assert load(local) is not stale
    assert load(local) is load(local)


@pytest.mark.django_db(transaction=True)
def test_saving_or_deleting_a_tool_invalidates_the_shared_catalog(tools: None) -> None:
    snapshot = load(catalog)
    tool = Tool.objects.get(name="add")
    tool.enabled = False
    tool.save()
    refreshed = load(catalog)
    assert refreshed is not snapshot
    assert "add" not in refreshed.by_name
    Tool.objects.get(name="greet").delete()
    assert "greet" not in load(catalog).by_name


@pytest.mark.django_db(transaction=True)
def test_pages_outside_any_session_read_the_tools_as_they_are_now(tools: None) -> None:
    # An update sends no signal, as a change made by another process reaches none here.
    local = Catalog()
    assert "add" in load(local).by_name
    Tool.objects.filter(name="add").update(enabled=False)

    assert "add" not in local.current().by_name


@pytest.mark.django_db(transaction=True)
def test_the_snapshot_holds_enabled_tools_in_name_order(tools: None) -> None:
    Tool.objects.filter(name__in=["crash", "tags"]).update(enabled=False)
    snapshot = load(Catalog())
    expected = sorted(Tool.objects.filter(enabled=True).values_list("name", flat=True))
    assert [e.name for e in snapshot.entries] == expected
    assert set(snapshot.by_name) == set(expected)
    assert snapshot.by_name["add"].plan.runs.key == "add"


@pytest.mark.django_db(transaction=True)
def test_pages_are_encoded_once_per_view_and_revision(tools: None, django_user_model: Any) -> None:
    snapshot = load(Catalog())
    view = snapshot.view(django_user_model(pk=1, username="root", is_superuser=True, is_active=True))
    first = page(view, v.V2025_11_25, 0, PAGE_SIZE)
    assert page(view, v.V2025_11_25, 0, PAGE_SIZE) is first
    other = page(view, v.V2024_11_05, 0, PAGE_SIZE)
    assert other != first
    definitions = ",".join(encode(shapes.definition(e.spec, v.V2025_11_25)) for e in view.entries[:5])
    assert first == ("[" + definitions + "]", 5)


@pytest.mark.django_db(transaction=True)
def test_a_page_stops_short_of_the_byte_bound_but_holds_at_least_one_definition(
    tools: None, django_user_model: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    view = load(Catalog()).view(django_user_model(pk=1, username="root", is_superuser=True, is_active=True))
    sizes = [len(definition_json(e, v.V2025_11_25)) for e in view.entries]
    monkeypatch.setattr(listing, "PAGE_BYTES", 2 + sizes[0] + 1 + sizes[1] + 1)  # room for two, and a comma
    two, following = page(view, v.V2025_11_25, 0, 100)
    assert following == 2
    assert two == "[" + ",".join(definition_json(e, v.V2025_11_25) for e in view.entries[:2]) + "]"
    monkeypatch.setattr(listing, "PAGE_BYTES", 1)
    assert page(view, v.V2025_11_25, 2, 100) == ("[" + definition_json(view.entries[2], v.V2025_11_25) + "]", 3)
    # The draft revisions take no cursor: they get every tool, however many bytes that is.
    whole, following = page(view, v.DRAFT, 0, len(view.entries))
    assert following == len(view.entries)
    assert json.loads(whole) == [shapes.definition(e.spec, v.DRAFT) for e in view.entries]


def prepared(user: Any) -> Any:
    async_to_sync(permissions.prepare)(user)
    return user


@pytest.mark.django_db(transaction=True)
def test_callers_who_may_use_the_same_tools_share_one_view_and_its_cached_pages(
    tools: None, django_user_model: Any
) -> None:
    snapshot = load(Catalog())
    ann = prepared(django_user_model.objects.create_user("ann"))
    bob = prepared(django_user_model.objects.create_user("bob"))
    first = page(snapshot.view(ann), v.V2025_11_25, 0, PAGE_SIZE)

    assert snapshot.view(bob) is snapshot.view(ann)
    assert page(snapshot.view(bob), v.V2025_11_25, 0, PAGE_SIZE) is first

    # A change in bob's rights gives him his own view at once, on the same snapshot, and leaves ann's alone.
    bob.is_active = False
    assert snapshot.view(bob).entries == ()
    assert page(snapshot.view(bob), v.V2025_11_25, 0, PAGE_SIZE) == ("[]", 0)
    assert page(snapshot.view(ann), v.V2025_11_25, 0, PAGE_SIZE) is first


@pytest.mark.django_db(transaction=True)
def test_a_shared_view_is_not_served_for_a_tool_taken_from_one_of_its_callers(
    tools: None, django_user_model: Any
) -> None:
    ann = prepared(django_user_model.objects.create_user("ann"))
    bob = prepared(django_user_model.objects.create_user("bob"))
    source = Catalog()
    before = load(source)
    assert before.view(ann) is before.view(bob) and "add" in before.view(bob).names

    add = Tool.objects.get(name="add")
    add.everyone = False
    add.save()
    UserGrant.objects.create(tool=add, user=ann)
    source.invalidate()
    after = load(source)

    assert "add" in after.view(ann).names
    assert "add" not in after.view(bob).names
    listed, _ = page(after.view(bob), v.V2025_11_25, 0, len(after.entries))
    assert '"name":"add"' not in listed
    assert '"name":"add"' in page(after.view(ann), v.V2025_11_25, 0, len(after.entries))[0]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("version", [*LEGACY, MODERN])
def test_an_entry_encodes_its_definition_once_per_revision(tools: None, version: Any) -> None:
    revision = v.lookup(version)
    assert revision is not None
    entry = load(Catalog()).by_name["add"]
    encoded = definition_json(entry, revision)
    assert definition_json(entry, revision) is encoded
    assert encoded == encode(shapes.definition(entry.spec, revision))


@pytest.mark.django_db(transaction=True)
def test_a_row_without_schema_or_icons_gets_an_object_schema_and_no_icons(tools: None) -> None:
    Tool.objects.filter(name="crash").update(input_schema={}, icons=[])
    entry = load(Catalog()).by_name["crash"]
    assert (entry.spec.input_schema, entry.spec.icons) == ({"type": "object"}, ())


# Pagination through tools/list ------------------------------------------------------------------


@pytest.fixture
def enabled_names(tools: None) -> list[str]:
    Tool.objects.filter(name__in=["crash", "tags"]).update(enabled=False)
    catalog.invalidate()
    return sorted(Tool.objects.filter(enabled=True).values_list("name", flat=True))


async def list_page(wire: Wire, version: Any, cursor: Any = None, **params: Any) -> dict[str, Any]:
    if cursor is not None:
        params["cursor"] = cursor
    if version == MODERN:
        return await wire.modern("tools/list", params)
    return await wire.request("tools/list", params)


async def walk(wire: Wire, version: Any) -> list[list[str]]:
    pages: list[list[str]] = []
    cursor = None
    while len(pages) < 100:
        result = (await list_page(wire, version, cursor))["result"]
        pages.append([tool["name"] for tool in result["tools"]])
        cursor = result.get("nextCursor")
        if cursor is None:
            return pages
        assert isinstance(cursor, str) and cursor
    raise AssertionError("nextCursor never ran out")


async def session_for(user: Any, version: Any) -> Wire:
    return Wire(user) if version == MODERN else await connected(user, version)


DRAFTS = (1, "2024-10-07")


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("version", [*(x for x in LEGACY if x not in DRAFTS), MODERN])
async def test_walking_next_cursor_lists_every_enabled_tool_once_in_name_order(
    enabled_names: list[str], user: Any, version: Any
) -> None:
    pages = await walk(await session_for(user, version), version)
    assert [name for page in pages for name in page] == enabled_names
    assert all(len(page) == PAGE_SIZE for page in pages[:-1])
    assert 1 <= len(pages[-1]) <= PAGE_SIZE
    assert len(pages) == -(-len(enabled_names) // PAGE_SIZE)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("version", DRAFTS)
async def test_draft_clients_get_every_tool_on_one_page_because_the_draft_has_no_cursor(
    enabled_names: list[str], user: Any, version: Any
) -> None:
    pages = await walk(await session_for(user, version), version)
    assert pages == [enabled_names]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("version", ["2025-06-18", MODERN, *DRAFTS])
async def test_pages_cut_by_bytes_still_list_every_tool_once_and_drafts_still_get_one_page(
    settings: Any, monkeypatch: pytest.MonkeyPatch, enabled_names: list[str], user: Any, version: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PAGE_SIZE": 1000}
    monkeypatch.setattr(listing, "PAGE_BYTES", 2_000)
    pages = await walk(await session_for(user, version), version)
    assert [name for page in pages for name in page] == enabled_names
    if version in DRAFTS:
        assert len(pages) == 1
    else:
        assert 2 < len(pages) < len(enabled_names)


@pytest.mark.django_db(transaction=True)
async def test_a_page_size_of_the_whole_list_needs_no_cursor(
    settings: Any, enabled_names: list[str], user: Any
) -> None:
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "PAGE_SIZE": len(enabled_names)}
    result = (await (await connected(user)).request("tools/list"))["result"]
    assert [t["name"] for t in result["tools"]] == enabled_names
    assert "nextCursor" not in result


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("version", [*LEGACY, MODERN])
@pytest.mark.parametrize(
    "cursor",
    [
        "garbage",
        cursor_of(b"hello"),
        cursor_of(b"mcp-tools:-1"),
        cursor_of(b"mcp-tools:10000"),
        5,
        [],
        {},
        True,
    ],
)
async def test_tools_list_refuses_a_bad_cursor_with_invalid_params(
    tools: None, user: Any, version: Any, cursor: Any
) -> None:
    wire = await session_for(user, version)
    reply = await list_page(wire, version, cursor)
    assert reply == error(reply["id"], INVALID_PARAMS, "Invalid cursor", BAD_CURSOR)


@pytest.mark.django_db(transaction=True)
async def test_a_null_cursor_means_the_first_page(tools: None, user: Any) -> None:
    wire = await connected(user)
    first = await wire.request("tools/list")
    again = await wire.request("tools/list", {"cursor": None})
    assert again["result"] == first["result"]


@pytest.mark.django_db(transaction=True)
async def test_disabled_tools_are_absent_and_cannot_be_called(enabled_names: list[str], user: Any) -> None:
    wire = await connected(user)
    listed = [name for page in await walk(wire, "2025-11-25") for name in page]
    assert "crash" not in listed and "tags" not in listed
    reply = await wire.call("tags", {"items": []})
    assert reply == error(reply["id"], INVALID_PARAMS, "Unknown tool: tags", {"reason": "Unknown tool: tags"})


@pytest.mark.django_db(transaction=True)
async def test_a_tool_disabled_mid_session_leaves_the_next_listing(tools: None, user: Any) -> None:
    wire = await connected(user)
    assert (await wire.request("tools/list"))["result"]["tools"][0]["name"] == "add"

    def disable_add() -> None:
        tool = Tool.objects.get(name="add")
        tool.enabled = False
        tool.save()

    await database_sync_to_async(disable_add)()
    assert (await wire.request("tools/list"))["result"]["tools"][0]["name"] != "add"
    reply = await wire.call("add", {"a": 1, "b": 2})
    assert reply["error"]["code"] == INVALID_PARAMS


class HeldLoads:
    """Counts a catalog's loads and holds each in its thread until released, so that callers can pile up."""

    def __init__(self, source: Catalog, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.started = threading.Event()
        self.release = threading.Event()
        real = source._load

        def held() -> Snapshot:
            self.count += 1
            self.started.set()
            assert self.release.wait(10), "the test never released the load"
            return real()

        monkeypatch.setattr(source, "_load", held)

    async def wait_started(self) -> None:
        assert await asyncio.to_thread(self.started.wait, 10), "no load started"


@pytest.mark.django_db(transaction=True)
async def test_sessions_that_find_the_catalog_empty_together_share_one_load(
    tools: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = Catalog()
    loads = HeldLoads(local, monkeypatch)

    callers = [asyncio.ensure_future(local.get()) for _ in range(40)]
    await loads.wait_started()  # every caller has run up to its wait meanwhile
    loads.release.set()
    snapshots = await asyncio.wait_for(asyncio.gather(*callers), 10)

    assert loads.count == 1
    assert all(snapshot is snapshots[0] for snapshot in snapshots)
    assert "add" in snapshots[0].by_name
    assert await local.get() is snapshots[0]


@pytest.mark.django_db(transaction=True)
async def test_a_caller_arriving_after_a_change_does_not_take_the_load_begun_before_it(
    tools: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = Catalog()
    loads = HeldLoads(local, monkeypatch)

    before = asyncio.ensure_future(local.get())
    await loads.wait_started()
    local.invalidate()  # a change heard while the first load runs: that load may predate it
    after = asyncio.ensure_future(local.get())
    await asyncio.sleep(0)  # one turn of the loop, not a wait: the second caller starts its own load
    loads.release.set()
    first, second = await asyncio.wait_for(asyncio.gather(before, after), 10)

    assert loads.count == 2
    assert second is not first


@pytest.mark.django_db(transaction=True)
async def test_a_cancelled_first_caller_leaves_the_shared_load_to_finish_for_the_others(
    tools: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = Catalog()
    loads = HeldLoads(local, monkeypatch)

    first = asyncio.ensure_future(local.get())
    await loads.wait_started()
    others = [asyncio.ensure_future(local.get()) for _ in range(3)]
    await asyncio.sleep(0)  # one turn of the loop, not a wait: the others reach their wait on the held load
    first.cancel()
    others[0].cancel()
    loads.release.set()
    snapshots = await asyncio.wait_for(asyncio.gather(*others[1:]), 10)

    assert first.cancelled() and others[0].cancelled()
    assert snapshots[0] is snapshots[1]
    assert loads.count == 1


@pytest.mark.django_db(transaction=True)
async def test_a_failed_load_fails_every_waiter_and_the_next_caller_loads_again(
    tools: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    local = Catalog()
    real = local._load
    attempts: list[int] = []
    started, release = threading.Event(), threading.Event()

    def failing() -> Snapshot:
        attempts.append(1)
        if len(attempts) == 1:
            started.set()
            assert release.wait(10)
            raise RuntimeError("the database went away")
        return real()

    monkeypatch.setattr(local, "_load", failing)
    callers = [asyncio.ensure_future(local.get()) for _ in range(5)]
    assert await asyncio.to_thread(started.wait, 10)
    release.set()
    outcomes = await asyncio.wait_for(asyncio.gather(*callers, return_exceptions=True), 10)

    assert all(isinstance(outcome, RuntimeError) for outcome in outcomes)
    assert "add" in (await asyncio.wait_for(local.get(), 10)).by_name
    assert len(attempts) == 2
