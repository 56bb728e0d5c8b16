"""Small server-rendered SVG charts for admin pages: stacked bars, lines and horizontal bars.

Each chart is one ``<svg role="img">`` with a ``<title>`` and a ``<desc>`` for assistive technology, a
``<title>`` tooltip on every bar and point, axes with labels and a legend. Colours come from the admin's
CSS variables through classes (``mcp_tools/admin.css``), with plain colours as attributes for SVG read
on its own. No script: the page's table beside each chart carries the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

WIDTH, HEIGHT = 900, 280
LEFT, RIGHT, TOP, BOTTOM = 60, 32, 16, 78
MAX_X_LABELS = 12
#: The longest name a legend shows; the bars' tooltips carry the whole name.
LEGEND_CHARS = 30
#: Fallback colours, in the order of the tones; the admin's CSS variables replace the first ones.
PALETTE = ("#417690", "#79aec8", "#e5b946", "#5b9a68", "#b05c8a", "#8a6fbf", "#d9822b", "#888888")
TONES = {"error": "#ba2121", "other": "#888888"}


@dataclass(frozen=True)
class Series:
    """One named row of values, one per category or time bucket; ``tone`` picks its colour."""

    name: str
    values: Sequence[float]
    tone: str = ""


def tone_of(series: Series, index: int) -> tuple[str, str]:
    """The CSS class and fallback colour of a series."""
    if series.tone in TONES:
        return f"mcp-tone-{series.tone}", TONES[series.tone]
    position = int(series.tone) if series.tone.isdigit() else index
    return f"mcp-tone-{position % len(PALETTE)}", PALETTE[position % len(PALETTE)]


def nice_ceiling(value: float, whole: bool = True) -> tuple[float, float]:
    """An axis top at or above ``value`` and its tick step (1, 2 or 5 times a power of ten; four or five ticks).

    With ``whole`` (counts) the step is at least 1.
    """
    if value <= 0:
        return 1.0, 1.0
    rough = value / 4
    power = 10 ** math.floor(math.log10(rough))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= rough)
    step = max(step, 1) if whole else step
    return step * math.ceil(value / step), step


def number(value: float) -> str:
    return f"{value:,.0f}" if value >= 10 or value == int(value) else f"{value:,.1f}"


def _svg(ident: str, title: str, description: str, body: list[str], legend: Sequence[Series] = ()) -> SafeString:
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="mcp-chart" viewBox="0 0 {WIDTH} {HEIGHT}" '
        f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-labelledby="{ident}-title {ident}-desc">',
        f'<title id="{ident}-title">{escape(title)}</title>',
        f'<desc id="{ident}-desc">{escape(description)}</desc>',
        *body,
    ]
    x, y = LEFT, HEIGHT - 34
    for index, series in enumerate(legend):
        css, colour = tone_of(series, index)
        name = series.name if len(series.name) <= LEGEND_CHARS else series.name[: LEGEND_CHARS - 1] + "…"
        label = escape(name)
        room = 24 + 8 * len(name)
        if x + room > WIDTH - RIGHT and x > LEFT:
            x, y = LEFT, y + 18
        parts.append(
            f'<g class="mcp-legend"><rect class="{css}" fill="{colour}" x="{x}" y="{y - 9}" width="10" height="10"/>'
            f'<text x="{x + 14}" y="{y}">{label}</text></g>'
        )
        x += room
    parts.append("</svg>")
    return mark_safe("".join(parts))  # every text above is escaped


def _y_axis(top: float, step: float, unit: str) -> list[str]:
    plot_h = HEIGHT - TOP - BOTTOM
    parts = []
    ticks = round(top / step)
    for i in range(ticks + 1):
        value = step * i
        y = HEIGHT - BOTTOM - plot_h * value / top
        parts.append(
            f'<line class="mcp-grid" stroke="#dddddd" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>'
        )
        parts.append(f'<text class="mcp-tick" x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">{number(value)}</text>')
    parts.append(
        f'<text class="mcp-unit" x="12" y="{TOP + plot_h / 2:.1f}" text-anchor="middle" '
        f'transform="rotate(-90 12 {TOP + plot_h / 2:.1f})">{escape(unit)}</text>'
    )
    return parts


def _x_labels(labels: Sequence[str], centres: Sequence[float]) -> list[str]:
    every = max(1, math.ceil(len(labels) / MAX_X_LABELS))
    y = HEIGHT - BOTTOM + 16
    return [
        f'<text class="mcp-tick" x="{centres[i]:.1f}" y="{y}" text-anchor="middle">{escape(label)}</text>'
        for i, label in enumerate(labels)
        if i % every == 0
    ]


def stacked_bars(ident: str, title: str, labels: Sequence[str], series: Sequence[Series], unit: str) -> SafeString:
    """One bar per label (a time bucket), stacked by series."""
    totals = [sum(s.values[i] for s in series) for i in range(len(labels))]
    top, step = nice_ceiling(max(totals, default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(len(labels), 1)
    bar = max(slot * 0.8, 1.0)
    body = _y_axis(top, step, unit)
    centres = []
    for i, label in enumerate(labels):
        x = LEFT + slot * i + (slot - bar) / 2
        centres.append(x + bar / 2)
        base = 0.0
        for index, row in enumerate(series):
            value = row.values[i]
            if value <= 0:
                continue
            css, colour = tone_of(row, index)
            height = plot_h * value / top
            y = HEIGHT - BOTTOM - plot_h * (base + value) / top
            tip = escape(f"{label}: {row.name}, {number(value)} {unit}")
            body.append(
                f'<rect class="{css}" fill="{colour}" x="{x:.1f}" y="{y:.1f}" width="{bar:.1f}" '
                f'height="{height:.1f}"><title>{tip}</title></rect>'
            )
            base += value
    body += _x_labels(labels, centres)
    names = ", ".join(s.name for s in series)
    description = f"Stacked bars of {unit} for {len(labels)} periods, by {names}. The table beside it has the numbers."
    return _svg(ident, title, description, body, series)


def lines(ident: str, title: str, labels: Sequence[str], series: Sequence[Series], unit: str) -> SafeString:
    """One line per series over the labels (time buckets), with a point at each value."""
    top, step = nice_ceiling(max((v for s in series for v in s.values), default=0))
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    slot = plot_w / max(len(labels), 1)
    centres = [LEFT + slot * i + slot / 2 for i in range(len(labels))]
    body = _y_axis(top, step, unit)
    for index, row in enumerate(series):
        css, colour = tone_of(row, index)
        points = [(centres[i], HEIGHT - BOTTOM - plot_h * v / top) for i, v in enumerate(row.values)]
        path = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
        body.append(f'<polyline class="{css}" fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
        for i, (x, y) in enumerate(points):
            if row.values[i] <= 0:
                continue
            tip = escape(f"{labels[i]}: {row.name}, {number(row.values[i])} {unit}")
            body.append(
                f'<circle class="{css}" fill="{colour}" cx="{x:.1f}" cy="{y:.1f}" r="3"><title>{tip}</title></circle>'
            )
    body += _x_labels(labels, centres)
    names = ", ".join(s.name for s in series)
    description = f"Lines of {unit} over {len(labels)} periods for {names}. The table beside it has the numbers."
    return _svg(ident, title, description, body, series)


def bars(
    ident: str, title: str, labels: Sequence[str], series: Sequence[Series], unit: str, whole: bool = True
) -> SafeString:
    """Horizontal bars: one group per label (a tool, a user), one bar per series in each group."""
    top, step = nice_ceiling(max((v for s in series for v in s.values), default=0), whole)
    left = 200
    plot_w = WIDTH - left - RIGHT
    plot_h = HEIGHT - TOP - BOTTOM
    slot = plot_h / max(len(labels), 1)
    bar = max(slot * 0.8 / max(len(series), 1), 1.0)
    body = []
    ticks = round(top / step)
    for i in range(ticks + 1):
        x = left + plot_w * step * i / top
        body.append(
            f'<line class="mcp-grid" stroke="#dddddd" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{HEIGHT - BOTTOM}"/>'
        )
        tick = number(step * i)
        body.append(f'<text class="mcp-tick" x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}" text-anchor="middle">{tick}</text>')
    centre = left + plot_w / 2
    body.append(
        f'<text class="mcp-unit" x="{centre:.1f}" y="{HEIGHT - BOTTOM + 34}" text-anchor="middle">{escape(unit)}</text>'
    )
    for i, label in enumerate(labels):
        y0 = TOP + slot * i + slot * 0.1
        shown = label if len(label) <= 30 else label[:29] + "…"
        y = y0 + slot * 0.4 + 4
        body.append(f'<text class="mcp-tick" x="{left - 6}" y="{y:.1f}" text-anchor="end">{escape(shown)}</text>')
        for index, row in enumerate(series):
            css, colour = tone_of(row, index)
            value = row.values[i]
            width = plot_w * value / top
            tip = escape(f"{label}: {row.name}, {number(value)} {unit}")
            body.append(
                f'<rect class="{css}" fill="{colour}" x="{left}" y="{y0 + bar * index:.1f}" width="{width:.1f}" '
                f'height="{bar:.1f}"><title>{tip}</title></rect>'
            )
    names = ", ".join(s.name for s in series)
    description = f"Horizontal bars of {unit} ({names}) for {len(labels)} rows. The table beside it has the numbers."
    return _svg(ident, title, description, body, series)
