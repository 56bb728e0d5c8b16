"""Attacks on the admin's trial, "What clients see", import, history and dashboard pages, each kept as a test.

Each test plays one attacker: a staff user holding only some permissions, the author of a hostile tools file,
or a client whose tool names, arguments and usernames end up on the admin's pages.
"""

from __future__ import annotations

import html
import io
import json
import re
import sys
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.core.cache import cache
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from mcp_tools.admin.dashboard import TOP_ROWS
from mcp_tools.admin.forms import ModelQueryForm
from mcp_tools.admin.history import PER_PAGE
from mcp_tools.admin.trial import ask
from mcp_tools.models import AccessToken, GroupGrant, ModelQuery, Tool, ToolCall, ToolChange, UserGrant
from mcp_tools.tools.registry import registry
from mcp_tools.tools.transfer.document import MAX_NAMES
from tests.admin_users import staff
from tests.live import query_data
from tests.transfer_files import file_text, query_entry, tool_entry

# The trial runs the server on an event loop and threads of its own, which see committed rows only.
pytestmark = pytest.mark.django_db(transaction=True)

TOOLS_URL = "/admin/mcp_tools/tool/"
IMPORT_URL = f"{TOOLS_URL}import/"
DASHBOARD_URL = "/admin/mcp_tools/toolcall/dashboard/"
CHANGES_URL = "/admin/mcp_tools/toolchange/"
PAYLOAD = re.compile(r'name="payload" value="([^"]+)"')
DEFINITIONS = re.compile(r'<pre class="mcp-json definition">(.*?)</pre>', re.S)
HOSTILE = '<script>alert("x")</script>'
IMPORT_ROWS = ("modelquery", "searchsource", "usergrant", "groupgrant", "ratelimitoverride")
IMPORTER = (
    "add_tool",
    "change_tool",
    "view_tool",
    *(f"{action}_{model}" for model in IMPORT_ROWS for action in ("add", "change", "delete")),
)


QUERY_ATTACKS: list[dict[str, Any]] = [
    {"model": "auth.Permission", "output_fields": ["name"]},
    {"model": "mcp_tools.AccessToken", "output_fields": ["name"]},
    {"model": "testapp.Account", "output_fields": ["api_key"]},
    {"model": "testapp.Account", "output_fields": ["name"], "filters": ["api_key__startswith"]},
    {"model": "testapp.Account", "output_fields": ["name"], "ordering_fields": ["api_key"]},
    {"model": "testapp.Account", "output_fields": ["name"], "search_fields": ["api_key"]},
    {"model": "testapp.Account", "output_fields": ["name"], "group_by_fields": ["api_key"]},
    {"model": "testapp.Account", "output_fields": ["name"], "lookup_field": "api_key", "operation": "get"},
    {
        "model": "testapp.Account",
        "output_fields": ["name"],
        "relations": ["manager"],
        "filters": ["manager__password__exact"],
    },
    {"model": "testapp.Account", "relations": ["manager"], "output_fields": ["name", "manager__password"]},
    {"model": "testapp.Account", "output_fields": ["name"], "scope_field": "api_key"},
    {
        "model": "testapp.Item",
        "output_fields": ["name"],
        "relations": ["account"],
        "search_fields": ["account__api_key"],
    },
    {
        "model": "testapp.Item",
        "operation": "aggregate",
        "aggregate_functions": ["max"],
        "aggregate_fields": ["account__api_key"],
        "relations": ["account"],
    },
    {
        "model": "testapp.Account",
        "operation": "create",
        "output_fields": ["name"],
        "writable_fields": ["name", "tenant", "api_key"],
        "scope_field": "manager",
    },
    {"model": "testapp.Item", "output_fields": ["name"], "scope": "no.such.scope"},
]


def callable_tool(name: str = "adder", callable_name: str = "add", **fields: Any) -> Tool:
    cache.clear()  # rate-limit counters
    registered = registry.get(callable_name)
    assert registered is not None
    return Tool.objects.create(
        name=name,
        callable_name=callable_name,
        input_schema=registered.input_schema,
        output_schema=registered.output_schema,
        **({"everyone": True} | fields),
    )


def try_url(tool: Tool) -> str:
    return f"{TOOLS_URL}{tool.pk}/try/"


def page(response: Any) -> str:
    return response.content.decode()


def calls() -> list[tuple[str, str, str, str]]:
    return [(r.username, r.tool_name, r.client, r.outcome) for r in ToolCall.objects.order_by("pk")]


def refused_for_exposure(error: str) -> bool:
    return any(reason in error for reason in ("may not be exposed", "that may be exposed", "No scope is registered"))


def upload(client: Client, text: str, name: str = "tools.json", **options: Any) -> Any:
    return client.post(IMPORT_URL, {"file": SimpleUploadedFile(name, text.encode()), **options})


def payload_of(response: Any) -> str:
    match = PAYLOAD.search(page(response))
    assert match is not None, "no Apply form"
    return match.group(1)


# Try it: who may reach it and as whom ------------------------------------------------------------------


@pytest.mark.parametrize("method", ["get", "post", "head", "put", "delete", "options"])
def test_an_admin_without_try_tool_is_refused_by_every_method_and_nothing_is_called(method):
    tool = callable_tool()
    get_user_model().objects.create_user("alice")
    editor = staff("editor", "view_tool", "change_tool", "add_tool", "delete_tool")

    response = getattr(editor, method)(try_url(tool), {"user": "alice", "arg_a": "1", "arg_b": "2"})

    assert response.status_code == 403
    assert not ToolCall.objects.exists()


def test_try_tool_alone_shows_no_tool_an_admin_may_not_view_nor_confirms_its_id():
    hidden = callable_tool("hidden", enabled=False, everyone=False)
    get_user_model().objects.create_user("alice")
    tester = staff("tester", "try_tool")

    responses = [
        tester.get(try_url(hidden), {"user": "alice"}),
        tester.post(try_url(hidden), {"user": "alice", "arg_a": "1", "arg_b": "2"}),
        tester.get(f"{TOOLS_URL}999999/try/"),
        tester.get(f"{TOOLS_URL}999999/clients/"),
    ]

    assert [response.status_code for response in responses] == [403, 403, 403, 403]
    assert not any("hidden" in page(response) for response in responses)
    assert not ToolCall.objects.exists()


def test_a_non_superuser_admin_cannot_try_as_a_superuser_by_any_field():
    tool = callable_tool()
    root = get_user_model().objects.create_superuser("root", "root@example.com", "pw")
    get_user_model().objects.create_user("alice")
    roots_token, _secret = AccessToken.objects.issue(root, name="root's")
    owner = staff("owner", "view_tool", "try_tool")

    by_name = owner.post(try_url(tool), {"user": "root", "arg_a": "1", "arg_b": "2"})
    by_pk = owner.post(try_url(tool), {"user": str(root.pk), "arg_a": "1", "arg_b": "2"})
    by_token = owner.post(try_url(tool), {"user": "alice", "token": str(roots_token.pk), "arg_a": "1", "arg_b": "2"})
    by_case = owner.post(try_url(tool), {"user": "ROOT", "arg_a": "1", "arg_b": "2"})
    by_list = owner.post(try_url(tool), {"user": ["alice", "root"], "arg_a": "1", "arg_b": "2"})
    chosen_by_get = owner.get(try_url(tool), {"user": "root"})

    for response in (by_name, by_pk, by_token, by_case):
        assert response.status_code == 200 and 'id="try-result"' not in page(response)
    # A repeated field is read as its last value, on the form and in the call alike.
    assert by_list.status_code == 200 and 'id="try-result"' not in page(by_list)
    assert 'id="try-form"' not in page(chosen_by_get)  # root is not chosen: the user list is offered again
    assert not ToolCall.objects.exists()


def test_an_inactive_user_and_their_tokens_cannot_be_tried_as():
    tool = callable_tool()
    sleeper = get_user_model().objects.create_user("sleeper", is_active=False)
    token, _secret = AccessToken.objects.issue(sleeper, name="old")
    owner = staff("owner", "view_tool", "try_tool")

    response = owner.post(try_url(tool), {"user": "sleeper", "token": str(token.pk), "arg_a": "1", "arg_b": "2"})

    assert response.status_code == 200 and 'id="try-result"' not in page(response)
    assert not ToolCall.objects.exists()


def test_an_expired_or_deleted_token_cannot_be_chosen():
    tool = callable_tool()
    alice = get_user_model().objects.create_user("alice")
    expired, _secret = AccessToken.objects.issue(alice, name="expired")
    expired.expires_at = timezone.now() - timedelta(minutes=1)
    expired.save()
    revoked, _secret = AccessToken.objects.issue(alice, name="revoked")
    revoked_pk = revoked.pk
    revoked.delete()
    owner = staff("owner", "view_tool", "try_tool")

    for token in (expired.pk, revoked_pk):
        response = owner.post(try_url(tool), {"user": "alice", "token": str(token), "arg_a": "1", "arg_b": "2"})
        assert response.status_code == 200 and "Select a valid choice." in page(response)
    assert not ToolCall.objects.exists()


def test_a_trial_cannot_call_a_disabled_or_ungranted_tool_and_the_refusal_is_audited():
    disabled = callable_tool("off", enabled=False)
    ungranted = callable_tool("mine", everyone=False)
    get_user_model().objects.create_user("alice")
    owner = staff("owner", "view_tool", "try_tool")

    answers = [
        page(owner.post(try_url(tool), {"user": "alice", "arg_a": "1", "arg_b": "2"})) for tool in (disabled, ungranted)
    ]

    for text in answers:
        assert "Unknown tool" in html.unescape(text) and 'id="try-structured"' not in text
    assert calls() == [
        ("alice", "off", "admin trial by owner", "denied"),
        ("alice", "mine", "admin trial by owner", "denied"),
    ]


def test_arguments_the_schema_refuses_are_audited_as_invalid():
    tool = callable_tool()
    get_user_model().objects.create_user("alice")
    owner = staff("owner", "view_tool", "try_tool")

    response = owner.post(try_url(tool), {"user": "alice", "raw_arguments": '{"a": "one", "b": 2}'})

    assert response.status_code == 200 and 'id="try-result"' in page(response)
    assert calls() == [("alice", "adder", "admin trial by owner", "invalid")]


def test_what_a_tool_answers_is_shown_as_text_on_the_trial_page():
    tool = callable_tool("greeter", "greet")
    get_user_model().objects.create_user("alice")
    owner = staff("owner", "view_tool", "try_tool")

    response = owner.post(try_url(tool), {"user": "alice", "raw_arguments": json.dumps({"name": HOSTILE})})

    text = page(response)
    assert 'id="try-result"' in text
    assert "<script>" not in text and "&lt;script&gt;" in text


def test_a_hostile_username_and_tool_description_are_escaped_on_the_trial_and_clients_pages():
    tool = callable_tool(description=HOSTILE, title=HOSTILE)
    get_user_model().objects.create_user(HOSTILE[:150])
    owner = staff("owner", "view_tool", "try_tool", "auth.view_user")

    pages = [
        page(owner.get(try_url(tool), {"user": HOSTILE})),
        page(owner.get(f"{TOOLS_URL}{tool.pk}/clients/")),
        page(owner.get(try_url(tool))),
    ]

    for text in pages:
        assert "<script>" not in text
    assert "&lt;script&gt;" in pages[0] and "&lt;script&gt;" in pages[1]


# What clients see: no users or groups without the permission to view users -----------------------------


def test_the_clients_page_names_no_group_or_user_to_an_admin_who_may_not_view_users():
    tool = callable_tool(everyone=False)
    alice = get_user_model().objects.create_user("alice-the-granted")
    group = Group.objects.create(name="secret-project-members")
    alice.groups.add(group)
    UserGrant.objects.create(tool=tool, user=alice)
    GroupGrant.objects.create(tool=tool, group=group)
    viewer = staff("viewer", "view_tool", "auth.view_group")

    text = page(viewer.get(f"{TOOLS_URL}{tool.pk}/clients/"))

    assert "alice-the-granted" not in text and "members)" not in text
    assert "You need the permission to view users" in text


def test_the_clients_page_shows_only_what_tools_list_sends_for_a_model_query():
    query_data.seed()
    query_data.make_tools(("items",))
    tool = Tool.objects.get(name="items")
    viewer = staff("viewer", "view_tool")
    chief = get_user_model().objects.create_superuser("chief", "chief@example.com", "pw")

    text = page(viewer.get(f"{TOOLS_URL}{tool.pk}/clients/"))
    listed = ask(chief, None, "", "tools/list", {})

    assert listed is not None
    [entry] = [t for t in listed["result"]["tools"] if t["name"] == "items"]
    shown = [json.loads(html.unescape(d)) for d in DEFINITIONS.findall(text)]
    assert entry in shown
    assert not any("api_key" in json.dumps(definition) for definition in shown)


# Import: a hostile file ------------------------------------------------------------------------------


@pytest.fixture
def importer() -> Client:
    return staff("importer", *IMPORTER)


def test_a_file_that_grants_a_new_tool_to_everyone_says_so_in_the_diff(importer):
    review = upload(importer, file_text(tool_entry("open_to_all", everyone=True)))

    [added] = review.context["added"]
    assert "every authenticated user" in added.granted
    assert "every authenticated user" in page(review)


def test_the_diff_shows_what_an_added_model_query_exposes(importer):
    query_data.seed()
    entry = query_entry("wipe_accounts", "testapp.Account", operation="delete", lookup_field="pk")

    review = upload(importer, file_text(entry | {"groups": [], "everyone": True}))

    [added] = review.context["added"]
    assert ("query.model", '"testapp.Account"') in [(s.field, s.new) for s in added.settings]
    assert ("query.operation", '"delete"') in [(s.field, s.new) for s in added.settings]
    text = page(review)
    assert "<code>query.operation</code></th><td><code>&quot;delete&quot;</code>" in text


def test_mcp_import_prints_a_grant_to_everyone_among_the_grants(tmp_path):
    callable_tool("adder", everyone=False)
    path = tmp_path / "tools.json"
    path.write_text(file_text(tool_entry("adder", everyone=True), tool_entry("open", everyone=True)))
    out = io.StringIO()

    call_command("mcp_import", str(path), "--dry-run", stdout=out)

    lines = out.getvalue().splitlines()
    assert lines[lines.index("~ adder (changed)") + 2] == "    granted to every authenticated user"
    assert lines[lines.index("+ open (added)") + 1] == "    granted to every authenticated user"


def test_a_file_that_opens_an_existing_tool_to_everyone_says_so_among_the_grants(importer):
    callable_tool("adder", everyone=False)

    review = upload(importer, file_text(tool_entry("adder", everyone=True)))

    assert ("adder", "granted to", "every authenticated user") in review.context["grant_changes"]


def test_a_file_that_grants_a_group_of_superusers_names_the_group(importer):
    callable_tool("adder", everyone=False)
    admins = Group.objects.create(name="admins")
    get_user_model().objects.create_superuser("root", "root@example.com", "pw").groups.add(admins)

    review = upload(importer, file_text(tool_entry("adder", groups=["admins"])))

    assert review.context["grant_changes"] == [("adder", "granted to", "group admins")]


def test_a_tool_name_that_differs_only_in_case_is_a_new_tool_and_overwrites_nothing(importer):
    callable_tool("adder", description="The real one.")

    review = upload(importer, file_text(tool_entry("Adder", description="Not the real one.", everyone=True)))
    importer.post(IMPORT_URL, {"payload": payload_of(review)})

    assert [tool.name for tool in review.context["added"]] == ["Adder"]
    assert Tool.objects.get(name="adder").description == "The real one."


def test_hostile_names_and_values_in_a_file_are_shown_as_text_on_the_diff(importer):
    callable_tool("adder")
    entry = tool_entry("adder", description=HOSTILE, title=HOSTILE)
    review = upload(importer, file_text(entry, tool_entry(HOSTILE), rate_limits=[{"group": HOSTILE, "rate": "1/m"}]))

    text = page(review)
    assert review.status_code == 200
    assert "<script>" not in text and "&lt;script&gt;" in text


def test_a_file_may_expose_plain_fields_of_a_model_through_a_query(importer):
    query_data.seed()
    review = upload(importer, file_text(query_entry("plain", "testapp.Account", output_fields=["name", "tenant"])))

    assert review.context["plan"].errors == []


@pytest.mark.parametrize("query", QUERY_ATTACKS)
def test_a_file_cannot_expose_an_excluded_model_or_a_secret_field_through_any_query_setting(importer, query):
    query_data.seed()
    entry = query_entry("sneaky", **query)

    review = upload(importer, file_text(entry))

    assert review.status_code == 200
    assert any(refused_for_exposure(error) for error in review.context["plan"].errors), "the import was accepted"
    assert PAYLOAD.search(page(review)) is None
    assert not Tool.objects.filter(name="sneaky").exists()


@pytest.mark.parametrize(
    "source",
    [
        {"model": "auth.Permission", "search_fields": ["name"], "title_field": "name"},
        {"model": "mcp_tools.AccessToken", "search_fields": ["name"], "title_field": "name"},
        {"model": "testapp.Account", "search_fields": ["api_key"], "title_field": "name"},
        {"model": "testapp.Account", "search_fields": ["name"], "title_field": "api_key"},
        {"model": "testapp.Account", "search_fields": ["name"], "title_field": "name", "text_fields": ["api_key"]},
        {"model": "testapp.Account", "search_fields": ["manager__password"], "title_field": "name"},
        {
            "model": "testapp.Item",
            "search_fields": ["name"],
            "title_field": "name",
            "text_fields": ["account__api_key"],
        },
        {"model": "testapp.Item", "search_fields": ["name"], "title_field": "name", "scope": "no.such.scope"},
    ],
)
def test_a_file_cannot_search_an_excluded_model_or_a_secret_field(importer, source):
    entry = {"name": "search", "kind": "search", "sources": [source | {"link": "admin"}]}

    review = upload(importer, file_text(entry))

    assert any(refused_for_exposure(error) for error in review.context["plan"].errors), "the import was accepted"
    assert not Tool.objects.filter(name="search").exists()


def test_a_file_may_search_plain_fields_of_a_model_it_may_expose(importer):
    source = {"model": "testapp.Account", "search_fields": ["name"], "title_field": "name", "text_fields": ["tenant"]}
    source |= {"link": "admin"}

    review = upload(importer, file_text({"name": "search", "kind": "search", "sources": [source]}))

    assert review.context["plan"].errors == []


@pytest.mark.parametrize(
    "serializer",
    [
        "this.s",  # importing the module alone prints to the console
        "os.system",
        "subprocess.Popen",
        "builtins.dict",
        "tests.testapp.models.Account",  # a class of the site that is no serializer
        "tests.testapp.api.ItemSerializer",  # a serializer of another model
        "no.such.module.Serializer",
    ],
)
def test_a_file_cannot_name_anything_but_a_serializer_of_the_sites_apps(importer, serializer):
    query_data.seed()
    before = set(sys.modules)

    review = upload(importer, file_text(query_entry("sneaky", "testapp.Account", serializer=serializer)))

    assert review.context["plan"].errors, "the import was accepted"
    assert not Tool.objects.filter(name="sneaky").exists()
    assert "this" not in set(sys.modules) - before


def test_the_admin_form_imports_no_module_outside_the_installed_apps_either():
    query_data.seed()
    query_data.make_tools(("items",))
    query = ModelQuery.objects.get(tool__name="items")
    before = set(sys.modules)
    data = {"model": "testapp.Item", "operation": "list", "lookup_field": "pk"}

    form = ModelQueryForm(data=data | {"serializer": "this.s"}, instance=query)

    assert not form.is_valid()
    assert form.errors["serializer"] == ["this.s is not in a module of an installed app."]
    assert "this" not in set(sys.modules) - before


def test_a_file_may_name_a_serializer_of_the_query_model_from_an_installed_app(importer):
    query_data.seed()
    entry = query_entry("accounts", "testapp.Account", serializer="tests.testapp.api.AccountSerializer")

    review = upload(importer, file_text(entry))

    assert review.context["plan"].errors == []
    assert PAYLOAD.search(page(review)) is not None


@pytest.mark.parametrize("src", ["javascript:alert(1)", "JavaScript:alert(1)", "file:///etc/passwd", "//evil"])
def test_a_file_cannot_give_a_tool_an_icon_of_an_unsafe_scheme(importer, src):
    review = upload(importer, file_text(tool_entry("adder", icons=[{"src": src}])))

    assert review.context["plan"].errors
    assert PAYLOAD.search(page(review)) is None


def test_a_file_cannot_name_an_unregistered_callable_or_api_action(importer):
    review = upload(
        importer,
        file_text(
            tool_entry("ghost", callable_name="os.system"),
            {"name": "api", "kind": "api_action", "api_action": "os.system"},
        ),
    )

    assert len(review.context["plan"].errors) == 2
    assert not Tool.objects.exists()


def test_a_reviewed_file_is_not_applied_once_the_tools_changed_since_the_review(importer):
    tool = callable_tool("adder", everyone=False)
    review = upload(importer, file_text(tool_entry("adder", description="From the file.")))
    tool.description = "Changed by someone else meanwhile."
    tool.save()

    applied = importer.post(IMPORT_URL, {"payload": payload_of(review)}, follow=True)

    assert Tool.objects.get(name="adder").description == "Changed by someone else meanwhile."
    assert any("changed since" in str(m.message) for m in applied.context["messages"])


def test_a_reviewed_file_cannot_be_applied_twice(importer):
    callable_tool("adder", everyone=False)
    review = upload(importer, file_text(tool_entry("adder", everyone=True)))
    payload = payload_of(review)
    importer.post(IMPORT_URL, {"payload": payload})
    Tool.objects.filter(name="adder").update(everyone=False)  # an owner closes it again
    tool = Tool.objects.get(name="adder")
    tool.save()

    importer.post(IMPORT_URL, {"payload": payload})

    assert Tool.objects.get(name="adder").everyone is False


def test_a_reviewed_file_cannot_be_applied_once_the_reviewer_lost_a_permission(importer):
    review = upload(importer, file_text(tool_entry("adder")))
    payload = payload_of(review)
    reviewer = get_user_model().objects.get(username="importer")
    reviewer.user_permissions.remove(Permission.objects.get(codename="delete_usergrant"))

    response = importer.post(IMPORT_URL, {"payload": payload})

    assert response.status_code == 403
    assert not Tool.objects.exists()


def test_a_deeply_nested_file_is_refused_without_a_crash(importer):
    deep = "[" * 100_000 + "]" * 100_000
    text = '{"format": "django-mcp-tools", "version": 1, "tools": [{"name": "x", "input_schema": ' + deep + "}]}"

    response = upload(importer, text)

    assert response.status_code == 200 and response.context["problems"]
    assert not Tool.objects.exists()


def test_a_yaml_bomb_is_refused(importer):
    bomb = (
        "format: django-mcp-tools\nversion: 1\n"
        'a: &a ["x","x","x","x","x","x","x","x","x"]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\ntools: []\n'
    )

    response = upload(importer, bomb, name="tools.yaml")

    assert any("aliases (*name) are not accepted" in problem for problem in response.context["problems"])
    assert not Tool.objects.exists()


# History: nothing secret, escaped, paginated -----------------------------------------------------------


def test_history_records_grants_by_name_and_never_a_password_or_token():
    tool = callable_tool()
    alice = get_user_model().objects.create_user("alice", password="correct horse battery staple")
    UserGrant.objects.create(tool=tool, user=alice)
    AccessToken.objects.issue(alice, name="laptop")

    recorded = json.dumps([entry.changes for entry in ToolChange.objects.all()])

    assert "user grant: alice" in recorded
    assert alice.password not in recorded and "pbkdf2" not in recorded
    assert not any(token.digest in recorded for token in AccessToken.objects.all())


def test_the_history_pages_show_hostile_values_as_text_and_paginate():
    tool = callable_tool()
    for index in range(PER_PAGE + 5):
        tool.description = f"{HOSTILE} {index}"
        tool.save()
    chief = staff("chief", superuser=True)

    history = page(chief.get(f"{TOOLS_URL}{tool.pk}/history/"))
    changelist = page(chief.get(CHANGES_URL))
    entry = ToolChange.objects.filter(tool=tool).order_by("pk").last()
    assert entry is not None
    detail = page(chief.get(f"{CHANGES_URL}{entry.pk}/change/"))

    for text in (history, changelist, detail):
        assert "<script>" not in text
    assert history.count('class="tool-change"') == PER_PAGE
    assert "&lt;script&gt;" in history and "&lt;script&gt;" in detail


def test_history_is_refused_to_staff_who_may_not_view_changes():
    tool = callable_tool()
    tool.description = "changed"
    tool.save()
    viewer = staff("viewer", "view_tool")

    assert viewer.get(f"{TOOLS_URL}{tool.pk}/history/").status_code == 403
    assert viewer.get(CHANGES_URL).status_code == 403


# Dashboard: client-supplied names, parameters, who may see it ---------------------------------------------


def test_a_tool_name_a_client_makes_up_reaches_the_dashboard_capped_and_as_text():
    alice = get_user_model().objects.create_user("alice")
    made_up = "</title></text><script>alert(1)</script>]]><![CDATA[" + "x" * 500

    answer = ask(alice, None, "", "tools/call", {"name": made_up, "arguments": {}})
    chief = staff("chief", superuser=True)
    response = chief.get(DASHBOARD_URL)

    assert answer is not None and "error" in answer
    [row] = ToolCall.objects.all()
    assert row.tool_name == made_up[:128] and row.outcome == "denied"
    text = page(response)
    assert "<script>" not in text and "</title></text>" not in text and "<![CDATA[" not in text


@pytest.mark.parametrize(
    "query",
    [
        {"period": "100000d"},
        {"period": ["1h", "30d"]},
        {"period": "24h", "tool_name": "x", "o": "1", "p": "-1"},
        {"period": "\x00"},
    ],
)
def test_dashboard_parameters_cannot_widen_the_period(query):
    ToolCall.objects.create(tool_name="add", username="alice", outcome="ok", duration_ms=1, transport="http")
    chief = staff("chief", superuser=True)

    response = chief.get(DASHBOARD_URL, query)

    assert response.status_code == 200
    assert response.context["board"].period.key in ("24h", "30d")


def test_many_distinct_client_tool_names_keep_the_dashboard_bounded():
    now = timezone.now()
    ToolCall.objects.bulk_create(
        ToolCall(tool_name=f"made_up_{i}", username=f"user{i}", outcome="denied", duration_ms=1, transport="http")
        for i in range(300)
    )
    ToolCall.objects.update(created_at=now - timedelta(minutes=1))
    chief = staff("chief", superuser=True)

    response = chief.get(DASHBOARD_URL)

    board = response.context["board"]
    assert len(board.slowest) <= TOP_ROWS and len(board.users) <= TOP_ROWS
    assert len(board.tools) <= 7  # the top tools and "other tools"


def test_the_dashboard_names_no_user_to_staff_who_may_not_view_tool_calls():
    ToolCall.objects.create(tool_name="add", username="alice-the-caller", outcome="ok", duration_ms=1, transport="x")
    viewer = staff("viewer", "view_tool", "auth.view_user")

    response = viewer.get(DASHBOARD_URL)

    assert response.status_code == 403 and "alice-the-caller" not in page(response)


def test_the_dashboard_is_read_only_and_ignores_posts():
    ToolCall.objects.create(tool_name="add", username="alice", outcome="ok", duration_ms=1, transport="x")
    chief = staff("chief", superuser=True)

    response = chief.post(DASHBOARD_URL, {"period": "1h"})

    assert response.status_code in (200, 405)
    assert ToolCall.objects.count() == 1


def test_a_model_query_row_with_a_stored_foreign_serializer_is_refused_when_called():
    """A row written before the check (or by raw SQL) still cannot make a call import and run a foreign callable."""
    query_data.seed()
    query_data.make_tools(("items",))
    ModelQuery.objects.filter(tool__name="items").update(serializer="os.system")
    chief = get_user_model().objects.create_superuser("chief2", "chief2@example.com", "pw")

    answer = ask(chief, None, "", "tools/call", {"name": "items", "arguments": {}})

    assert answer is not None
    assert "result" in answer and answer["result"].get("isError") is True


def test_a_file_naming_a_great_many_users_or_groups_is_refused_before_any_lookup(importer):
    names = [f"user{i:06d}" for i in range(MAX_NAMES + 1)]
    text = file_text(tool_entry("crowded", users=names), tool_entry("grouped", groups=names))

    response = upload(importer, text, skip_missing="on")

    assert response.status_code == 200
    assert response.context["problems"] == [
        "The file names 10,001 users; at most 10,000 are accepted.",
        "The file names 10,001 groups; at most 10,000 are accepted.",
    ]
