"""The tool admin's "Try it" page (a real call as a chosen user, audited) and its "What clients see" page."""

from __future__ import annotations

import html
import json
import re
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.cache import cache
from django.test import Client

from mcp_tools.admin.trial import MAX_ARGUMENT_BYTES, ask
from mcp_tools.models import AccessToken, GroupGrant, Tool, ToolCall, UserGrant
from mcp_tools.protocol import versions
from mcp_tools.tools.registry import registry
from tests.admin_users import staff
from tests.live import query_data
from tests.live.query_data import READ_PERMISSIONS, grant
from tests.testapp.models import Item

# The trial runs the server on an event loop and threads of its own, which see committed rows only.
pytestmark = pytest.mark.django_db(transaction=True)

TOOLS_URL = "/admin/mcp_tools/tool/"
STRUCTURED = re.compile(r'<pre class="mcp-json" id="try-structured">(.*?)</pre>', re.S)
ERROR = re.compile(r'<dd id="try-error"><code>(.*?)</code> (.*?)</dd>', re.S)
TEXTS = re.compile(r'<dd id="try-text">(.*?)</dd>', re.S)
REFUSED = re.compile(r'<li><span class="username">(.*?)</span>: (.*?)</li>')
VISIBLE = re.compile(r'<ul id="visible-users">(.*?)</ul>', re.S)


@pytest.fixture
def owner() -> Client:
    """An admin who may try tools, without being a superuser."""
    return staff("owner", "view_tool", "change_tool", "try_tool")


@pytest.fixture
def items() -> Tool:
    """The seeded users and the "items" model-query tool, granted to alice alone, who may read items."""
    users = query_data.seed()
    query_data.make_tools(("items",))
    tool = Tool.objects.get(name="items")
    tool.everyone = False
    tool.save()
    UserGrant.objects.create(tool=tool, user=users["alice"])
    for user in users.values():
        grant(user, *READ_PERMISSIONS)
    return tool


@pytest.fixture
def adder() -> Tool:
    cache.clear()  # rate-limit counters
    add = registry.get("add")
    assert add is not None
    return Tool.objects.create(
        name="adder",
        callable_name="add",
        everyone=True,
        input_schema=add.input_schema,
        output_schema=add.output_schema,
    )


def try_url(tool: Tool) -> str:
    return f"{TOOLS_URL}{tool.pk}/try/"


def run(client: Client, tool: Tool, user: str, **fields: Any) -> Any:
    response = client.post(try_url(tool), {"user": user, **fields})
    assert response.status_code == 200
    return response


def page(response: Any) -> str:
    return response.content.decode()


def structured(response: Any) -> Any:
    [found] = STRUCTURED.findall(page(response))
    return json.loads(html.unescape(found))


def error(response: Any) -> tuple[str, str]:
    [(code, message)] = ERROR.findall(page(response))
    return code, html.unescape(message)


def texts(response: Any) -> str:
    [found] = TEXTS.findall(page(response))
    return html.unescape(found)


def audited() -> list[tuple[str, str, str, str, str]]:
    rows = ToolCall.objects.order_by("pk")
    return [(r.username, r.tool_name, r.transport, r.client, r.outcome) for r in rows]


# Who may open the page -----------------------------------------------------------------------------------


def test_the_change_page_offers_try_it_only_to_admins_who_may_try_tools(owner, adder):
    editor = staff("editor", "view_tool", "change_tool")

    offered = owner.get(f"{TOOLS_URL}{adder.pk}/change/")
    withheld = editor.get(f"{TOOLS_URL}{adder.pk}/change/")

    assert 'id="try-tool-link"' in page(offered) and try_url(adder) in page(offered)
    assert 'id="try-tool-link"' not in page(withheld)
    assert 'id="clients-see-link"' in page(withheld)


def test_an_admin_who_may_change_tools_but_not_try_them_gets_403_and_no_call(adder, user):
    editor = staff("editor", "view_tool", "change_tool")

    opened = editor.get(try_url(adder))
    posted = editor.post(try_url(adder), {"user": "alice", "arg_a": "1", "arg_b": "2"})

    assert (opened.status_code, posted.status_code) == (403, 403)
    assert not ToolCall.objects.exists()


def test_a_user_who_is_not_staff_never_reaches_the_page(adder, user):
    user.user_permissions.add(Permission.objects.get(codename="try_tool"))
    outsider = Client()
    outsider.force_login(user)

    response = outsider.post(try_url(adder), {"user": "alice", "arg_a": "1", "arg_b": "2"})

    assert response.status_code == 302 and "/admin/login/" in response["Location"]
    assert not ToolCall.objects.exists()


def test_the_form_is_csrf_protected(adder, user):
    owner = Client(enforce_csrf_checks=True)
    owner.force_login(get_user_model().objects.create_superuser("root", "root@example.com", "pw"))

    response = owner.post(try_url(adder), {"user": "alice", "arg_a": "1", "arg_b": "2"})

    assert response.status_code == 403
    assert not ToolCall.objects.exists()


# The form ------------------------------------------------------------------------------------------------


def test_the_arguments_form_is_generated_from_the_tools_input_schema(owner, items):
    response = owner.get(try_url(items), {"user": "alice"})

    text = page(response)
    assert '<input type="hidden" name="user" value="alice" id="id_user">' in text
    assert re.search(r'<input type="number" name="arg_limit" value="10" min="1" max="25"[^>]*id="id_arg_limit"', text)
    assert re.search(r'<select name="arg_order_by"[^>]*id="id_arg_order_by">', text)
    assert re.search(r'<input type="text" name="arg_price"', text)  # a decimal, written as a string
    assert re.search(r'<textarea name="arg_id__in"[^>]*>\s*</textarea>', text)  # a list of ids, as JSON
    assert '<option value="0">name</option>' in text
    assert re.search(r'<input type="text" name="arg_name__icontains"[^>]*maxlength="\d+"', text)
    assert re.search(r'<textarea name="raw_arguments"[^>]*id="id_raw_arguments"', text)
    assert 'id="try-run"' in text


def test_only_active_users_are_offered_and_an_inactive_one_is_refused(owner, adder, django_user_model):
    django_user_model.objects.create_user("gone", is_active=False)
    django_user_model.objects.create_user("here")

    offered = owner.get(try_url(adder))
    refused = run(owner, adder, "gone", arg_a="1", arg_b="2")

    assert '<option value="here">here</option>' in page(offered)
    assert 'value="gone"' not in page(offered)
    assert "Choose an active user." in page(refused)
    assert not ToolCall.objects.exists()


# Trials --------------------------------------------------------------------------------------------------


def test_trying_a_model_query_tool_as_a_user_who_may_use_it_shows_what_the_client_gets(owner, items):
    response = run(owner, items, "alice", arg_limit="2", arg_order_by="0")

    result = structured(response)
    expected = list(
        Item.objects.filter(account__manager__username="alice").order_by("name", "pk").values_list("pk", flat=True)
    )
    assert [row["id"] for row in result["results"]] == expected[:2]
    assert json.loads(texts(response).removeprefix('<pre class="mcp-json">').removesuffix("</pre>")) == result
    assert '<dd id="try-is-error">false</dd>' in page(response)
    assert re.search(r'<dd id="try-time">[\d.]+ ms</dd>', page(response))
    assert '<details id="try-raw">' in page(response)
    assert audited() == [("alice", "items", "admin", "admin trial by owner", "ok")]
    assert ToolCall.objects.get().arguments == {"limit": 2, "order_by": "name"}


def test_a_user_the_tool_is_not_granted_to_gets_the_unknown_tool_answer_and_the_call_is_denied(owner, items):
    response = run(owner, items, "bob", arg_limit="2")
    bob = get_user_model().objects.get(username="bob")
    unknown = ask(bob, None, "", "tools/call", {"name": "no_such_tool", "arguments": {}})

    assert error(response) == ("-32602", "Unknown tool: items")
    assert unknown is not None and unknown["error"]["message"] == "Unknown tool: no_such_tool"
    assert unknown["error"]["code"] == -32602
    assert 'id="try-not-visible"' in page(response)
    assert audited()[0] == ("bob", "items", "admin", "admin trial by owner", "denied")


def test_invalid_arguments_show_the_validation_message(owner, items):
    response = run(owner, items, "alice", raw_arguments='{"limit": 0}')

    assert '<dd id="try-is-error">true</dd>' in page(response)
    assert "Invalid arguments: limit: 0 is less than the minimum of 1" in texts(response)
    assert audited() == [("alice", "items", "admin", "admin trial by owner", "invalid")]


def test_raw_arguments_must_be_a_json_object_within_the_cap(owner, adder, user):
    not_object = run(owner, adder, "alice", raw_arguments="[1, 2]")
    too_large = run(owner, adder, "alice", raw_arguments=json.dumps({"a": "x" * MAX_ARGUMENT_BYTES}))

    assert "The arguments must be a JSON object." in page(not_object)
    assert f"Ensure this value has at most {MAX_ARGUMENT_BYTES} characters" in page(too_large)
    assert not ToolCall.objects.exists()


def test_hostile_json_is_a_form_error_and_calls_nothing(owner, items):
    deep = "[" * 5000 + "]" * 5000
    nested_raw = run(owner, items, "alice", raw_arguments='{"a": ' + deep + "}")
    nested_field = run(owner, items, "alice", arg_id__in=deep)
    not_json = run(owner, items, "alice", arg_id__in="[1, NaN]")

    assert "Message nested deeper than" in page(nested_raw) or "nested too deeply" in page(nested_raw)
    assert "nested" in page(nested_field)
    assert "Enter valid JSON." in page(not_json)
    assert 'id="try-result"' not in page(nested_raw) + page(nested_field) + page(not_json)
    assert not ToolCall.objects.exists()


def test_a_json_field_sends_its_value(owner, items):
    ids = list(Item.objects.filter(account__manager__username="alice").order_by("pk").values_list("pk", flat=True))

    response = run(owner, items, "alice", arg_id__in=json.dumps(ids[:3]))

    assert [row["id"] for row in structured(response)["results"]] == ids[:3]
    assert ToolCall.objects.get().arguments == {"id__in": ids[:3]}


def test_the_tools_rate_limit_binds_on_trials(owner, adder, user):
    adder.rate_limit = "1/m"
    adder.save()

    first = run(owner, adder, "alice", arg_a="1", arg_b="2")
    second = run(owner, adder, "alice", arg_a="1", arg_b="2")

    assert structured(first) == {"result": 3}
    assert "Rate limit 1/m exceeded" in texts(second)
    assert [row[-1] for row in audited()] == ["ok", "rate_limited"]


def test_a_chosen_token_is_the_calls_credential(owner, adder, user, django_user_model):
    token, _secret = AccessToken.objects.issue(user, name="laptop")
    other, _secret = AccessToken.objects.issue(django_user_model.objects.create_user("bob"), name="bobs")

    offered = owner.get(try_url(adder), {"user": "alice"})
    used = run(owner, adder, "alice", token=str(token.pk), arg_a="2", arg_b="2")
    refused = run(owner, adder, "alice", token=str(other.pk), arg_a="2", arg_b="2")

    assert f'<option value="{token.pk}">' in page(offered) and f'value="{other.pk}"' not in page(offered)
    assert structured(used) == {"result": 4}
    assert "Select a valid choice." in page(refused)
    assert list(ToolCall.objects.values_list("token_id", "client")) == [(token.pk, "admin trial by owner")]


def test_only_a_superuser_may_try_a_tool_as_a_superuser(owner, adder):
    get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    chief = staff("chief", superuser=True)

    offered = owner.get(try_url(adder))
    refused = run(owner, adder, "root", arg_a="1", arg_b="2")
    allowed = run(chief, adder, "root", arg_a="1", arg_b="2")

    assert 'value="root"' not in page(offered)
    assert "Only a superuser may try a tool as a superuser." in page(refused)
    assert structured(allowed) == {"result": 3}
    assert audited() == [("root", "adder", "admin", "admin trial by chief", "ok")]


# What clients see ----------------------------------------------------------------------------------------


def test_the_clients_page_shows_the_definition_for_every_revision(owner, adder):
    response = owner.get(f"{TOOLS_URL}{adder.pk}/clients/")

    text = page(response)
    for revision in (*versions.LEGACY, *versions.MODERN):
        assert str(revision.wire) in text
    # The earliest draft numbered its revision; the page says what the bare number is.
    assert "1 (the earliest draft's number)" in html.unescape(text)
    definitions = [
        json.loads(html.unescape(d)) for d in re.findall(r'<pre class="mcp-json definition">(.*?)</pre>', text, re.S)
    ]
    assert {d["name"] for d in definitions} == {"adder"}
    assert any("title" in d for d in definitions) and any("title" not in d for d in definitions)


def test_a_group_member_without_the_model_permission_is_reported_unable_to_see_it_as_tools_list_agrees(owner):
    users = query_data.seed()
    query_data.make_tools(("items",))
    tool = Tool.objects.get(name="items")
    tool.everyone = False
    tool.save()
    north = Group.objects.get(name="north")  # alice and carol
    GroupGrant.objects.create(tool=tool, group=north)
    alice = grant(users["alice"], *READ_PERMISSIONS)
    carol = get_user_model().objects.get(username="carol")  # no permission to view items
    owner_user = get_user_model().objects.get(username="owner")
    owner_user.user_permissions.add(Permission.objects.get(codename="view_user"))

    response = owner.get(f"{TOOLS_URL}{tool.pk}/clients/")
    alice_list = ask(alice, None, "", "tools/list", {})
    carol_list = ask(carol, None, "", "tools/list", {})

    text = page(response)
    refused = dict((name, html.unescape(why)) for name, why in REFUSED.findall(text))
    assert refused == {"carol": "lacks the permissions testapp.view_account, testapp.view_item"}
    assert "Active superusers see every enabled tool, granted or not (SUPERUSERS_SEE_ALL is on)" in text
    [visible] = VISIBLE.findall(text)
    assert re.findall(r"<li>(.*?)</li>", visible) == ["alice"]
    assert "north (2 members)" in text
    assert alice_list is not None and carol_list is not None
    assert [t["name"] for t in alice_list["result"]["tools"]] == ["items"]
    assert carol_list["result"]["tools"] == []


def test_the_clients_page_names_no_users_to_an_admin_who_may_not_view_users(owner, adder):
    response = owner.get(f"{TOOLS_URL}{adder.pk}/clients/")

    assert "You need the permission to view users" in page(response)
    assert 'id="visible-users"' not in page(response)


def test_the_clients_page_needs_the_permission_to_view_tools(adder):
    stranger = staff("stranger")

    assert stranger.get(f"{TOOLS_URL}{adder.pk}/clients/").status_code == 403
