"""The admin's tools file: the export action, the import upload, diff and apply pages, and who may use them."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.contrib.messages import ERROR, SUCCESS
from django.core import signing
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from mcp_tools.models import RateLimitOverride, Tool, UserGrant
from mcp_tools.tools.transfer.document import MAX_BYTES
from tests.admin_users import staff
from tests.transfer_files import exported, file_text, query_entry, seed_site, tool_entry, wipe

pytestmark = pytest.mark.django_db

TOOLS_URL = "/admin/mcp_tools/tool/"
IMPORT_URL = f"{TOOLS_URL}import/"
PAYLOAD = re.compile(r'name="payload" value="([^"]+)"')
ROWS = ("modelquery", "searchsource", "usergrant", "groupgrant", "ratelimitoverride")
IMPORTER = (
    "add_tool",
    "change_tool",
    "view_tool",
    *(f"{action}_{model}" for model in ROWS for action in ("add", "change", "delete")),
)


def upload(client: Client, text: str, name: str = "tools.json", **options: Any) -> Any:
    return client.post(IMPORT_URL, {"file": SimpleUploadedFile(name, text.encode()), **options})


def payload_of(response: Any) -> str:
    match = PAYLOAD.search(response.content.decode())
    assert match is not None, "no Apply form"
    return match.group(1)


def texts(response: Any) -> list[tuple[int, str]]:
    return [(m.level, str(m.message)) for m in response.context["messages"]]


def select(action: str, *names: str) -> dict[str, Any]:
    pks = [str(pk) for pk in Tool.objects.filter(name__in=names).values_list("pk", flat=True)]
    return {"action": action, "_selected_action": pks}


# Export action -------------------------------------------------------------------------------------


def test_the_export_action_downloads_the_selected_tools_as_the_command_writes_them(admin_client):
    seed_site()

    response = admin_client.post(TOOLS_URL, select("export_tools", "add", "items"))

    assert response.status_code == 200
    assert response["Content-Type"] == "application/json; charset=utf-8"
    assert response["Content-Disposition"] == 'attachment; filename="mcp-tools.json"'
    assert response.content.decode() == exported("add", "items")


def test_a_staff_user_who_may_view_tools_may_export_them(django_user_model):
    seed_site()
    viewer = staff("viewer", "view_tool")

    response = viewer.post(TOOLS_URL, select("export_tools", "add"))

    assert [tool["name"] for tool in json.loads(response.content)["tools"]] == ["add"]


def test_a_staff_user_without_view_permission_gets_no_export(django_user_model):
    seed_site()
    nobody = staff("nobody")

    response = nobody.post(TOOLS_URL, select("export_tools", "add"))

    assert response.status_code == 403
    assert "Content-Disposition" not in response


# Import pages --------------------------------------------------------------------------------------


def test_the_changelist_links_to_the_import_page_and_it_offers_an_upload_form(admin_client):
    changelist = admin_client.get(TOOLS_URL).content.decode()
    response = admin_client.get(IMPORT_URL)

    assert f'<a href="{IMPORT_URL}">Import tools</a>' in changelist
    assert response.status_code == 200
    assert list(response.context["form"].fields) == ["file", "skip_missing", "prune"]
    assert 'enctype="multipart/form-data"' in response.content.decode()


def test_upload_shows_the_diff_and_apply_writes_it(admin_client):
    seed_site()
    data = json.loads(exported("add", "greet"))
    data["tools"][0] |= {"title": "Sum", "users": ["carol"]}
    data["tools"].append(tool_entry("add_more", users=["bob"]))
    before = exported()

    review = upload(admin_client, json.dumps(data))

    page = review.content.decode()
    assert review.status_code == 200
    assert [tool.name for tool in review.context["added"]] == ["add_more"]
    assert review.context["changes"] == [("add", "title", '"Adder"', '"Sum"')]
    assert review.context["grant_changes"] == [("add", "no longer granted to", "user bob")]
    assert review.context["unchanged"] == ["greet"]
    assert "errornote" not in page
    assert exported() == before  # reviewing writes nothing

    applied = admin_client.post(IMPORT_URL, {"payload": payload_of(review)}, follow=True)

    assert texts(applied) == [(SUCCESS, "Imported: 1 tool(s) added, 1 changed.")]
    assert applied.redirect_chain == [(TOOLS_URL, 302)]
    assert Tool.objects.get(name="add").title == "Sum"
    assert list(UserGrant.objects.filter(tool__name="add_more").values_list("user__username", flat=True)) == ["bob"]


def test_apply_refuses_a_plan_the_site_has_moved_away_from_and_shows_the_new_one(admin_client):
    seed_site()
    data = json.loads(exported("add"))
    data["tools"][0]["title"] = "Sum"
    review = upload(admin_client, json.dumps(data))
    assert review.context["changes"] == [("add", "title", '"Adder"', '"Sum"')]
    # Someone else edits the tool between the review and Apply: the reviewed diff no longer says what happens.
    Tool.objects.filter(name="add").update(title="Plus", description="Edited meanwhile.")

    applied = admin_client.post(IMPORT_URL, {"payload": payload_of(review)})

    assert texts(applied)[0][1].startswith("The tools changed since you reviewed this file.")
    assert applied.context["changes"] == [
        ("add", "title", '"Plus"', '"Sum"'),
        ("add", "description", '"Edited meanwhile."', json.dumps(data["tools"][0]["description"])),
    ]
    assert Tool.objects.get(name="add").title == "Plus"  # nothing applied

    reapplied = admin_client.post(IMPORT_URL, {"payload": payload_of(applied)}, follow=True)

    assert texts(reapplied)[-1] == (SUCCESS, "Imported: 0 tool(s) added, 1 changed.")
    assert Tool.objects.get(name="add").title == "Sum"


def test_the_options_travel_with_the_reviewed_file(admin_client):
    seed_site()
    text = json.dumps(json.loads(exported("add")) | {"rate_limits": []})

    review = upload(admin_client, text, prune="on")
    admin_client.post(IMPORT_URL, {"payload": payload_of(review)})

    assert list(Tool.objects.filter(enabled=True).values_list("name", flat=True)) == ["add"]
    assert not RateLimitOverride.objects.filter(tool=None).exists()


def test_a_round_trip_through_the_admin_restores_the_site(admin_client):
    seed_site()
    before = exported()
    download = admin_client.post(TOOLS_URL, select("export_tools", *Tool.objects.values_list("name", flat=True)))
    wipe()

    review = upload(admin_client, download.content.decode())
    admin_client.post(IMPORT_URL, {"payload": payload_of(review)})

    assert exported() == before


def test_a_refused_tool_shows_the_error_and_offers_no_apply(admin_client):
    text = file_text(tool_entry("harmless"), query_entry("leak", "auth.User", output_fields=["password"]))

    review = upload(admin_client, text)

    page = review.content.decode()
    assert '<p class="errornote">' in page
    assert "Tool &#x27;leak&#x27; query: auth.User has no field &#x27;password&#x27; that may be exposed." in page
    assert 'name="payload"' not in page
    assert not Tool.objects.exists()


@pytest.mark.parametrize(
    ("text", "name", "problem"),
    [
        ("{", "tools.json", "Not valid JSON: "),
        ('{"format": "django-mcp-tools", "version": 9, "tools": []}', "tools.json", "Unsupported version 9"),
        (file_text(tool_entry("a", groups="staff")), "tools.json", "groups must be a list of strings"),
    ],
)
def test_a_malformed_upload_is_refused_on_the_form(admin_client, text, name, problem):
    response = upload(admin_client, text, name)

    assert response.status_code == 200
    assert response.context["problems"][0].startswith(problem) or problem in response.context["problems"][0]
    assert '<p class="errornote">' in response.content.decode()


def test_an_oversized_upload_is_refused(admin_client):
    response = upload(admin_client, " " * (MAX_BYTES + 1))

    assert response.context["problems"] == [
        f"The file is {MAX_BYTES + 1:,} bytes; at most {MAX_BYTES:,} bytes are accepted."
    ]


def test_a_tampered_or_foreign_payload_is_refused_and_writes_nothing(admin_client, django_user_model):
    review = upload(admin_client, file_text(tool_entry("add_more")))
    payload = payload_of(review)
    forged = signing.dumps({"document": file_text(tool_entry("forged")), "options": {}}, salt="other")
    other = staff("other", *IMPORTER)

    responses = [
        admin_client.post(IMPORT_URL, {"payload": payload[:-3] + "abc"}, follow=True),
        admin_client.post(IMPORT_URL, {"payload": forged}, follow=True),
        other.post(IMPORT_URL, {"payload": payload}, follow=True),  # signed for another user
    ]

    for response in responses:
        assert texts(response) == [
            (ERROR, "The reviewed file could not be read back or is over an hour old; upload it again.")
        ]
    assert not Tool.objects.exists()


# Who may import ------------------------------------------------------------------------------------


def test_a_staff_user_with_every_import_permission_may_import(django_user_model):
    importer = staff("importer", *IMPORTER)

    review = upload(importer, file_text(tool_entry("add_more")))
    importer.post(IMPORT_URL, {"payload": payload_of(review)})

    assert Tool.objects.filter(name="add_more").exists()


@pytest.mark.parametrize(
    "lacking", ["add_tool", "change_tool", "add_usergrant", "delete_groupgrant", "change_ratelimitoverride"]
)
def test_a_staff_user_lacking_an_import_permission_is_refused(django_user_model, admin_client, lacking):
    review = upload(admin_client, file_text(tool_entry("add_more")))
    denied = staff("denied", *(codename for codename in IMPORTER if codename != lacking))

    responses = [
        denied.get(IMPORT_URL),
        upload(denied, file_text(tool_entry("add_more"))),
        denied.post(IMPORT_URL, {"payload": payload_of(review)}),
    ]

    assert [response.status_code for response in responses] == [403, 403, 403]
    assert not Tool.objects.exists()


def test_the_import_link_is_hidden_from_a_viewer_and_the_page_from_a_visitor(django_user_model):
    viewer = staff("viewer", "view_tool")
    visitor = Client()

    assert "Import tools" not in viewer.get(TOOLS_URL).content.decode()
    response = visitor.get(IMPORT_URL)
    assert (response.status_code, response["Location"]) == (302, f"/admin/login/?next={IMPORT_URL}")
