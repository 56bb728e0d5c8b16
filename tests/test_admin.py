"""The admin: tool forms (callable choices, schema validation, preview), actions, and token issuing."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.contrib.messages import WARNING
from django.contrib.messages import get_messages as stored_messages

from mcp_tools.access.authentication import user_for_token
from mcp_tools.models import AccessToken, GroupGrant, Tool, UserGrant, hash_token
from mcp_tools.tools.registry import registry
from tests.admin_forms import GRANT_PREFIXES, grant_forms, management_form, tool_form

pytestmark = pytest.mark.django_db

TOOLS_URL = "/admin/mcp_tools/tool/"
TOKENS_URL = "/admin/mcp_tools/accesstoken/"
PREVIEW = re.compile(r"field-definition_preview.*?<pre>(.*?)</pre>", re.S)
SHOWN_ONCE = re.compile(
    r"Copy this token now; it will not be shown again: <code>(mcp_[A-Za-z0-9_-]+)</code> "
    r"(?:It expires on [^<>]+\.|It never expires\.)"
)


def form_errors(response: Any) -> dict[str, list[str]]:
    return {field: list(errors) for field, errors in response.context["adminform"].form.errors.items()}


def texts(response: Any) -> list[tuple[int, str]]:
    return [(m.level, str(m.message)) for m in response.context["messages"]]


# Tool form -----------------------------------------------------------------------------------------


def test_the_add_form_offers_every_registered_callable(admin_client):
    response = admin_client.get(f"{TOOLS_URL}add/")

    field = response.context["adminform"].form.fields["callable_name"]
    assert list(field.choices) == [("", "---------"), *registry.choices()]


def test_a_valid_tool_saves_and_takes_the_callables_schemas_when_left_blank(admin_client):
    response = admin_client.post(f"{TOOLS_URL}add/", tool_form(title="Adder"))

    assert response.status_code == 302
    tool = Tool.objects.get(name="adder")
    add = registry.get("add")
    assert (tool.title, tool.enabled, tool.input_schema, tool.output_schema) == (
        "Adder",
        True,
        add.input_schema,
        add.output_schema,
    )


def test_a_given_input_schema_is_kept(admin_client):
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}

    response = admin_client.post(f"{TOOLS_URL}add/", tool_form(input_schema=schema))

    assert response.status_code == 302
    assert Tool.objects.get(name="adder").input_schema == schema


@pytest.mark.parametrize(
    ("schema", "error"),
    [
        (
            {"type": "object", "properties": {"a": {"type": "integer", "minimum": "zero"}}},
            "Not a valid JSON Schema at properties/a/minimum: 'zero' is not of type 'number'",
        ),
        ({"type": "array", "items": {"type": "integer"}}, 'The schema\'s root must have "type": "object".'),
        ({"properties": {}}, 'The schema\'s root must have "type": "object".'),
        (["type", "object"], "The schema must be a JSON object."),
        (
            {"type": "object", "properties": {"a": {"$ref": "https://schemas.example/a.json"}}},
            "The schema may not reference remote documents ($ref must start with '#').",
        ),
        ("{not json", "Enter a valid JSON."),
    ],
    ids=["not JSON Schema", "array root", "no root type", "not an object", "remote $ref", "not JSON"],
)
def test_an_invalid_input_schema_is_a_form_error_and_saves_nothing(admin_client, schema, error):
    response = admin_client.post(f"{TOOLS_URL}add/", tool_form(input_schema=schema))

    assert response.status_code == 200
    assert form_errors(response) == {"input_schema": [error]}
    assert not Tool.objects.exists()


def test_an_invalid_output_schema_is_a_form_error(admin_client):
    response = admin_client.post(f"{TOOLS_URL}add/", tool_form(output_schema={"type": "string"}))

    assert form_errors(response) == {"output_schema": ['The schema\'s root must have "type": "object".']}
    assert not Tool.objects.exists()


def test_an_unregistered_callable_is_refused(admin_client):
    response = admin_client.post(f"{TOOLS_URL}add/", tool_form(callable_name="not_registered"))

    [refusal, *_] = form_errors(response)["callable_name"]
    assert refusal == "Select a valid choice. not_registered is not one of the available choices."
    assert not Tool.objects.exists()


def test_a_callable_tool_needs_a_callable(admin_client):
    response = admin_client.post(f"{TOOLS_URL}add/", tool_form(callable_name=""))

    assert form_errors(response) == {"callable_name": ["Choose the registered callable this tool runs."]}


def test_a_tool_whose_callable_is_gone_shows_it_and_cannot_be_saved_until_changed(admin_client):
    orphan = Tool.objects.create(name="orphan", callable_name="gone")

    page = admin_client.get(f"{TOOLS_URL}{orphan.pk}/change/")
    saved = admin_client.post(f"{TOOLS_URL}{orphan.pk}/change/", tool_form(name="orphan", callable_name="gone"))

    field = page.context["adminform"].form.fields["callable_name"]
    assert list(field.choices)[-1] == ("gone", "gone (not registered)")
    assert form_errors(saved) == {"callable_name": ["No callable is registered as gone."]}


@pytest.mark.parametrize("name", ["has space", "x" * 65, "emoji🙂", "a/b"])
def test_a_bad_tool_name_is_a_form_error(admin_client, name):
    response = admin_client.post(f"{TOOLS_URL}add/", tool_form(name=name))

    assert "name" in form_errors(response)
    assert not Tool.objects.exists()


# Access and grants ---------------------------------------------------------------------------------


def grant_formset(response: Any, prefix: str) -> Any:
    [formset] = [
        inline.formset for inline in response.context["inline_admin_formsets"] if inline.formset.prefix == prefix
    ]
    return formset


def test_the_tool_form_offers_the_access_fields_and_both_grant_inlines(admin_client):
    response = admin_client.get(f"{TOOLS_URL}add/")

    assert {"everyone", "rate_limit", "timeout_seconds", "max_concurrent_calls"} <= set(
        response.context["adminform"].form.fields
    )
    assert [inline.formset.prefix for inline in response.context["inline_admin_formsets"]] == [
        "query",
        "sources",
        *GRANT_PREFIXES,
    ]


def test_a_tool_added_in_the_admin_is_granted_to_nobody_unless_the_form_says_so(admin_client):
    admin_client.post(f"{TOOLS_URL}add/", tool_form())

    tool = Tool.objects.get(name="adder")
    assert (tool.everyone, tool.user_grants.exists(), tool.group_grants.exists()) == (False, False, False)


def test_grants_and_limits_made_in_the_tool_form_are_saved(admin_client, user, django_user_model):
    bob = django_user_model.objects.create_user("bob")
    sales = Group.objects.create(name="sales")

    response = admin_client.post(
        f"{TOOLS_URL}add/",
        tool_form(everyone="on", rate_limit="30/m", timeout_seconds="5", max_concurrent_calls="2")
        | grant_forms(users=[user.pk, bob.pk], groups=[sales.pk]),
    )

    assert response.status_code == 302
    tool = Tool.objects.get(name="adder")
    assert (tool.everyone, tool.rate_limit, tool.timeout_seconds, tool.max_concurrent_calls) == (True, "30/m", 5, 2)
    assert sorted(UserGrant.objects.filter(tool=tool).values_list("user__username", flat=True)) == ["alice", "bob"]
    assert list(GroupGrant.objects.filter(tool=tool).values_list("group__name", flat=True)) == ["sales"]


def test_granting_the_same_user_twice_is_a_form_error_and_saves_nothing(admin_client, user):
    response = admin_client.post(f"{TOOLS_URL}add/", tool_form() | grant_forms(users=[user.pk, user.pk]))

    assert response.status_code == 200
    assert grant_formset(response, "user_grants").non_form_errors() == ["Please correct the duplicate data for user."]
    assert not Tool.objects.exists()


def test_a_malformed_rate_limit_is_a_form_error(admin_client):
    response = admin_client.post(f"{TOOLS_URL}add/", tool_form(rate_limit="fast"))

    assert form_errors(response) == {"rate_limit": ['Write a rate like "30/m", "1000/h" or "10/5s".']}
    assert not Tool.objects.exists()


def test_a_grant_deleted_in_the_change_form_is_removed(admin_client, user):
    tool = Tool.objects.create(name="adder", callable_name="add")
    sales = Group.objects.create(name="sales")
    grant = UserGrant.objects.create(tool=tool, user=user)
    GroupGrant.objects.create(tool=tool, group=sales)
    kept = management_form("group_grants", total=1, initial=1) | {
        "group_grants-0-id": str(tool.group_grants.get().pk),
        "group_grants-0-tool": str(tool.pk),
        "group_grants-0-group": str(sales.pk),
    }
    deleted = management_form("user_grants", total=1, initial=1) | {
        "user_grants-0-id": str(grant.pk),
        "user_grants-0-tool": str(tool.pk),
        "user_grants-0-user": str(user.pk),
        "user_grants-0-DELETE": "on",
    }

    response = admin_client.post(f"{TOOLS_URL}{tool.pk}/change/", tool_form() | kept | deleted)

    assert response.status_code == 302
    assert (UserGrant.objects.exists(), list(GroupGrant.objects.values_list("group__name", flat=True))) == (
        False,
        ["sales"],
    )


# Change list and actions ---------------------------------------------------------------------------


def test_the_change_list_shows_every_tool(admin_client, tools):
    response = admin_client.get(TOOLS_URL)

    assert [tool.name for tool in response.context["cl"].result_list] == [t.key for t in registry.all()]


@pytest.mark.parametrize(
    ("action", "start", "expected", "message"),
    [
        ("disable_tools", True, False, "2 tool(s) updated."),
        ("enable_tools", False, True, "2 tool(s) updated."),
        ("enable_tools", True, True, "0 tool(s) updated."),
    ],
)
def test_enable_and_disable_actions_change_the_selected_tools_only(
    admin_client, tools, action, start, expected, message
):
    Tool.objects.update(enabled=start)
    selected = list(Tool.objects.filter(name__in=["add", "greet"]).values_list("pk", flat=True))

    response = admin_client.post(TOOLS_URL, {"action": action, "_selected_action": selected}, follow=True)

    assert texts(response) == [(25, message)]
    assert dict(Tool.objects.values_list("name", "enabled")) == {
        key: expected if key in ("add", "greet") else start for key in (t.key for t in registry.all())
    }


def test_the_definition_preview_shows_the_tools_list_entry(admin_client, tools):
    tool = Tool.objects.get(name="add")

    response = admin_client.get(f"{TOOLS_URL}{tool.pk}/change/")

    [preview] = PREVIEW.findall(response.content.decode())
    assert json.loads(html.unescape(preview)) == {
        "name": "add",
        "title": "Add two integers",
        "description": "Add two integers.",
        "inputSchema": tool.input_schema,
        "outputSchema": tool.output_schema,
        "annotations": {"title": "Add two integers", "readOnlyHint": True},
    }


def test_the_add_form_has_no_preview_yet(admin_client):
    response = admin_client.get(f"{TOOLS_URL}add/")

    assert PREVIEW.findall(response.content.decode()) == []


# Access tokens -------------------------------------------------------------------------------------


def test_adding_a_token_shows_the_secret_once_and_stores_only_its_digest(admin_client, user):
    response = admin_client.post(
        f"{TOKENS_URL}add/",
        {"user": user.pk, "name": "laptop", "expires_at_0": "", "expires_at_1": "", "expiry": "never"},
        follow=True,
    )

    [warning] = [text for level, text in texts(response) if level == WARNING]
    raw = SHOWN_ONCE.fullmatch(warning).group(1)
    token = AccessToken.objects.get()
    assert (token.user, token.name, token.digest, token.hint, token.expires_at) == (
        user,
        "laptop",
        hash_token(raw),
        raw[:12],
        None,
    )
    assert raw not in {str(value) for value in AccessToken.objects.values().get().values()}
    assert user_for_token(raw) == (user, token)


def test_the_token_pages_never_show_the_secret_again(admin_client, user):
    admin_client.post(f"{TOKENS_URL}add/", {"user": user.pk, "name": "ci", "expires_at_0": "", "expires_at_1": ""})
    [message] = [m for m in stored_messages(admin_client.get(TOKENS_URL).wsgi_request) if m.level == WARNING]
    raw = SHOWN_ONCE.fullmatch(str(message.message)).group(1)
    token = AccessToken.objects.get()

    change = admin_client.get(f"{TOKENS_URL}{token.pk}/change/").content.decode()
    listing = admin_client.get(TOKENS_URL).content.decode()

    assert raw not in change and raw not in listing
    assert token.hint in change and token.hint in listing


def test_the_token_change_form_keeps_the_user_and_digest_read_only(admin_client, user, django_user_model):
    token, _raw = AccessToken.objects.issue(user, name="old")
    bob = django_user_model.objects.create_user("bob")

    response = admin_client.post(
        f"{TOKENS_URL}{token.pk}/change/",
        {"user": bob.pk, "name": "renamed", "expires_at_0": "", "expires_at_1": ""},
    )

    assert response.status_code == 302
    after = AccessToken.objects.get()
    assert (after.user, after.name, after.digest, after.hint) == (user, "renamed", token.digest, token.hint)
