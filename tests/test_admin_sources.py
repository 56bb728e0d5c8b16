"""The admin of search and fetch tools: sources offer only fields that may be exposed and say what is wrong."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_tools.models import SearchSource, Tool
from tests.admin_forms import management_form, tool_form

pytestmark = pytest.mark.django_db

TOOLS_URL = "/admin/mcp_tools/tool/"


def source_form(**fields: Any) -> dict[str, Any]:
    """The tool form of a search tool with one new source."""
    source = {"model": "", "title_field": "", "link": "page", "max_results": "10", "scope": "", **fields}
    data = tool_form(name="search", kind="search", callable_name="") | management_form("sources", total=1)
    for key, value in source.items():
        data[f"sources-0-{key}"] = value
    return data


def errors(response: Any) -> list[Any]:
    [inline] = [i for i in response.context["inline_admin_formsets"] if i.formset.prefix == "sources"]
    return [inline.formset.non_form_errors(), *(form.errors for form in inline.formset.forms)]


def test_a_search_tool_saves_with_a_source_and_lists_its_fields(admin_client: Any) -> None:
    data = source_form(model="testapp.Item", search_fields=["name"], title_field="name", link="page_or_admin")

    response = admin_client.post(f"{TOOLS_URL}add/", data)

    assert response.status_code == 302, errors(response)
    tool = Tool.objects.get(name="search")
    assert list(tool.sources.values_list("model", "search_fields", "title_field")) == [
        ("testapp.Item", ["name"], "name")
    ]


def test_a_search_tool_without_a_source_is_refused(admin_client: Any) -> None:
    data = tool_form(name="search", kind="search", callable_name="")

    response = admin_client.post(f"{TOOLS_URL}add/", data)

    assert response.status_code == 200
    assert errors(response)[0] == ["Add at least one search source: the model whose rows this tool finds."]


def test_a_source_says_what_it_still_needs(admin_client: Any) -> None:
    response = admin_client.post(f"{TOOLS_URL}add/", source_form(model="testapp.Item"))

    assert errors(response)[1] == {
        "search_fields": ["Choose the text fields a search looks in."],
        "link": ["testapp.Item has no get_absolute_url(): choose its admin change page, or add the method."],
    }


def test_secret_fields_are_never_offered_and_cannot_be_posted(admin_client: Any) -> None:
    SearchSource.objects.create(
        tool=Tool.objects.create(name="search", kind="search"), model="testapp.Integration", search_fields=["name"]
    )
    tool = Tool.objects.get(name="search")
    response = admin_client.get(f"{TOOLS_URL}{tool.pk}/change/")
    [inline] = [i for i in response.context["inline_admin_formsets"] if i.formset.prefix == "sources"]
    form = inline.formset.forms[0]

    offered = {value for value, _label in form.fields["text_fields"].choices}
    assert "name" in offered
    assert offered & {"access_token", "password_hash", "client_secret", "refresh_token", "private_key"} == set()

    data = source_form(model="testapp.Integration", search_fields=["name"], text_fields=["client_secret"], link="admin")
    response = admin_client.post(f"{TOOLS_URL}add/", data | {"name": "search2"})
    assert "text_fields" in errors(response)[1]
