"""Per-revision shapes of tool definitions and CallToolResult, alone and through tools/list and tools/call."""

from __future__ import annotations

from typing import Any

import pytest
from mcp_types import _v2025_11_25 as sdk
from mcp_types import _v2026_07_28 as sdk_modern

from mcp_tools.exceptions import InvalidParams
from mcp_tools.models import Tool
from mcp_tools.protocol import errors, shapes
from mcp_tools.protocol import versions as v
from mcp_tools.protocol.shapes import CallResult, ToolSpec
from mcp_tools.tools import content
from tests.messages import DRAFTS, LEGACY, MODERN, SERVER_INFO
from tests.wire import conforms, connected

ALL = [*LEGACY, MODERN]
ICONS = [{"src": "https://example.com/add.png", "mimeType": "image/png", "sizes": ["48x48"]}]

FULL = ToolSpec(
    name="convert",
    title="Convert units",
    description="Convert between units.",
    input_schema={"type": "object", "properties": {"q": {"type": "number"}}},
    output_schema={"type": "object", "properties": {"r": {"type": "number"}}},
    annotations={"readOnlyHint": True, "destructiveHint": False, "notAHint": True},
    icons=tuple(ICONS),
)
BARE = ToolSpec(name="bare")


def revision(version: Any) -> v.Revision:
    found = v.lookup(version)
    assert found is not None
    return found


def since(version: Any, first: v.Revision) -> bool:
    return revision(version) >= first


# definition -------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", ALL)
def test_definition_grows_field_by_field_with_the_revision(version: Any) -> None:
    expected: dict[str, Any] = {
        "name": "convert",
        "description": "Convert between units.",
        "inputSchema": {"type": "object", "properties": {"q": {"type": "number"}}},
    }
    if since(version, v.V2025_03_26):
        expected["annotations"] = {"title": "Convert units", "readOnlyHint": True, "destructiveHint": False}
    if since(version, v.V2025_06_18):
        expected["title"] = "Convert units"
        expected["outputSchema"] = {"type": "object", "properties": {"r": {"type": "number"}}}
    if since(version, v.V2025_11_25):
        expected["icons"] = ICONS
    assert shapes.definition(FULL, revision(version)) == expected


@pytest.mark.parametrize("version", ALL)
def test_a_bare_definition_has_an_empty_description_only_in_the_draft(version: Any) -> None:
    expected: dict[str, Any] = {"name": "bare", "inputSchema": {"type": "object"}}
    if version in DRAFTS:
        expected["description"] = ""
    assert shapes.definition(BARE, revision(version)) == expected


def test_annotations_without_a_title_carry_only_the_known_hints() -> None:
    spec = ToolSpec(name="t", annotations={"openWorldHint": False, "idempotentHint": True, "other": True})
    definition = shapes.definition(spec, v.V2025_03_26)
    assert definition["annotations"] == {"idempotentHint": True, "openWorldHint": False}


@pytest.mark.parametrize(("version", "model"), [("2025-11-25", sdk.Tool), (MODERN, sdk_modern.Tool)])
@pytest.mark.parametrize("spec", [FULL, BARE])
def test_definitions_conform_to_the_sdk_tool_model(version: str, model: Any, spec: ToolSpec) -> None:
    conforms(model, shapes.definition(spec, revision(version)))


# call_result ------------------------------------------------------------------------------------

TEXT = content.text("hello")
IMAGE = content.image(b"\x89PNG", "image/png")
AUDIO = content.audio(b"RIFF", "audio/wav")
LINK = content.resource_link("file:///tmp/a.txt", "a.txt", mime_type="text/plain")
RESOURCE = content.embedded_resource("file:///tmp/b.txt", text="b")
AUDIO_AS_TEXT = {"type": "text", "text": "[audio audio/wav]"}
LINK_AS_TEXT = {"type": "text", "text": "[resource_link file:///tmp/a.txt]"}
MIXED = CallResult([TEXT, IMAGE, AUDIO, LINK, RESOURCE], structured={"n": 1})


@pytest.mark.parametrize(
    ("version", "blocks"),
    [
        ("2024-11-05", [TEXT, IMAGE, AUDIO_AS_TEXT, LINK_AS_TEXT, RESOURCE]),
        ("2025-03-26", [TEXT, IMAGE, AUDIO, LINK_AS_TEXT, RESOURCE]),
        ("2025-06-18", [TEXT, IMAGE, AUDIO, LINK, RESOURCE]),
        ("2025-11-25", [TEXT, IMAGE, AUDIO, LINK, RESOURCE]),
    ],
)
def test_content_newer_than_the_revision_is_downgraded_to_text(version: str, blocks: list[Any]) -> None:
    expected: dict[str, Any] = {"content": blocks, "isError": False}
    if since(version, v.V2025_06_18):
        expected["structuredContent"] = {"n": 1}
    assert shapes.call_result(MIXED, revision(version)) == expected


def test_an_unknown_content_type_becomes_a_text_placeholder_everywhere() -> None:
    result = CallResult([{"type": "hologram"}, {"type": "video", "mimeType": "video/mp4"}])
    for version in ALL[2:]:
        blocks = shapes.call_result(result, revision(version))["content"]
        assert blocks == [
            {"type": "text", "text": "[hologram]"},
            {"type": "text", "text": "[video video/mp4]"},
        ]


def test_a_modern_result_is_complete_and_may_carry_any_structured_json() -> None:
    result = CallResult([TEXT], structured=[1, 2], value=[1, 2])
    assert shapes.call_result(result, v.V2026_07_28) == {
        "content": [TEXT],
        "structuredContent": [1, 2],
        "isError": False,
        "resultType": "complete",
    }
    conforms(sdk_modern.CallToolResult, shapes.call_result(result, v.V2026_07_28))


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
@pytest.mark.parametrize("structured", [[1, 2], "text", 3, None])
def test_legacy_results_carry_only_object_structured_content(version: str, structured: Any) -> None:
    result = shapes.call_result(CallResult([TEXT], structured=structured), revision(version))
    assert result == {"content": [TEXT], "isError": False}


@pytest.mark.parametrize(
    ("result", "tool_result"),
    [
        (CallResult([TEXT], structured={"n": 1}, value=7), 7),
        (CallResult([TEXT], structured={"n": 1}), {"n": 1}),
        (CallResult([TEXT, IMAGE, content.text("world")]), "hello\nworld"),
        (CallResult([IMAGE]), ""),
        (CallResult([TEXT], value=False), False),
    ],
)
@pytest.mark.parametrize("version", DRAFTS)
def test_the_draft_answers_a_plain_tool_result(version: Any, result: CallResult, tool_result: Any) -> None:
    assert shapes.call_result(result, revision(version)) == {"toolResult": tool_result}


@pytest.mark.parametrize("version", ALL)
def test_a_tool_failure_is_one_text_block_flagged_as_an_error_or_for_the_draft_invalid_params(version: Any) -> None:
    if version in DRAFTS:
        with pytest.raises(InvalidParams) as raised:
            errors.tool_failure("Nope.", revision(version))
        assert (raised.value.message, raised.value.data) == ("Tool execution failed", {"reason": "Nope."})
        return
    result = errors.tool_failure("Nope.", revision(version))
    expected: dict[str, Any] = {"content": [{"type": "text", "text": "Nope."}], "isError": True}
    if version == MODERN:
        expected["resultType"] = "complete"
    assert result == expected


@pytest.mark.parametrize(
    ("version", "model"), [("2025-11-25", sdk.CallToolResult), (MODERN, sdk_modern.CallToolResult)]
)
def test_call_results_conform_to_the_sdk_model(version: str, model: Any) -> None:
    conforms(model, shapes.call_result(MIXED, revision(version)))
    conforms(model, errors.tool_failure("Nope.", revision(version)))


# As tools/list shows them -----------------------------------------------------------------------

ADD_INPUT = {
    "type": "object",
    "properties": {
        "a": {"type": "integer", "description": "The first addend."},
        "b": {"type": "integer", "description": "The second addend."},
    },
    "additionalProperties": False,
    "required": ["a", "b"],
}
EMPTY_INPUT = {"type": "object", "properties": {}, "additionalProperties": False}


@pytest.fixture
def decorated(tools: None) -> None:
    """``add`` gains icons; ``crash`` loses its description."""
    add = Tool.objects.get(name="add")
    add.icons = ICONS
    add.save()
    crash = Tool.objects.get(name="crash")
    crash.description = ""
    crash.save()


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("version", LEGACY)
async def test_tools_list_shows_each_revision_its_own_definition_shape(
    decorated: None, user: Any, version: Any
) -> None:
    wire = await connected(user, version)
    listed: dict[str, Any] = {}
    params: dict[str, Any] = {}
    while True:  # the test app's tools fill several pages
        page = (await wire.request("tools/list", params))["result"]
        listed.update((tool["name"], tool) for tool in page["tools"])
        if "nextCursor" not in page:
            break
        params = {"cursor": page["nextCursor"]}
    add: dict[str, Any] = {"name": "add", "description": "Add two integers.", "inputSchema": ADD_INPUT}
    if since(version, v.V2025_03_26):
        add["annotations"] = {"title": "Add two integers", "readOnlyHint": True}
    if since(version, v.V2025_06_18):
        add["title"] = "Add two integers"
        add["outputSchema"] = {
            "type": "object",
            "properties": {"result": {"type": "integer"}},
            "required": ["result"],
        }
    if since(version, v.V2025_11_25):
        add["icons"] = ICONS
    crash: dict[str, Any] = {"name": "crash", "inputSchema": EMPTY_INPUT}
    if version in DRAFTS:
        crash["description"] = ""
    if since(version, v.V2025_03_26):
        # A callable derives no hints; a blank title reads as the humanised name.
        crash["annotations"] = {"title": "Crash"}
    if since(version, v.V2025_06_18):
        crash["title"] = "Crash"
    assert (listed["add"], listed["crash"]) == (add, crash)


@pytest.mark.django_db(transaction=True)
async def test_modern_tools_list_shows_the_newest_definition_shape(decorated: None, user: Any) -> None:
    wire = await connected(user, "2025-11-25")
    legacy = (await wire.request("tools/list"))["result"]
    modern = (await wire.modern("tools/list"))["result"]
    assert modern.pop("tools") == legacy.pop("tools")
    assert modern == {
        "nextCursor": legacy["nextCursor"],
        "ttlMs": 60_000,
        "cacheScope": "private",
        "resultType": "complete",
        "_meta": {v.SERVER_INFO_META: SERVER_INFO},
    }


# As tools/call shows them -----------------------------------------------------------------------

CALLS = [
    ("add", {"a": 2, "b": 3}, 5, "5", {"result": 5}),
    ("multiply", {"x": 1.5}, 3.0, "3.0", {"result": 3.0}),
    ("multiply", {"x": 2, "y": 4}, 8, "8", {"result": 8}),
    ("greet", {"name": "Ann"}, "Hello, Ann!", "Hello, Ann!", None),
    ("greet", {"name": "Ann", "punctuation": ".", "shout": True}, "HELLO, ANN.", "HELLO, ANN.", None),
    ("greet", {"name": "Ann", "shout": None}, "Hello, Ann!", "Hello, Ann!", None),
    ("whoami", {}, {"username": "alice"}, '{"username":"alice"}', {"username": "alice"}),
    ("tags", {"items": ["b", "a", "b"]}, ["a", "b"], '["a","b"]', {"result": ["a", "b"]}),
    ("tags", {"items": []}, [], "[]", {"result": []}),
]


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("version", LEGACY)
@pytest.mark.parametrize(("name", "arguments", "value", "text", "structured"), CALLS)
async def test_tools_call_answers_in_the_shape_of_each_revision(
    tools: None, user: Any, version: Any, name: str, arguments: Any, value: Any, text: str, structured: Any
) -> None:
    wire = await connected(user, version)
    reply = await wire.call(name, arguments)
    expected: dict[str, Any] = {"toolResult": value}
    if version not in DRAFTS:
        expected = {"content": [{"type": "text", "text": text}], "isError": False}
        if structured is not None and since(version, v.V2025_06_18):
            expected["structuredContent"] = structured
    assert reply == {"jsonrpc": "2.0", "id": 2, "result": expected}


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("version", LEGACY)
async def test_content_blocks_reach_revisions_that_know_them_and_the_draft_gets_the_text(
    tools: None, user: Any, version: Any
) -> None:
    wire = await connected(user, version)
    result = (await wire.call("picture", {}))["result"]
    if version in DRAFTS:
        assert result == {"toolResult": "a picture"}
    else:
        picture = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
        assert result == {"content": [{"type": "text", "text": "a picture"}, picture], "isError": False}
