"""The calls dashboard: the audit trail of a recent period, aggregated in the database and drawn as SVG.

``summarize(period, now)`` does the counting with a bounded number of queries and rows (time buckets,
the top tools and users, a capped sample of durations for percentiles); ``DashboardAdmin`` adds the
page to the ToolCall admin for staff who may view tool calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from typing import Any

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Avg, Count, Max, Q, QuerySet
from django.db.models.functions import Trunc
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern, path
from django.utils import timezone
from django.utils.safestring import SafeString
from django.utils.translation import gettext_lazy as _

from mcp_tools.admin import charts
from mcp_tools.admin.charts import Series
from mcp_tools.models import ToolCall

Outcome = ToolCall.Outcome
PERMISSION = "mcp_tools.view_toolcall"
TOP_TOOLS = 6
TOP_ROWS = 10
#: The most durations of one tool read to work out its percentiles (the latest calls).
SAMPLE = 1_000
ERRORS = (Outcome.ERROR, Outcome.TIMEOUT, Outcome.INVALID)
DENIALS = (Outcome.DENIED, Outcome.RATE_LIMITED)
# Calls that waited for a person's yes and did not get one (yet): asked, declined, unconfirmed, pending.
UNCONFIRMED = (Outcome.ASKED, Outcome.DECLINED, Outcome.UNCONFIRMED, Outcome.PENDING)
OTHER = "other"
OUTCOME_TONES = {
    Outcome.ERROR: "error",
    Outcome.DENIED: "6",
    Outcome.RATE_LIMITED: "2",
    Outcome.INVALID: "5",
    Outcome.TIMEOUT: "4",
    Outcome.CANCELLED: "other",
}


@dataclass(frozen=True)
class Period:
    """A choice of the period selector: ``buckets`` buckets of ``width`` (or days), counted by ``unit``."""

    key: str
    label: Any
    unit: str
    width: timedelta
    buckets: int
    label_format: str


PERIODS = {
    p.key: p
    for p in (
        Period("1h", _("Last hour"), "minute", timedelta(minutes=5), 12, "%H:%M"),
        Period("24h", _("Last 24 hours"), "hour", timedelta(hours=1), 24, "%H:%M"),
        Period("7d", _("Last 7 days"), "hour", timedelta(hours=6), 28, "%a %H:%M"),
        Period("30d", _("Last 30 days"), "day", timedelta(days=1), 30, "%b %d"),
    )
}
DEFAULT_PERIOD = "24h"


@dataclass
class Dashboard:
    period: Period
    start: datetime
    now: datetime
    labels: list[str] = field(default_factory=list)
    calls: int = 0
    errors: int = 0
    denied: int = 0
    confirmed: int = 0  # calls that ran on a person's yes
    unconfirmed: int = 0  # calls asked and not (yet) confirmed
    average_ms: float | None = None
    tools: list[Series] = field(default_factory=list)
    outcomes: list[Series] = field(default_factory=list)
    slowest: list[dict[str, Any]] = field(default_factory=list)
    users: list[dict[str, Any]] = field(default_factory=list)

    @property
    def tool_rows(self) -> list[tuple[str, list[float]]]:
        return [(label, [s.values[i] for s in self.tools]) for i, label in enumerate(self.labels)]

    @property
    def outcome_rows(self) -> list[tuple[str, list[float]]]:
        return [(label, [s.values[i] for s in self.outcomes]) for i, label in enumerate(self.labels)]


def _floor(now: datetime, period: Period) -> datetime:
    """The start of the bucket holding ``now``, in the current time zone."""
    local = timezone.localtime(now)
    if period.unit == "day":
        return timezone.make_aware(datetime.combine(local.date(), time.min))
    step = int(period.width.total_seconds())
    seconds = local.hour * 3600 + local.minute * 60 + local.second
    floored = seconds - seconds % step
    return local.replace(hour=floored // 3600, minute=floored % 3600 // 60, second=0, microsecond=0)


def buckets(period: Period, now: datetime) -> list[datetime]:
    """The starts of the period's buckets, oldest first, the last one holding ``now``."""
    last = _floor(now, period)
    if period.unit == "day":
        first = last.date() - timedelta(days=period.buckets - 1)
        return [
            timezone.make_aware(datetime.combine(first + timedelta(days=i), time.min)) for i in range(period.buckets)
        ]
    zone = timezone.get_current_timezone()
    return [
        datetime.fromtimestamp(last.timestamp() - period.width.total_seconds() * i, tz=zone)
        for i in reversed(range(period.buckets))
    ]


def _index(moment: datetime, starts: list[datetime], period: Period) -> int | None:
    if period.unit == "day":
        day: date = timezone.localtime(moment).date()
        position = (day - timezone.localtime(starts[0]).date()).days
    else:
        position = math.floor((moment.timestamp() - starts[0].timestamp()) / period.width.total_seconds())
    return position if 0 <= position < len(starts) else None


def _per_bucket(rows: QuerySet[Any], key: str, starts: list[datetime], period: Period) -> dict[str, list[float]]:
    """Counts per ``key`` value and bucket, from rows grouped by the truncated time."""
    counted: dict[str, list[float]] = {}
    for row in rows:
        position = _index(row["moment"], starts, period)
        if position is not None:
            counted.setdefault(row[key] if key else "", [0.0] * len(starts))[position] += row["n"]
    return counted


def percentile(values: list[float], share: float) -> float:
    """The nearest-rank percentile of sorted ``values``."""
    if not values:
        return 0.0
    return values[max(0, math.ceil(share * len(values)) - 1)]


def summarize(key: str, now: datetime | None = None) -> Dashboard:
    """The dashboard of period ``key`` (one of PERIODS) ending at ``now``."""
    period = PERIODS.get(key, PERIODS[DEFAULT_PERIOD])
    now = now or timezone.now()
    starts = buckets(period, now)
    board = Dashboard(period=period, start=starts[0], now=now)
    board.labels = [timezone.localtime(s).strftime(period.label_format) for s in starts]
    calls = ToolCall.objects.filter(created_at__gte=starts[0], created_at__lte=now).order_by()
    totals = calls.aggregate(
        calls=Count("pk"),
        errors=Count("pk", filter=Q(outcome__in=ERRORS)),
        denied=Count("pk", filter=Q(outcome__in=DENIALS)),
        confirmed=Count("pk", filter=~Q(confirmation="")),
        unconfirmed=Count("pk", filter=Q(outcome__in=UNCONFIRMED)),
        average=Avg("duration_ms"),
    )
    board.calls, board.errors, board.denied = totals["calls"], totals["errors"], totals["denied"]
    board.confirmed, board.unconfirmed = totals["confirmed"], totals["unconfirmed"]
    board.average_ms = totals["average"]
    if not board.calls:
        return board
    timed = calls.annotate(moment=Trunc("created_at", period.unit))
    ranked = calls.values("tool_name").annotate(n=Count("pk")).order_by("-n", "tool_name")[:TOP_TOOLS]
    top = [row["tool_name"] for row in ranked]
    per_tool = _per_bucket(
        timed.filter(tool_name__in=top).values("moment", "tool_name").annotate(n=Count("pk")),
        "tool_name",
        starts,
        period,
    )
    every = _per_bucket(timed.values("moment").annotate(n=Count("pk")), "", starts, period).get("", [0.0] * len(starts))
    board.tools = [Series(name, per_tool.get(name, [0.0] * len(starts)), str(i)) for i, name in enumerate(top)]
    rest = [every[i] - sum(s.values[i] for s in board.tools) for i in range(len(starts))]
    if any(rest):
        board.tools.append(Series(str(_("other tools")), rest, OTHER))
    failing = timed.exclude(outcome=Outcome.OK).values("moment", "outcome").annotate(n=Count("pk"))
    per_outcome = _per_bucket(failing, "outcome", starts, period)
    board.outcomes = [
        Series(str(Outcome(value).label), per_outcome[value], OUTCOME_TONES.get(Outcome(value), OTHER))
        for value in Outcome.values
        if value in per_outcome
    ]
    board.slowest = _slowest(calls)
    board.users = [
        dict(row)
        for row in calls.values("username")
        .annotate(
            calls=Count("pk"),
            errors=Count("pk", filter=Q(outcome__in=ERRORS)),
            denied=Count("pk", filter=Q(outcome__in=DENIALS)),
        )
        .order_by("-calls", "username")[:TOP_ROWS]
    ]
    return board


def _slowest(calls: QuerySet[ToolCall]) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = [
        dict(row)
        for row in calls.values("tool_name")
        .annotate(calls=Count("pk"), average_ms=Avg("duration_ms"), max_ms=Max("duration_ms"))
        .order_by("-average_ms", "tool_name")[:TOP_ROWS]
    ]
    for row in rows:
        sample = sorted(
            calls.filter(tool_name=row["tool_name"])
            .order_by("-created_at")
            .values_list("duration_ms", flat=True)[:SAMPLE]
        )
        row["p50_ms"], row["p95_ms"] = percentile(sample, 0.5), percentile(sample, 0.95)
    return rows


def charts_of(board: Dashboard) -> dict[str, SafeString]:
    """The SVG charts of a dashboard with calls."""
    unit = str(_("calls"))
    drawn = {
        "tools": charts.stacked_bars("mcp-calls", str(_("Calls per tool")), board.labels, board.tools, unit),
        "slowest": charts.bars(
            "mcp-slowest",
            str(_("Slowest tools")),
            [row["tool_name"] for row in board.slowest],
            [
                Series(str(_("median")), [row["p50_ms"] for row in board.slowest], "1"),
                Series(str(_("95th percentile")), [row["p95_ms"] for row in board.slowest], "0"),
            ],
            str(_("milliseconds")),
            whole=False,
        ),
        "users": charts.bars(
            "mcp-users",
            str(_("Top users")),
            [row["username"] or "—" for row in board.users],
            [
                Series(str(_("calls")), [row["calls"] for row in board.users], "0"),
                Series(str(_("errors")), [row["errors"] for row in board.users], "error"),
                Series(str(_("denied")), [row["denied"] for row in board.users], "6"),
            ],
            unit,
        ),
    }
    if board.outcomes:
        drawn["outcomes"] = charts.lines(
            "mcp-outcomes", str(_("Errors and denials")), board.labels, board.outcomes, unit
        )
    return drawn


class DashboardAdmin(admin.ModelAdmin):
    """Adds the calls dashboard to the ToolCall admin, linked from its change list."""

    def get_urls(self) -> list[URLPattern]:
        opts = self.model._meta
        name = f"{opts.app_label}_{opts.model_name}_dashboard"
        return [path("dashboard/", self.admin_site.admin_view(self.dashboard_view), name=name), *super().get_urls()]

    def dashboard_view(self, request: HttpRequest) -> HttpResponse:
        if not request.user.has_perm(PERMISSION):
            raise PermissionDenied
        key = request.GET.get("period", DEFAULT_PERIOD)
        board = summarize(key if key in PERIODS else DEFAULT_PERIOD)
        context = {
            **self.admin_site.each_context(request),
            "title": _("Tool calls dashboard"),
            "subtitle": None,
            "opts": self.model._meta,
            "board": board,
            "periods": list(PERIODS.values()),
            "charts": charts_of(board) if board.calls else {},
        }
        request.current_app = self.admin_site.name
        return TemplateResponse(request, "admin/mcp_tools/toolcall/dashboard.html", context)
