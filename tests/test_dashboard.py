"""The calls dashboard: aggregates of the audit trail per period, its SVG charts, and who may see it."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.test import Client
from django.utils import timezone

from mcp_tools.admin import charts
from mcp_tools.admin.dashboard import TOP_TOOLS, charts_of, percentile, summarize
from mcp_tools.models import ToolCall
from tests.admin_users import staff

pytestmark = pytest.mark.django_db

DASHBOARD_URL = "/admin/mcp_tools/toolcall/dashboard/"
NOW = datetime(2026, 3, 10, 15, 37, tzinfo=UTC)
SVG = "{http://www.w3.org/2000/svg}"


def call(tool: str, at: datetime, user: str = "alice", outcome: str = "ok", ms: float = 10.0) -> None:
    ToolCall.objects.create(
        created_at=at, tool_name=tool, username=user, outcome=outcome, duration_ms=ms, transport="http"
    )


def at(hour: int, minute: int = 0, day: int = 10) -> datetime:
    return datetime(2026, 3, day, hour, minute, tzinfo=UTC)


@pytest.fixture
def utc() -> Any:
    with timezone.override("UTC"):
        yield


@pytest.fixture
def seeded(utc: None) -> None:
    call("add", at(15, 10))
    call("add", at(15, 20))
    call("add", at(15, 30), user="bob", outcome="error", ms=30)
    call("add", at(13, 5))
    call("echo", at(13, 20), user="bob", outcome="denied", ms=1)
    call("echo", at(13, 25), user="carol")
    call("slow", at(14, 0), user="carol", ms=900)
    call("add", NOW - timedelta(hours=25))  # before the period
    call("add", NOW + timedelta(minutes=1))  # after now


def series(board: Any, name: str, which: str = "tools") -> list[float]:
    [found] = [s for s in getattr(board, which) if s.name == name]
    return list(found.values)


def test_calls_per_tool_are_counted_per_hour(seeded: None) -> None:
    board = summarize("24h", now=NOW)

    assert (board.labels[0], board.labels[-1], len(board.labels)) == ("16:00", "15:00", 24)
    assert [s.name for s in board.tools] == ["add", "echo", "slow"]
    assert series(board, "add")[-3:] == [1, 0, 3]
    assert series(board, "echo")[-3:] == [2, 0, 0]
    assert series(board, "slow")[-3:] == [0, 1, 0]
    assert sum(series(board, "add")) == 4
    assert (board.calls, board.errors, board.denied) == (7, 1, 1)


def test_errors_and_denials_are_counted_per_outcome(seeded: None) -> None:
    board = summarize("24h", now=NOW)

    assert [s.name for s in board.outcomes] == ["Tool error", "Denied or unknown tool"]
    assert series(board, "Tool error", "outcomes")[-3:] == [0, 0, 1]
    assert series(board, "Denied or unknown tool", "outcomes")[-3:] == [1, 0, 0]


def test_top_users_are_ordered_by_calls(seeded: None) -> None:
    board = summarize("24h", now=NOW)

    assert board.users == [
        {"username": "alice", "calls": 3, "errors": 0, "denied": 0},
        {"username": "bob", "calls": 2, "errors": 1, "denied": 1},
        {"username": "carol", "calls": 2, "errors": 0, "denied": 0},
    ]


def test_the_slowest_tools_come_first_with_their_percentiles(utc: None) -> None:
    for ms in range(10, 101, 10):
        call("add", at(15, 0), ms=ms)
    call("slow", at(14, 0), ms=900)
    call("slow", at(14, 5), ms=100)

    board = summarize("24h", now=NOW)

    slow, add = board.slowest
    assert (slow["tool_name"], slow["calls"], slow["average_ms"], slow["max_ms"]) == ("slow", 2, 500, 900)
    assert (add["tool_name"], add["p50_ms"], add["p95_ms"], add["max_ms"]) == ("add", 50, 100, 100)


def test_the_last_hour_is_counted_in_five_minute_buckets(seeded: None) -> None:
    board = summarize("1h", now=NOW)

    assert (board.labels[0], board.labels[-1], len(board.labels)) == ("14:40", "15:35", 12)
    assert series(board, "add") == [0] * 6 + [1, 0, 1, 0, 1, 0]
    assert board.calls == 3


def test_tools_past_the_top_ones_are_counted_together(utc: None) -> None:
    for n, tool in enumerate(f"tool{i}" for i in range(TOP_TOOLS + 2)):
        for _ in range(TOP_TOOLS + 2 - n):
            call(tool, at(12))

    board = summarize("24h", now=NOW)

    assert [s.name for s in board.tools] == [f"tool{i}" for i in range(TOP_TOOLS)] + ["other tools"]
    assert series(board, "other tools")[-4] == 2 + 1


def test_days_follow_the_local_time_zone_across_a_clock_change() -> None:
    # Chicago moved its clocks forward on 8 March 2026: that day had 23 hours.
    with timezone.override("America/Chicago"):
        call("add", datetime(2026, 3, 8, 5, 30, tzinfo=UTC))  # 7 March, 23:30 local
        call("add", datetime(2026, 3, 8, 6, 30, tzinfo=UTC))  # 8 March, 00:30 local
        call("add", datetime(2026, 3, 9, 4, 30, tzinfo=UTC))  # 8 March, 23:30 local
        call("add", datetime(2026, 3, 9, 5, 30, tzinfo=UTC))  # 9 March, 00:30 local

        board = summarize("30d", now=NOW)

    assert board.labels[-4:] == ["Mar 07", "Mar 08", "Mar 09", "Mar 10"]
    assert series(board, "add")[-4:] == [1, 2, 1, 0]


def test_percentiles_take_the_nearest_rank() -> None:
    assert percentile([], 0.5) == 0
    assert percentile([1.0, 2.0, 3.0, 4.0], 0.5) == 2.0
    assert percentile([5.0], 0.95) == 5.0


# Charts ------------------------------------------------------------------------------------------


def test_every_chart_is_well_formed_svg_with_its_series(seeded: None) -> None:
    drawn = charts_of(summarize("24h", now=NOW))

    assert set(drawn) == {"tools", "outcomes", "slowest", "users"}
    for svg in drawn.values():
        root = ET.fromstring(svg)
        assert root.tag == f"{SVG}svg" and root.get("role") == "img"
        assert root.find(f"{SVG}title").text and root.find(f"{SVG}desc").text
    tools = ET.fromstring(drawn["tools"])
    tips = [t.text for t in tools.iter(f"{SVG}title")]
    assert "15:00: add, 3 calls" in tips and "13:00: echo, 2 calls" in tips
    legend = [t.text for g in tools.iter(f"{SVG}g") for t in g.iter(f"{SVG}text")]
    assert legend == ["add", "echo", "slow"]


def test_chart_text_is_escaped() -> None:
    svg = charts.stacked_bars("x", "<b>&", ["<12>"], [charts.Series("a&b<c>", [3])], "calls")

    root = ET.fromstring(svg)
    assert root.find(f"{SVG}title").text == "<b>&"
    assert "<12>: a&b<c>, 3 calls" in [t.text for t in root.iter(f"{SVG}title")]


def test_axes_end_on_a_round_number() -> None:
    assert charts.nice_ceiling(7) == (8, 2)
    assert charts.nice_ceiling(130) == (150, 50)
    assert charts.nice_ceiling(0) == (1, 1)


# The page ----------------------------------------------------------------------------------------


def test_the_page_shows_charts_and_tables(admin_client: Any) -> None:
    now = timezone.now()
    call("add", now - timedelta(minutes=5))
    call("add", now - timedelta(minutes=4), user="bob", outcome="error", ms=40)

    response = admin_client.get(DASHBOARD_URL, {"period": "1h"})

    assert response.status_code == 200
    page = response.content.decode()
    assert page.count('class="mcp-chart"') == 4
    for table in ("mcp-summary", "mcp-calls-table", "mcp-outcomes-table", "mcp-slowest-table", "mcp-users-table"):
        assert f'id="{table}"' in page
    assert '<th scope="row">bob</th><td class="numeric">1</td><td class="numeric">1</td>' in page
    assert 'aria-current="page">Last hour</a>' in page


def test_an_empty_audit_trail_shows_a_friendly_page(admin_client: Any) -> None:
    response = admin_client.get(DASHBOARD_URL)

    page = response.content.decode()
    assert response.status_code == 200 and 'class="mcp-chart"' not in page
    assert "No tools were called in this period." in page


def test_an_unknown_period_falls_back_to_a_day(admin_client: Any) -> None:
    response = admin_client.get(DASHBOARD_URL, {"period": "<script>alert(1)</script>"})

    assert response.status_code == 200 and response.context["board"].period.key == "24h"
    assert "<script>alert(1)" not in response.content.decode()


def test_staff_without_the_view_permission_are_refused(django_user_model: Any) -> None:
    call("add", timezone.now())

    assert staff("staffer", "view_tool").get(DASHBOARD_URL).status_code == 403


def test_staff_with_the_view_permission_see_it(django_user_model: Any) -> None:
    call("add", timezone.now())

    response = staff("staffer", "view_toolcall").get(DASHBOARD_URL)

    assert response.status_code == 200 and 'class="mcp-chart"' in response.content.decode()


def test_people_who_are_not_signed_in_are_sent_to_the_login(client: Client) -> None:
    response = client.get(DASHBOARD_URL)

    assert response.status_code == 302 and "/login/" in response["Location"]


def test_the_change_list_links_to_the_dashboard(admin_client: Any) -> None:
    page = admin_client.get("/admin/mcp_tools/toolcall/").content.decode()

    assert f'href="{DASHBOARD_URL}"' in page


def test_hostile_tool_and_user_names_are_shown_as_text(admin_client: Any) -> None:
    hostile = '<script>alert("x")</script>' + "y" * 90
    call(hostile, timezone.now(), user='"><img src=x onerror=alert(1)>')

    response = admin_client.get(DASHBOARD_URL)

    page = response.content.decode()
    assert response.status_code == 200
    assert "<script>alert" not in page and "<img src=x" not in page
    drawn = charts_of(response.context["board"])
    tools, users = ET.fromstring(drawn["tools"]), ET.fromstring(drawn["users"])
    assert any(hostile in (t.text or "") for t in tools.iter(f"{SVG}title"))
    assert any('"><img src=x' in (t.text or "") for t in users.iter(f"{SVG}title"))
    legend = [t.text or "" for g in tools.iter(f"{SVG}g") for t in g.iter(f"{SVG}text")]
    assert legend == [hostile[: charts.LEGEND_CHARS - 1] + "…"]
