"""The admin of model-query tools: choices from the model's real fields, errors on the form, generated schemas."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django import forms
from django.contrib.auth.models import Permission
from django.test import Client

from mcp_tools.access import scopes
from mcp_tools.models import ModelQuery, Tool
from mcp_tools.tools import hints
from mcp_tools.tools.entries import entry_from_row
from mcp_tools.tools.registry import registry
from tests.admin_forms import NO_GRANTS, grant_forms
from tests.db import db_call
from tests.live.admin_client import form_fields
from tests.websocket import heard_once

pytestmark = pytest.mark.django_db

TOOLS_URL = "/admin/mcp_tools/tool/"
PRE = re.compile(r"<pre>(.*?)</pre>", re.S)
GROUPS_INPUT = {
    "type": "object",
    "properties": {
        "name__icontains": {"type": "string", "maxLength": 150, "description": "name contains, ignoring case, this."},
        "order_by": {
            "type": "string",
            "enum": ["name", "-name"],
            "description": "Sort by this field; '-' for descending.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 100,
            "default": 20,
            "description": "How many rows to return (at most 100).",
        },
        "cursor": {"type": "string", "maxLength": 500, "description": "next_cursor from the previous page."},
    },
    "additionalProperties": False,
}
GROUP_ROW = {
    "type": "object",
    "properties": {
        "id": {"type": "integer", "description": "ID"},
        "name": {"type": "string", "description": "Name"},
    },
    "additionalProperties": False,
}


def tool_fields(**fields: Any) -> dict[str, Any]:
    """The tool part of the add/change form's POST body, for a model-query tool."""
    data = {
        "name": "groups",
        "title": "",
        "description": "",
        "enabled": "on",
        "kind": "model_query",
        "callable_name": "",
        "input_schema": "",
        "output_schema": "",
        "read_only_hint": "unknown",
        "destructive_hint": "unknown",
        "idempotent_hint": "unknown",
        "open_world_hint": "unknown",
        "icons": "[]",
    }
    return data | fields


def query_fields(query: ModelQuery | None = None, **fields: Any) -> dict[str, Any]:
    """The model-query inline's POST body (its management form and one query form), with no grants."""
    data: dict[str, Any] = {
        "query-TOTAL_FORMS": "1",
        "query-INITIAL_FORMS": "1" if query else "0",
        "query-MIN_NUM_FORMS": "0",
        "query-MAX_NUM_FORMS": "1",
        "query-0-id": query.pk if query else "",
        "query-0-tool": query.tool_id if query else "",
        "model": "auth.Group",
        "operation": "list",
        "default_limit": "20",
        "max_limit": "100",
        "lookup_field": "pk",
    }
    data |= fields
    return {key if key.startswith("query-") else f"query-0-{key}": value for key, value in data.items()} | NO_GRANTS


GROUPS_QUERY = {"output_fields": ["id", "name"], "filters": ["name__icontains"], "ordering_fields": ["name"]}


def add_groups_tool(client: Client, grants: dict[str, str] | None = None, **query: Any) -> Any:
    return client.post(f"{TOOLS_URL}add/", tool_fields() | query_fields(**(GROUPS_QUERY | query)) | (grants or {}))


def groups_tool() -> Tool:
    tool = Tool.objects.create(name="groups", kind=Tool.Kind.MODEL_QUERY)
    ModelQuery.objects.create(tool=tool, model="auth.Group", **GROUPS_QUERY)
    tool.refresh_from_db()
    return tool


def query_formset(response: Any) -> Any:
    [formset] = [
        inline.formset for inline in response.context["inline_admin_formsets"] if inline.formset.prefix == "query"
    ]
    return formset


def query_form(response: Any) -> Any:
    return query_formset(response).forms[0]


def choices(form: Any, name: str) -> list[tuple[str, str]]:
    return [(value, str(label)) for value, label in form.fields[name].choices]


def values(form: Any, name: str) -> list[str]:
    return [value for value, _label in form.fields[name].choices]


# The form --------------------------------------------------------------------------------------------


DJANGO_AND_OWN_APPS = {"admin", "auth", "contenttypes", "sessions", "messages", "staticfiles", "mcp_tools"}


def offered_models(form: Any) -> list[str]:
    blank, *groups = form.fields["model"].choices
    assert blank == ("", "---------")
    return [value for _app, models in groups for value, _label in models]


def test_the_add_form_offers_every_exposable_model_and_hides_the_rest_until_one_is_chosen(admin_client):
    form = query_form(admin_client.get(f"{TOOLS_URL}add/"))

    offered = offered_models(form)
    # Django's own apps and mcp_tools; the admin's history, permissions, content types, sessions and this app's
    # own tables are excluded by default, and so are tokens and other secret stores of any app.
    assert [label for label in offered if label.partition(".")[0] in DJANGO_AND_OWN_APPS] == ["auth.Group", "auth.User"]
    assert "authtoken.Token" not in offered and "testapp.ApiToken" not in offered and "testapp.Item" in offered
    assert form.fields["model"].help_text == "Save with a model chosen to configure its fields."
    assert isinstance(form.fields["output_fields"].widget, forms.MultipleHiddenInput)
    assert values(form, "output_fields") == []


def test_an_excluded_model_is_not_offered(admin_client, settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "EXCLUDED_MODELS": ["auth.Permission", "testapp.item"]}

    offered = offered_models(query_form(admin_client.get(f"{TOOLS_URL}add/")))

    assert "auth.Permission" not in offered and "testapp.Item" not in offered and "auth.Group" in offered


def test_the_allow_lists_offer_the_models_fields_without_secrets(admin_client):
    response = add_groups_tool(admin_client, model="auth.User", output_fields=[], filters=[], ordering_fields=[])

    form = query_form(response)
    assert values(form, "output_fields") == [
        "id",
        "last_login",
        "is_superuser",
        "username",
        "first_name",
        "last_name",
        "email",
        "is_staff",
        "is_active",
        "date_joined",
    ]
    assert values(form, "search_fields") == ["username", "first_name", "last_name", "email"]
    assert values(form, "aggregate_fields") == ["last_login", "date_joined"]
    assert values(form, "writable_fields") == values(form, "output_fields")[1:]
    assert values(form, "lookup_field") == ["pk", "username"]
    assert values(form, "relations") == []
    assert not [entry for entry in values(form, "filters") if "password" in entry or "regex" in entry]


def test_declared_relations_offer_their_fields_with_readable_labels(admin_client, settings):
    settings.MCP_TOOLS = {**settings.MCP_TOOLS, "EXPOSED_MODELS": ["admin.LogEntry"]}
    response = add_groups_tool(
        admin_client, model="admin.LogEntry", relations=["user"], output_fields=[], filters=[], ordering_fields=[]
    )

    form = query_form(response)
    assert values(form, "relations") == ["user"]  # content_type leads to a model excluded by default
    assert ("user__username", "user → username") in choices(form, "output_fields")
    assert ("user__username__icontains", "user → username: icontains") in choices(form, "filters")
    assert ("action_time__gte", "action_time: gte") in choices(form, "filters")
    assert not [path for path in values(form, "output_fields") if path.startswith("content_type__")]
    assert choices(form, "scope_field") == [("", "---------"), ("user", "user")]


def test_registered_scopes_are_offered(admin_client):
    form = query_form(add_groups_tool(admin_client, output_fields=[]))

    assert choices(form, "scope") == [("", "---------"), *scopes.choices()]


# Saving ----------------------------------------------------------------------------------------------


def test_adding_a_model_query_tool_generates_its_schemas_and_hints(admin_client):
    response = add_groups_tool(admin_client)

    assert response.status_code == 302
    tool = Tool.objects.get(name="groups")
    assert (tool.kind, tool.input_schema, tool.output_schema, hints.annotations_of(tool)) == (
        Tool.Kind.MODEL_QUERY,
        GROUPS_INPUT,
        {
            "type": "object",
            "properties": {
                "results": {"type": "array", "items": GROUP_ROW},
                "count": {"type": "integer", "minimum": 0},
                "next_cursor": {"type": "string"},
            },
            "required": ["results", "count"],
            "additionalProperties": False,
        },
        {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True, "openWorldHint": False},
    )
    assert (tool.query.model, tool.query.output_fields, tool.query.filters) == (
        "auth.Group",
        ["id", "name"],
        ["name__icontains"],
    )


def test_changing_the_configuration_regenerates_the_schemas(admin_client):
    tool = groups_tool()

    response = admin_client.post(
        f"{TOOLS_URL}{tool.pk}/change/",
        tool_fields() | query_fields(tool.query, **GROUPS_QUERY | {"filters": ["name__icontains", "id__in"]}),
    )

    assert response.status_code == 302
    tool.refresh_from_db()
    # PostgreSQL's jsonb keeps keys in its own order, so the stored schema is compared as a set of names.
    assert set(tool.input_schema["properties"]) == {"name__icontains", "id__in", "order_by", "limit", "cursor"}


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({"output_fields": []}, "Choose at least one output field."),
        (
            {"operation": "aggregate", "aggregate_functions": ["sum"]},
            "Choose aggregate functions (and fields for sum, avg, min and max).",
        ),
        ({"operation": "update"}, "Choose the writable fields."),
        ({"default_limit": "0"}, "The default limit must be at least 1."),
    ],
    ids=["list without output", "sum without fields", "update without writable fields", "zero default limit"],
)
def test_a_configuration_error_shows_on_the_form_and_saves_nothing(admin_client, query, error):
    response = add_groups_tool(admin_client, **query)

    assert response.status_code == 200
    assert query_form(response).non_field_errors() == [error]
    assert not Tool.objects.exists()


def test_a_create_tool_that_could_never_save_a_row_shows_the_field_it_needs_and_saves_nothing(admin_client):
    response = add_groups_tool(admin_client, operation="create", writable_fields=[])

    assert response.status_code == 200
    assert query_form(response).non_field_errors() == [
        "Choose the writable fields.",
        "Make 'name' writable: a new row needs it and it has no default.",
    ]
    assert not Tool.objects.exists()


def test_a_filter_that_is_not_offered_is_refused(admin_client):
    response = add_groups_tool(admin_client, filters=["name__regex"])

    assert query_form(response).errors == {
        "filters": ["Select a valid choice. name__regex is not one of the available choices."]
    }
    assert not Tool.objects.exists()


def test_a_saved_value_the_model_no_longer_offers_is_shown_and_explained(admin_client):
    tool = groups_tool()
    ModelQuery.objects.filter(pk=tool.query.pk).update(output_fields=["id", "gone"])
    tool.refresh_from_db()

    page = admin_client.get(f"{TOOLS_URL}{tool.pk}/change/")
    saved = admin_client.post(
        f"{TOOLS_URL}{tool.pk}/change/",
        tool_fields() | query_fields(tool.query, **GROUPS_QUERY | {"output_fields": ["id", "gone"]}),
    )

    assert choices(query_form(page), "output_fields")[-1] == ("gone", "gone (not available)")
    assert query_form(saved).non_field_errors() == ["auth.Group has no field 'gone' that may be exposed."]


def test_a_callable_tool_saves_with_the_query_form_left_as_the_page_shows_it(admin_client):
    page = admin_client.get(f"{TOOLS_URL}add/").content.decode()
    submitted = form_fields(page, "tool_form") | {"name": ["adder"], "callable_name": ["add"]}

    response = admin_client.post(f"{TOOLS_URL}add/", submitted)

    assert response.status_code == 302
    assert (Tool.objects.get(name="adder").kind, ModelQuery.objects.exists()) == ("callable", False)


def test_a_model_query_tool_needs_its_query(admin_client):
    response = admin_client.post(f"{TOOLS_URL}add/", tool_fields() | query_fields(model=""))

    assert query_formset(response).non_form_errors() == ["Choose the model this tool queries."]
    assert not Tool.objects.exists()


def test_a_callable_tool_cannot_have_a_query(admin_client):
    response = admin_client.post(
        f"{TOOLS_URL}add/", tool_fields(kind="callable", callable_name="add") | query_fields(**GROUPS_QUERY)
    )

    assert query_formset(response).non_form_errors() == [
        'A tool of the kind "Registered Python callable" runs no model query: choose the kind "Model query",'
        " or delete the query."
    ]


def test_switching_to_a_callable_drops_the_query_and_takes_the_callables_schemas(admin_client):
    tool = groups_tool()

    response = admin_client.post(
        f"{TOOLS_URL}{tool.pk}/change/",
        tool_fields(kind="callable", callable_name="add") | query_fields(tool.query, DELETE="on", **GROUPS_QUERY),
    )

    assert response.status_code == 302
    tool.refresh_from_db()
    add = registry.get("add")
    assert (tool.kind, tool.input_schema, tool.output_schema) == ("callable", add.input_schema, add.output_schema)
    assert not ModelQuery.objects.exists()


# The tool form of a model-query tool -----------------------------------------------------------------


def test_the_change_form_shows_the_generated_schemas_read_only(admin_client):
    tool = groups_tool()

    response = admin_client.get(f"{TOOLS_URL}{tool.pk}/change/")

    form = response.context["adminform"].form
    assert {"input_schema", "output_schema"} & set(form.fields) == set()
    input_shown, output_shown, _preview = PRE.findall(response.content.decode())
    assert json.loads(html.unescape(input_shown)) == GROUPS_INPUT
    assert json.loads(html.unescape(output_shown)) == tool.output_schema
    # Shown as generated from the query (PostgreSQL's jsonb would reorder the stored copy's keys).
    assert html.unescape(input_shown) == json.dumps(entry_from_row(tool).spec.input_schema, indent=2)


def test_saving_the_tool_form_keeps_the_generated_schemas(admin_client):
    tool = groups_tool()
    generated = tool.input_schema

    response = admin_client.post(
        f"{TOOLS_URL}{tool.pk}/change/",
        tool_fields(title="Groups", input_schema="{}") | query_fields(tool.query, **GROUPS_QUERY),
    )

    assert response.status_code == 302
    tool.refresh_from_db()
    assert (tool.title, tool.input_schema, tool.read_only_hint) == ("Groups", generated, None)


# list_changed ----------------------------------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
async def test_adding_a_model_query_tool_granted_to_a_group_announces_it_once_and_it_answers(ws_session, user):
    def grant() -> int:
        user.user_permissions.add(Permission.objects.get(codename="view_group"))
        return int(user.groups.create(name="Support").pk)

    def add_in_admin() -> None:
        from django.contrib.auth import get_user_model

        client = Client()
        client.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))
        assert add_groups_tool(client, grant_forms(groups=[support])).status_code == 302

    support = await db_call(grant)
    client = await ws_session()

    await db_call(add_in_admin)

    tools = await heard_once(client)
    assert tools["groups"]["inputSchema"] == GROUPS_INPUT
    reply = await client.request("tools/call", {"name": "groups", "arguments": {"name__icontains": "supp"}})
    assert reply["result"]["structuredContent"] == {"results": [{"id": support, "name": "Support"}], "count": 1}


def test_a_model_query_saved_without_a_lookup_field_finds_rows_by_primary_key(admin_client):
    # The add page has no fields to offer before a model is chosen, so the lookup field cannot be required.
    response = add_groups_tool(admin_client, lookup_field="")

    assert response.status_code == 302, response.context and response.context["errors"]
    assert Tool.objects.get(name="groups").query.lookup_field == "pk"
