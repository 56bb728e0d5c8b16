"""The tool and audit admin pages: each tool shows the configuration of its own kind, the pages carry the app's
stylesheet, and durations read at a useful precision."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.messages import WARNING

from mcp_tools.admin.audit import readable_duration
from mcp_tools.admin.schema_forms import Argument, arguments_of, initial_of
from mcp_tools.models import ModelQuery, SearchSource, Tool, ToolCall
from tests.admin_forms import GRANT_PREFIXES, tool_form

pytestmark = pytest.mark.django_db

TOOLS_URL = "/admin/mcp_tools/tool/"
CALLS_URL = "/admin/mcp_tools/toolcall/"
STYLESHEET = "mcp_tools/admin.css"


def inline_prefixes(response: Any) -> list[str]:
    return [inline.formset.prefix for inline in response.context["inline_admin_formsets"]]


def test_a_callable_tool_shows_neither_a_model_query_nor_search_sources(admin_client: Any) -> None:
    tool = Tool.objects.create(name="adder", callable_name="add")

    response = admin_client.get(f"{TOOLS_URL}{tool.pk}/change/")

    assert inline_prefixes(response) == list(GRANT_PREFIXES)
    assert 'id="query-group"' not in response.text and 'id="sources-group"' not in response.text


def test_a_model_query_tool_shows_its_query_and_a_search_tool_its_sources(admin_client: Any) -> None:
    query = Tool.objects.create(name="items", kind=Tool.Kind.MODEL_QUERY)
    ModelQuery.objects.create(tool=query, model="testapp.Item")
    search = Tool.objects.create(name="search", kind=Tool.Kind.SEARCH)
    SearchSource.objects.create(tool=search, model="testapp.Item", search_fields=["name"])

    assert inline_prefixes(admin_client.get(f"{TOOLS_URL}{query.pk}/change/")) == ["query", *GRANT_PREFIXES]
    assert inline_prefixes(admin_client.get(f"{TOOLS_URL}{search.pk}/change/")) == ["sources", *GRANT_PREFIXES]


def test_the_add_page_offers_every_configuration_since_the_kind_is_chosen_on_it(admin_client: Any) -> None:
    response = admin_client.get(f"{TOOLS_URL}add/")

    assert inline_prefixes(response) == ["query", "sources", *GRANT_PREFIXES]


def test_a_query_left_from_another_kind_stays_shown_so_that_it_can_be_deleted(admin_client: Any) -> None:
    tool = Tool.objects.create(name="items", kind=Tool.Kind.MODEL_QUERY)
    ModelQuery.objects.create(tool=tool, model="testapp.Item")
    Tool.objects.filter(pk=tool.pk).update(kind=Tool.Kind.CALLABLE, callable_name="add")

    response = admin_client.get(f"{TOOLS_URL}{tool.pk}/change/")

    assert inline_prefixes(response) == ["query", *GRANT_PREFIXES]


def test_a_tool_made_a_model_query_stays_on_its_page_to_choose_the_model(admin_client: Any) -> None:
    tool = Tool.objects.create(name="adder", callable_name="add")
    url = f"{TOOLS_URL}{tool.pk}/change/"

    response = admin_client.post(url, tool_form(kind="model_query", callable_name=""), follow=True)

    assert response.redirect_chain == [(url, 302)]
    assert [(m.level, str(m.message)) for m in response.context["messages"]] == [
        (WARNING, "Now choose the model this tool queries, below, and save.")
    ]
    assert inline_prefixes(response) == ["query", *GRANT_PREFIXES]
    assert Tool.objects.get(pk=tool.pk).kind == Tool.Kind.MODEL_QUERY


def test_saving_a_configured_tool_returns_to_the_list(admin_client: Any) -> None:
    tool = Tool.objects.create(name="adder", callable_name="add")

    response = admin_client.post(f"{TOOLS_URL}{tool.pk}/change/", tool_form())

    assert (response.status_code, response["Location"]) == (302, TOOLS_URL)


def test_the_tool_pages_and_the_audit_list_carry_the_stylesheet(admin_client: Any) -> None:
    tool = Tool.objects.create(name="items", kind=Tool.Kind.MODEL_QUERY)
    ModelQuery.objects.create(tool=tool, model="testapp.Item")

    change = admin_client.get(f"{TOOLS_URL}{tool.pk}/change/").text
    for url in (TOOLS_URL, f"{TOOLS_URL}add/", CALLS_URL):
        assert STYLESHEET in admin_client.get(url).text, url
    assert STYLESHEET in change
    assert 'class="mcp-choices"' in change  # the checkbox pickers the stylesheet lays out
    assert '<label for="id_callable_name">Registered callable:</label>' in change


def test_an_anonymous_visitor_gets_no_tool_page(client: Any) -> None:
    tool = Tool.objects.create(name="adder", callable_name="add")

    response = client.get(f"{TOOLS_URL}{tool.pk}/change/")

    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")


@pytest.mark.parametrize(
    ("milliseconds", "shown"),
    [(0.0, "0.00 ms"), (0.421, "0.42 ms"), (4.5, "4.50 ms"), (12.34, "12.3 ms"), (345.6, "346 ms"), (1250.0, "1.25 s")],
)
def test_a_duration_reads_with_two_or_three_significant_digits(milliseconds: float, shown: str) -> None:
    assert readable_duration(milliseconds) == shown


def test_the_audit_shows_durations_and_sizes_readably(admin_client: Any) -> None:
    calls = [
        ToolCall.objects.create(
            tool_name=tool_name, transport="stdio", outcome="ok", duration_ms=duration, result_bytes=size
        )
        for tool_name, duration, size in (("fast", 0.421, 89), ("slow", 1250.0, 3500))
    ]

    listed = admin_client.get(CALLS_URL).text
    shown = admin_client.get(f"{CALLS_URL}{calls[1].pk}/change/").text

    assert "0.42 ms" in listed and "1.25 s" in listed
    assert "0.421" not in listed
    assert "1.25 s" in shown and "3.4\xa0KB" in shown


def test_the_try_it_form_gives_nullable_and_decimal_arguments_their_own_widgets() -> None:
    schema = {
        "type": "object",
        "properties": {
            "status": {"anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}], "description": "S"},
            "size": {"anyOf": [{"type": "integer", "maximum": 9}, {"type": "null"}], "default": 3},
            "price": {"anyOf": [{"type": "number"}, {"type": "string", "pattern": "^[0-9]+$", "maxLength": 20}]},
            "either": {"anyOf": [{"type": "string"}, {"type": "object"}]},
        },
    }

    made = {argument.name: (argument.kind, field) for argument, field in arguments_of(schema, 1000)}

    assert {name: kind for name, (kind, _field) in made.items()} == {
        "status": "choice",
        "size": "integer",
        "price": "text",
        "either": "json",
    }
    assert (made["status"][1].help_text, made["size"][1].max_value, made["price"][1].max_length) == ("S", 9, 20)
    assert initial_of(schema, Argument("size", "arg_size", "integer")) == 3
