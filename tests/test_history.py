"""Each tool's change history: what the admin, mcp_sync and code change is recorded, credited and shown."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from django.contrib.auth.models import Group
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import transaction

from mcp_tools.history import recording
from mcp_tools.history.values import MAX_VALUE_CHARS
from mcp_tools.models import ModelQuery, RateLimitOverride, SearchSource, Tool, ToolChange, UserGrant
from mcp_tools.tools.registry import registry
from tests.admin_forms import grant_forms, tool_form
from tests.admin_users import staff
from tests.transfer_files import file_text, tool_entry

pytestmark = pytest.mark.django_db

TOOLS_URL = "/admin/mcp_tools/tool/"
CHANGES_URL = "/admin/mcp_tools/toolchange/"


def adder(**fields: Any) -> Tool:
    """The tool the admin's tool form posts, as saved (with its callable's schemas)."""
    add = registry.get("add")
    assert add is not None
    schemas = {"input_schema": add.input_schema, "output_schema": add.output_schema}
    return Tool.objects.create(name="adder", callable_name="add", description="Adds.", **schemas, **fields)


def entries(tool_name: str = "adder", **filters: Any) -> list[ToolChange]:
    return list(ToolChange.objects.filter(tool_name=tool_name, **filters).order_by("pk"))


def test_an_admin_edit_of_a_tool_and_a_grant_is_one_entry_credited_to_the_admin(
    admin_client: Any, admin_user: Any, django_user_model: Any
) -> None:
    tool = adder()
    bob = django_user_model.objects.create_user("bob")

    data = tool_form(description="Adds two numbers.") | grant_forms(users=[bob.pk])
    response = admin_client.post(f"{TOOLS_URL}{tool.pk}/change/", data)

    assert response.status_code == 302
    [entry] = entries(source="admin")
    assert (entry.tool_id, entry.user_id, entry.username, entry.action) == (tool.pk, admin_user.pk, "admin", "changed")
    assert entry.changes["description"] == ["Adds.", "Adds two numbers."]
    assert entry.changes["user grant: bob"] == [None, "granted"]
    assert "name" not in entry.changes and "updated_at" not in entry.changes


def test_removing_a_grant_in_the_admin_records_it(admin_client: Any, django_user_model: Any) -> None:
    tool = adder()
    grant = UserGrant.objects.create(tool=tool, user=django_user_model.objects.create_user("bob"))
    data = tool_form(description="Adds.") | {
        "user_grants-TOTAL_FORMS": "1",
        "user_grants-INITIAL_FORMS": "1",
        "user_grants-0-id": str(grant.pk),
        "user_grants-0-tool": str(tool.pk),
        "user_grants-0-user": str(grant.user_id),
        "user_grants-0-DELETE": "on",
    }

    assert admin_client.post(f"{TOOLS_URL}{tool.pk}/change/", data).status_code == 302

    [entry] = entries(source="admin")
    assert entry.changes == {"user grant: bob": ["granted", None]}


def test_a_tool_added_in_the_admin_is_recorded_as_added(admin_client: Any) -> None:
    assert admin_client.post(f"{TOOLS_URL}add/", tool_form(description="Sums.")).status_code == 302

    [entry] = entries()
    assert (entry.action, entry.source, entry.username) == ("added", "admin", "admin")
    assert entry.changes["name"] == [None, "adder"] and entry.changes["description"] == [None, "Sums."]


def test_saving_without_changes_records_nothing(admin_client: Any) -> None:
    tool = adder()
    admin_client.post(f"{TOOLS_URL}{tool.pk}/change/", tool_form(description="Adds."))

    assert entries(source="admin") == []


def test_an_admin_action_records_each_tool(admin_client: Any) -> None:
    tool = adder()
    data = {"action": "disable_tools", "_selected_action": [str(tool.pk)]}

    assert admin_client.post(TOOLS_URL, data).status_code == 302

    [entry] = entries(source="admin")
    assert entry.changes == {"enabled": [True, False]}


def test_mcp_sync_records_the_tools_it_creates() -> None:
    call_command("mcp_sync", "--enable", verbosity=0, stdout=io.StringIO())

    [entry] = entries("add")
    assert (entry.action, entry.source, entry.username, entry.user_id) == ("added", "mcp_sync", "", None)
    assert entry.changes["callable_name"] == [None, "add"] and entry.changes["enabled"] == [None, True]
    assert entry.tool == Tool.objects.get(name="add")


def test_mcp_import_records_its_changes_as_an_import(tmp_path: Any) -> None:
    tool = adder()
    path = tmp_path / "tools.json"
    path.write_text(file_text(tool_entry("adder", description="Imported.", input_schema=tool.input_schema)))

    call_command("mcp_import", str(path), "--noinput", stdout=io.StringIO())

    [entry] = entries(source="import")
    assert (entry.action, entry.username) == ("changed", "")
    assert entry.changes["description"] == ["Adds.", "Imported."]


def test_an_import_in_the_admin_is_credited_to_the_admin(admin_client: Any, tmp_path: Any) -> None:
    tool = adder()
    text = file_text(tool_entry("adder", description="Imported.", input_schema=tool.input_schema))
    review = admin_client.post(f"{TOOLS_URL}import/", {"file": SimpleUploadedFile("tools.json", text.encode())})
    match = re.search(r'name="payload" value="([^"]+)"', review.content.decode())
    assert match is not None

    assert admin_client.post(f"{TOOLS_URL}import/", {"payload": match.group(1)}).status_code == 302

    [entry] = entries(source="import")
    assert (entry.username, entry.changes["description"]) == ("admin", ["Adds.", "Imported."])


def test_a_deleted_tool_keeps_its_history_under_its_name(admin_client: Any, django_user_model: Any) -> None:
    tool = adder()
    UserGrant.objects.create(tool=tool, user=django_user_model.objects.create_user("bob"))

    response = admin_client.post(f"{TOOLS_URL}{tool.pk}/delete/", {"post": "yes"})

    assert response.status_code == 302 and not Tool.objects.exists()
    history = entries()
    assert [(e.action, e.source) for e in history] == [("added", "code"), ("changed", "code"), ("deleted", "admin")]
    assert all(e.tool_id is None for e in history)
    assert history[-1].changes["description"] == ["Adds.", None]
    assert history[-1].username == "admin"


def test_a_change_made_in_code_without_an_actor_is_credited_to_code() -> None:
    tool = adder()
    tool.title = "Adder"
    tool.save()

    added, changed = entries()
    assert (added.source, added.action, changed.source, changed.action) == ("code", "added", "code", "changed")
    assert changed.changes == {"title": ["", "Adder"]} and changed.username == "" and changed.user is None


def test_recording_credits_the_given_user_and_source(django_user_model: Any) -> None:
    importer = django_user_model.objects.create_user("importer")
    with recording(user=importer, source="import"):
        tool = adder()
        tool.description = "Adds numbers."
        tool.save()

    [entry] = entries()
    assert (entry.action, entry.source, entry.username) == ("added", "import", "importer")
    assert entry.changes["description"] == [None, "Adds numbers."]


def test_a_rolled_back_change_leaves_no_history() -> None:
    tool = adder()
    with pytest.raises(RuntimeError), transaction.atomic():
        tool.description = "Never saved."
        tool.save()
        raise RuntimeError

    assert [e.action for e in entries()] == ["added"]


def test_saving_some_fields_records_only_those() -> None:
    tool = adder()
    Tool.objects.filter(pk=tool.pk).update(description="Changed behind the instance's back.")
    tool.enabled = False
    tool.save(update_fields=["enabled", "updated_at"])

    assert entries()[-1].changes == {"enabled": [True, False]}


def test_long_values_are_capped() -> None:
    tool = adder()
    tool.description = "x" * (MAX_VALUE_CHARS * 3)
    tool.save()

    old, new = entries()[-1].changes["description"]
    assert old == "Adds." and len(new) == MAX_VALUE_CHARS + 1 and new.endswith("…")


def test_queries_sources_and_rate_overrides_are_part_of_the_tools_history() -> None:
    tool = adder()
    group = Group.objects.create(name="staff")
    ModelQuery.objects.create(tool=tool, model="auth.Group", output_fields=["id", "name"])
    override = RateLimitOverride.objects.create(group=group, tool=tool, rate="5/m")
    override.rate = "10/m"
    override.save()
    RateLimitOverride.objects.create(group=group, rate="100/m")  # every tool: no tool's history
    search = Tool.objects.create(name="search", kind="search")
    SearchSource.objects.create(tool=search, model="testapp.Integration", search_fields=["name"])

    changes = [e.changes for e in entries()]
    assert any(c.get("query.model") == [None, "auth.Group"] for c in changes)
    assert any(c.get("kind") == ["callable", "model_query"] for c in changes)
    assert {"rate for group: staff": [None, "5/m"]} in changes
    assert {"rate for group: staff": ["5/m", "10/m"]} in changes
    [source] = [e for e in entries("search") if e.action == "changed"]
    assert source.changes["source testapp.Integration.search_fields"] == [None, ["name"]]


def test_generated_schemas_are_left_out_of_the_history_of_the_configuration_they_come_from() -> None:
    tool = Tool.objects.create(name="groups", kind="model_query")
    ModelQuery.objects.create(tool=tool, model="auth.Group", output_fields=["id", "name"])
    tool.refresh_from_db()
    assert tool.input_schema["properties"] and tool.output_schema  # regenerated and saved with the query

    changes = [e.changes for e in entries("groups")]
    assert any("query.output_fields" in c for c in changes)
    assert not any(key.endswith("_schema") for c in changes for key in c), changes


def test_a_rate_override_saved_in_its_admin_is_credited_to_the_admin(admin_client: Any) -> None:
    tool = adder()
    group = Group.objects.create(name="staff")

    data = {"group": str(group.pk), "tool": str(tool.pk), "rate": "5/m"}
    assert admin_client.post("/admin/mcp_tools/ratelimitoverride/add/", data).status_code == 302

    [entry] = entries(source="admin")
    assert entry.changes == {"rate for group: staff": [None, "5/m"]}


# The history page --------------------------------------------------------------------------------


def test_the_tool_history_page_shows_each_change(admin_client: Any) -> None:
    tool = adder()
    admin_client.post(f"{TOOLS_URL}{tool.pk}/change/", tool_form(description="Adds <two> numbers."))

    response = admin_client.get(f"{TOOLS_URL}{tool.pk}/history/")

    assert response.status_code == 200
    page = response.content.decode()
    assert page.count('class="tool-change"') == 2
    assert "<code>Adds.</code>" in page and "<code>Adds &lt;two&gt; numbers.</code>" in page
    assert ">admin</td>" in page and ">code</td>" in page


def test_a_tool_without_history_says_so(admin_client: Any) -> None:
    tool = adder()
    ToolChange.objects.all().delete()

    response = admin_client.get(f"{TOOLS_URL}{tool.pk}/history/")

    assert "No changes of this tool have been recorded yet." in response.content.decode()


@pytest.mark.parametrize("codenames", [(), ("view_tool",), ("view_toolchange",)])
def test_the_history_needs_both_view_permissions(django_user_model: Any, codenames: tuple[str, ...]) -> None:
    tool = adder()
    client = staff("staffer", *codenames)

    assert client.get(f"{TOOLS_URL}{tool.pk}/history/").status_code == 403
    assert client.get(CHANGES_URL).status_code == (200 if "view_toolchange" in codenames else 403)


def test_a_staff_user_with_both_view_permissions_reads_the_history(django_user_model: Any) -> None:
    tool = adder()
    client = staff("staffer", "view_tool", "view_toolchange")

    response = client.get(f"{TOOLS_URL}{tool.pk}/history/")

    assert response.status_code == 200 and 'class="tool-change"' in response.content.decode()


def test_nobody_adds_edits_or_deletes_history(admin_client: Any) -> None:
    adder()
    entry = entries()[0]

    assert admin_client.get(f"{CHANGES_URL}add/").status_code == 403
    shown = admin_client.get(f"{CHANGES_URL}{entry.pk}/change/")
    assert (
        shown.status_code == 200 and "<th>description</th><td>—</td><td>→</td><td>Adds.</td>" in shown.content.decode()
    )
    assert admin_client.post(f"{CHANGES_URL}{entry.pk}/delete/", {"post": "yes"}).status_code == 403
    admin_client.post(f"{CHANGES_URL}{entry.pk}/change/", {"tool_name": "renamed"})
    entry.refresh_from_db()
    assert entry.tool_name == "adder"
    listed = admin_client.get(CHANGES_URL, {"q": "adder", "source": "code"})
    assert listed.status_code == 200 and list(listed.context["cl"].result_list) == [entry]


def test_a_grant_added_and_removed_in_one_block_leaves_no_entry(django_user_model: Any) -> None:
    tool = adder()
    bob = django_user_model.objects.create_user("bob")

    with recording(source="import"):
        UserGrant.objects.create(tool=tool, user=bob).delete()

    assert entries(source="import") == []


def test_each_save_outside_a_block_is_an_entry_of_its_own(django_user_model: Any) -> None:
    tool = adder()
    bob = django_user_model.objects.create_user("bob")

    UserGrant.objects.create(tool=tool, user=bob).delete()

    assert [e.changes for e in entries(action="changed")] == [
        {"user grant: bob": [None, "granted"]},
        {"user grant: bob": ["granted", None]},
    ]


def test_a_grant_moved_to_another_tool_is_in_both_histories(django_user_model: Any) -> None:
    tool, other = adder(), Tool.objects.create(name="other", callable_name="add")
    grant = UserGrant.objects.create(tool=tool, user=django_user_model.objects.create_user("bob"))

    grant.tool = other
    grant.save()

    assert entries()[-1].changes == {"user grant: bob": ["granted", None]}
    assert entries("other")[-1].changes == {"user grant: bob": [None, "granted"]}
