"""A list's page and total: one SELECT counts the rows alongside the page where the database can, and the
answer is the same as counting apart, on every page, past the last one, and for every caller."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mcp_tools.tools.executors.queries import operations
from mcp_tools.tools.executors.queries.arguments import plan
from mcp_tools.tools.executors.queries.call import QueryCall, in_scope
from mcp_tools.tools.executors.queries.config import QuerySpec
from tests.queries import seed_users, spec_of

pytestmark = pytest.mark.django_db


def listed(spec: QuerySpec, user: Any, arguments: dict[str, Any], offset: int) -> QueryCall:
    checked = plan(spec, arguments)
    checked.offset = offset
    return QueryCall(spec, checked, arguments, user, in_scope(spec, user, "default"))


@pytest.fixture
def people() -> dict[str, Any]:
    return seed_users()


@pytest.mark.parametrize("username", ["alice", "bob", "carol"])
@pytest.mark.parametrize("offset", [0, 5, 10, 35, 1000])
@pytest.mark.parametrize("arguments", [{"limit": 10}, {"limit": 7, "order_by": "-price", "search": "a"}])
def test_one_select_answers_what_a_count_and_a_page_answer(
    people: dict[str, Any], username: str, offset: int, arguments: dict[str, Any]
) -> None:
    spec, user = spec_of("items"), people[username]

    apart = operations.run_list(listed(spec, user, arguments, offset))
    together = operations.counted_list(listed(spec, user, arguments, offset))

    if apart["results"]:
        assert together == apart
    else:
        assert together is None  # an empty page tells no total: the caller counts apart
    assert operations.execute(spec, listed(spec, user, arguments, offset).plan, arguments, user) == apart


def test_a_page_with_rows_takes_one_select(people: dict[str, Any]) -> None:
    spec, user = spec_of("items"), people["alice"]
    in_scope(spec, user, "default")

    with CaptureQueriesContext(connection) as captured:
        result = operations.execute(spec, plan(spec, {"limit": 10}), {"limit": 10}, user)

    assert result["results"] and result["count"] > len(result["results"])
    statements = [q["sql"].split()[0] for q in captured.captured_queries]
    assert statements.count("SELECT") == 1
    if connection.vendor != "postgresql":  # which sets its statement timeout in a transaction
        assert statements == ["SELECT"]
