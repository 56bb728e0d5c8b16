"""The fixture tools the MCP conformance suite calls by name."""

from __future__ import annotations

import base64

from mcp_tools import Context, tool
from mcp_tools.tools.content import ToolResult, audio, embedded_resource, image, text

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64decode("UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA=")
DYNAMIC_TOOL = "test_dynamic_tool"


@tool
def test_simple_text() -> str:
    """Returns a simple text response."""
    return "This is a simple text response for testing."


@tool
def test_image_content() -> ToolResult:
    """Returns a one-pixel PNG image."""
    return ToolResult(content=[image(PNG, "image/png")])


@tool
def test_audio_content() -> ToolResult:
    """Returns a short WAV clip."""
    return ToolResult(content=[audio(WAV, "audio/wav")])


@tool
def test_embedded_resource() -> ToolResult:
    """Returns an embedded text resource."""
    return ToolResult(
        content=[embedded_resource("test://embedded-resource", text="This is an embedded resource content.")]
    )


@tool
def test_multiple_content_types() -> ToolResult:
    """Returns text, an image and an embedded resource."""
    return ToolResult(
        content=[
            text("Multiple content types test:"),
            image(PNG, "image/png"),
            embedded_resource(
                "test://mixed-content-resource", text='{"test":"data","value":123}', mime_type="application/json"
            ),
        ]
    )


@tool
def test_error_handling() -> ToolResult:
    """Always reports an error in-band."""
    return ToolResult(content=[text("This tool intentionally returns an error for testing")], is_error=True)


@tool
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100."""
    for step in (0, 50, 100):
        ctx.report_progress(step, 100, f"Completed step {step} of 100")
    return str(ctx.progress_token)


@tool(requires={"sampling": {}})
def test_missing_capability() -> str:
    """Needs the client's sampling capability."""
    return "Success"


@tool
async def test_streaming_elicitation(ctx: Context) -> str:
    """Streams one progress notification, then answers."""
    ctx.report_progress(1, 1, "streaming")
    return "Streaming complete"


@tool
def test_logging_tool() -> str:
    """Answers without logging."""
    return "Logging evaluated"


@tool
def test_trigger_tool_change() -> str:
    """Changes the tool list: toggles the dynamic tool, which notifies every listener."""
    from mcp_tools.models import Tool

    dynamic = Tool.objects.filter(name=DYNAMIC_TOOL).first()
    if dynamic is None:
        Tool.objects.create(name=DYNAMIC_TOOL, description="Appears and disappears.", callable_name="test_simple_text")
    else:
        dynamic.delete()
    return "Mutation triggered"


@tool(
    input_schema={
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": {
            "address": {
                "$anchor": "addressDef",
                "type": "object",
                "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
            }
        },
        "properties": {
            "name": {"type": "string"},
            "address": {"$ref": "#/$defs/address"},
            "contactMethod": {"type": "string", "enum": ["phone", "email"]},
            "phone": {"type": "string"},
            "email": {"type": "string"},
        },
        "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
        "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
        "then": {"required": ["phone"]},
        "else": {"required": ["email"]},
        "additionalProperties": False,
    }
)
def json_schema_2020_12_tool(**arguments: object) -> str:
    """Accepts a contact described with JSON Schema 2020-12 keywords."""
    return f"Received {sorted(arguments)}"
