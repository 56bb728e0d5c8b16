"""The fixture tools the MCP conformance suite calls by name."""

from __future__ import annotations

import base64
import json
from typing import Any

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


# Tools that ask: legacy sessions get each request on the session's channel; 2026-07-28 calls answer
# input_required and run again with the answers (the same functions serve both).

CONTACT_FORM = {
    "type": "object",
    "properties": {
        "username": {"type": "string", "description": "User's response"},
        "email": {"type": "string", "description": "User's email address"},
    },
    "required": ["username", "email"],
}
DEFAULTS_FORM = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "description": "User name", "default": "John Doe"},
        "age": {"type": "integer", "description": "User age", "default": 30},
        "score": {"type": "number", "description": "User score", "default": 95.5},
        "status": {
            "type": "string",
            "description": "User status",
            "enum": ["active", "inactive", "pending"],
            "default": "active",
        },
        "verified": {"type": "boolean", "description": "Verification status", "default": True},
    },
    "required": [],
}
ENUMS_FORM = {
    "type": "object",
    "properties": {
        "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
        "titledSingle": {
            "type": "string",
            "oneOf": [
                {"const": "value1", "title": "First Option"},
                {"const": "value2", "title": "Second Option"},
                {"const": "value3", "title": "Third Option"},
            ],
        },
        "legacyEnum": {
            "type": "string",
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        },
        "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
        "titledMulti": {
            "type": "array",
            "items": {
                "anyOf": [
                    {"const": "value1", "title": "First Choice"},
                    {"const": "value2", "title": "Second Choice"},
                    {"const": "value3", "title": "Third Choice"},
                ]
            },
        },
    },
    "required": [],
}


def form(message: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"method": "elicitation/create", "params": {"message": message, "requestedSchema": schema}}


def one_field(message: str, name: str, kind: str = "string") -> dict[str, Any]:
    return form(message, {"type": "object", "properties": {name: {"type": kind}}, "required": [name]})


def sampling(prompt: str, max_tokens: int) -> dict[str, Any]:
    messages = [{"role": "user", "content": {"type": "text", "text": prompt}}]
    return {"method": "sampling/createMessage", "params": {"messages": messages, "maxTokens": max_tokens}}


ROOTS = {"method": "roots/list", "params": {}}


def sampled_text(answer: dict[str, Any]) -> str:
    content = answer.get("content")
    blocks = content if isinstance(content, list) else [content]
    return "".join(str(block.get("text", "")) for block in blocks if isinstance(block, dict))


@tool
async def test_elicitation(ctx: Context, message: str) -> str:
    """Asks the user for a username and an email address."""
    answer = await ctx.elicit(message, CONTACT_FORM)
    return f"User response: action={answer.action}, content={json.dumps(answer.content)}"


@tool
async def test_sampling(ctx: Context, prompt: str) -> str:
    """Asks the client's model to answer a prompt."""
    answers = await ctx.ask({"answer": sampling(prompt, 100)})
    return f"LLM response: {sampled_text(answers['answer'])}"


@tool
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Asks for a form whose every field has a default."""
    answer = await ctx.elicit("Test client default value handling - please accept with defaults", DEFAULTS_FORM)
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


@tool
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Asks for a form with each kind of enum."""
    answer = await ctx.elicit("Choose from the enum fields", ENUMS_FORM)
    return f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}"


@tool
async def test_input_required_result_elicitation(ctx: Context) -> str:
    """Asks the user's name."""
    answers = await ctx.ask({"user_name": one_field("What is your name?", "name")})
    return f"Hello, {answers['user_name'].get('content', {}).get('name')}!"


@tool
async def test_input_required_result_sampling(ctx: Context) -> str:
    """Asks the client's model a question."""
    answers = await ctx.ask({"capital_question": sampling("What is the capital of France?", 100)})
    return f"The model says: {sampled_text(answers['capital_question'])}"


@tool
async def test_input_required_result_list_roots(ctx: Context) -> str:
    """Asks the client for its roots."""
    answers = await ctx.ask({"client_roots": ROOTS})
    uris = [root.get("uri") for root in answers["client_roots"]["roots"] if isinstance(root, dict)]
    return f"Roots: {', '.join(map(str, uris))}"


@tool(name="test_input_required_result_tampered_state")
@tool
async def test_input_required_result_request_state(ctx: Context) -> str:
    """Asks for a yes; the answer counts with the signed state the server issued, untouched."""
    answers = await ctx.ask({"confirm": one_field("Please confirm", "ok", "boolean")})
    return f"state-ok: {json.dumps(answers['confirm'].get('content', {}))}"


@tool
async def test_input_required_result_multiple_inputs(ctx: Context) -> str:
    """Asks a form, the client's model and the client's roots at once."""
    answers = await ctx.ask(
        {
            "user_name": one_field("What is your name?", "name"),
            "greeting": sampling("Generate a greeting", 50),
            "client_roots": ROOTS,
        }
    )
    return f"Answered: {', '.join(sorted(answers))}"


@tool
async def test_input_required_result_multi_round(ctx: Context) -> str:
    """Asks a name, then (in a second round) a favourite colour."""
    name = await ctx.ask({"step1": one_field("Step 1: What is your name?", "name")})
    color = await ctx.ask({"step2": one_field("Step 2: What is your favorite color?", "color")})
    return f"{name['step1'].get('content', {}).get('name')} likes {color['step2'].get('content', {}).get('color')}"


@tool
async def test_input_required_result_capabilities(ctx: Context) -> str:
    """Asks only what the client declared it can answer."""
    wanted = {"user_name": one_field("What is your name?", "name"), "greeting": sampling("Generate a greeting", 50)}
    askable = {key: request for key, request in wanted.items() if ctx.can_ask(request["method"])}
    if not askable:
        return "Nothing to ask this client."
    return f"Answered: {', '.join(sorted(await ctx.ask(askable)))}"
