"""A tool kind of the site's own (tests/testapp/kinds.py, registered from the test app): configured in the admin,
listed and called over WebSocket and every HTTP door, audited, exported and imported, tried in the admin."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.core.management import CommandError, call_command

from mcp_tools import ToolKind, register_kind
from mcp_tools.history import recording
from mcp_tools.models import Tool, ToolCall, ToolChange
from mcp_tools.tools.kinds.checks import check_tool_kinds
from mcp_tools.tools.kinds.registry import KindRegistry, kinds
from tests.db import db_call
from tests.live.asgi_http import TIMEOUT, HttpClient, request
from tests.testapp.kinds import ReplyTemplateKind
from tests.websocket import WSClient, ws_headers
from tests.wire import connected, listed

pytestmark = pytest.mark.django_db(transaction=True)

TEMPLATE = "Hello {{ name }}, your order {{ order }} is on its way."
CONFIG = {"template": TEMPLATE, "arguments": ["name", "order"]}
ARGUMENTS = {"name": "Ada", "order": "A-17"}
REPLY = "Hello Ada, your order A-17 is on its way."
ROOT = Path(__file__).resolve().parent.parent
ANSWER = {"content": [{"type": "text", "text": REPLY}], "isError": False}


def make_reply_tool(**fields: Any) -> Tool:
    tool = Tool(name="order_reply", kind="reply_template", config=CONFIG, everyone=True, **fields)
    tool.full_clean()
    tool.save()
    return tool


@pytest.fixture
def reply_tool(db: None) -> Tool:
    return make_reply_tool()


def call(request_id: int = 1) -> dict[str, Any]:
    return request(request_id, "tools/call", {"name": "order_reply", "arguments": ARGUMENTS})


def test_the_kind_is_registered_from_the_test_app_after_the_built_in_ones():
    names = [kind.name for kind in kinds]
    assert names[:6] == ["callable", "model_query", "search", "fetch", "api_action", "admin_action"]
    assert isinstance(kinds.find("reply_template"), ReplyTemplateKind)
    assert register_kind(ReplyTemplateKind) is ReplyTemplateKind  # registering it again changes nothing


def test_a_name_taken_or_malformed_is_refused():
    registry = KindRegistry()
    registry.register(ReplyTemplateKind)

    class Impostor(ToolKind):
        name = "reply_template"

    class Shouting(ToolKind):
        name = "Reply Template"

    with pytest.raises(ValueError, match="already registered"):
        registry.register(Impostor)
    with pytest.raises(ValueError, match="lowercase"):
        registry.register(Shouting)


def test_the_admin_configures_it_with_the_kinds_own_form(admin_client):
    page = admin_client.get("/admin/mcp_tools/tool/add/").content.decode()
    assert 'value="reply_template"' in page and 'name="reply_template-template"' in page
    fields = {
        f"{prefix}-{count}": "0"
        for prefix in ("query", "sources", "user_grants", "group_grants")
        for count in ("TOTAL_FORMS", "INITIAL_FORMS")
    }
    response = admin_client.post(
        "/admin/mcp_tools/tool/add/",
        {
            "name": "order_reply",
            "kind": "reply_template",
            "enabled": "on",
            "everyone": "on",
            "reply_template-template": TEMPLATE,
            "reply_template-arguments": "name, order",
            **fields,
        },
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    tool = Tool.objects.get(name="order_reply")
    assert tool.config == CONFIG
    assert tool.input_schema["required"] == ["name", "order"]
    change = admin_client.get(f"/admin/mcp_tools/tool/{tool.pk}/change/").content.decode()
    assert "name, order" in change and "Canned reply (a template)" in change

    broken = admin_client.post(
        f"/admin/mcp_tools/tool/{tool.pk}/change/",
        {
            "name": "order_reply",
            "kind": "reply_template",
            "reply_template-template": "{% if %}",
            "reply_template-arguments": "name",
            **fields,
        },
    )
    assert "The template does not parse" in broken.content.decode()
    assert Tool.objects.get(pk=tool.pk).config == CONFIG


async def test_it_is_listed_and_called_like_any_tool_and_audited(user, reply_tool):
    wire = await connected(user)
    definition = (await listed(wire))["order_reply"]
    assert definition["inputSchema"]["properties"]["name"] == {"type": "string", "maxLength": 2000}
    assert definition["annotations"]["readOnlyHint"] is True
    reply = await wire.request("tools/call", {"name": "order_reply", "arguments": ARGUMENTS})
    assert reply["result"] == ANSWER
    refused = await wire.request("tools/call", {"name": "order_reply", "arguments": {"name": "Ada"}})
    assert refused["result"]["isError"] is True  # validated against the kind's schema like any tool's
    rows = await db_call(lambda: list(ToolCall.objects.order_by("pk").values_list("tool_name", "outcome")))
    assert rows[0] == ("order_reply", "ok") and rows[1][0] == "order_reply" and rows[1][1] != "ok"


async def test_it_is_called_over_a_websocket(token, reply_tool):
    from tests.asgi import application

    communicator = WebsocketCommunicator(application, "/mcp/ws", headers=ws_headers(token), subprotocols=["mcp"])
    accepted, _ = await communicator.connect(timeout=TIMEOUT)
    assert accepted
    client = WSClient(communicator)
    await client.initialize()
    reply = await client.request("tools/call", {"name": "order_reply", "arguments": ARGUMENTS})
    await communicator.disconnect()
    assert reply["result"] == ANSWER


async def test_it_is_called_through_every_http_door(token, reply_tool, http_door):
    client = HttpClient(token, door=http_door)
    await client.initialize("2025-11-25")
    reply = await client.send(call())
    await client.close()
    assert reply.json()["result"] == ANSWER


def test_it_is_exported_and_imported_with_its_configuration(tmp_path: Path, reply_tool):
    out = io.StringIO()
    call_command("mcp_export", stdout=out, stderr=io.StringIO())
    [entry] = [tool for tool in json.loads(out.getvalue())["tools"] if tool["name"] == "order_reply"]
    assert (entry["kind"], entry["config"]) == ("reply_template", CONFIG)
    Tool.objects.all().delete()
    path = tmp_path / "tools.json"
    path.write_text(out.getvalue(), encoding="utf-8")
    call_command("mcp_import", str(path), "--noinput", stdout=io.StringIO())
    imported = Tool.objects.get(name="order_reply")
    assert (imported.kind, imported.config, imported.input_schema) == (
        "reply_template",
        CONFIG,
        reply_tool.input_schema,
    )

    entry["config"] = {"template": "{% if %}", "arguments": ["name"]}
    path.write_text(json.dumps({**json.loads(out.getvalue()), "tools": [entry]}), encoding="utf-8")
    report = io.StringIO()
    with pytest.raises(CommandError, match="Nothing was imported"):
        call_command("mcp_import", str(path), "--noinput", stdout=report, stderr=report)
    assert "order_reply" in report.getvalue() and "The template does not parse" in report.getvalue()
    assert Tool.objects.get(name="order_reply").config == CONFIG


def test_it_is_tried_in_the_admin(admin_client, user, reply_tool):
    response = admin_client.post(
        f"/admin/mcp_tools/tool/{reply_tool.pk}/try/", {"user": user.username, "arg_name": "Ada", "arg_order": "A-17"}
    )
    assert response.status_code == 200
    assert REPLY in response.content.decode()
    assert ToolCall.objects.get().transport == "admin"


def test_the_docs_quote_the_example_kind_as_it_is():
    docs = (ROOT / "docs" / "tool-kinds.md").read_text(encoding="utf-8")
    quoted = docs.split("```python\n", 1)[1].split("```", 1)[0]
    assert quoted == (ROOT / "tests" / "testapp" / "kinds.py").read_text(encoding="utf-8")


async def test_a_tool_of_an_unregistered_kind_serves_nobody_and_the_checks_name_it(user, reply_tool):
    def orphans() -> list[Any]:
        Tool.objects.create(name="orphan", kind="graphql_query", everyone=True)
        Tool.objects.create(name="gone", kind="admin_action", config={"action": "testapp.item:vanished"}, everyone=True)
        return [(m.id, m.obj) for m in check_tool_kinds(databases=["default"])]

    found = await db_call(orphans)
    assert sorted(found) == [("mcp_tools.W016", "orphan"), ("mcp_tools.W017", "gone")]
    wire = await connected(user)
    assert sorted(await listed(wire)) == ["order_reply"]
    reply = await wire.request("tools/call", {"name": "orphan", "arguments": {}})
    assert reply["error"] == {
        "code": -32602,
        "message": "Unknown tool: orphan",
        "data": {"reason": "Unknown tool: orphan"},
    }


def test_the_tool_list_filters_by_kind_under_the_kinds_labels(admin_client, reply_tool):
    Tool.objects.create(name="adder", callable_name="add")
    page = admin_client.get("/admin/mcp_tools/tool/?kind=reply_template").content.decode()
    assert "Canned reply (a template)" in page and "Admin action (the site" in page
    assert ">order_reply<" in page and ">adder<" not in page


def test_a_tool_changed_to_another_kind_leaves_no_configuration_behind(reply_tool):
    reply_tool.kind, reply_tool.callable_name = "callable", "add"
    reply_tool.full_clean()
    reply_tool.save()
    assert Tool.objects.get(pk=reply_tool.pk).config == {}


def test_its_configuration_changes_are_in_the_tools_history(reply_tool):
    with recording(source="code"):
        reply_tool.config = {**CONFIG, "template": "Hi {{ name }}, {{ order }} is on its way."}
        reply_tool.full_clean()
        reply_tool.save()
    change = ToolChange.objects.filter(tool=reply_tool).latest("pk")
    assert change.source == "code" and "config" in json.dumps(change.changes)
