"""Reads run in a transaction only where it carries the statement timeout (PostgreSQL); writes always do."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from mcp_tools.tools.executors.queries import operations
from mcp_tools.tools.executors.queries.arguments import plan
from tests.queries import seed_users, spec_of

pytestmark = pytest.mark.django_db


@pytest.fixture
def people() -> dict[str, Any]:
    return seed_users()


def statements(name: str, arguments: dict[str, Any], user: Any) -> tuple[dict[str, Any], list[str]]:
    spec = spec_of(name)
    with CaptureQueriesContext(connection) as captured:
        result = operations.execute(spec, plan(spec, arguments), arguments, user)
    return result, [q["sql"].split()[0].upper() for q in captured.captured_queries]


def test_a_list_counts_and_reads_its_page_in_a_transaction_only_on_postgresql(people: dict[str, Any]) -> None:
    result, made = statements("items", {"limit": 10}, people["alice"])

    assert result["results"] and result["count"] > len(result["results"])
    if connection.vendor == "postgresql":
        assert "SET" in made and made.count("SELECT") == 2
    else:
        assert made == ["SELECT", "SELECT"]  # no BEGIN, COMMIT nor (inside a test's transaction) SAVEPOINT


def test_a_write_still_runs_in_a_transaction(people: dict[str, Any]) -> None:
    item = spec_of("items")  # any row alice may change
    first = operations.execute(item, plan(item, {"limit": 1}), {"limit": 1}, people["alice"])["results"][0]

    _, made = statements("item_update", {"id": first["id"], "name": "renamed"}, people["alice"])

    assert made[0] == "SAVEPOINT" and made[-1] == "RELEASE"
