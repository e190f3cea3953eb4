"""Dot-and-whisker charts: one small SVG per group (a row per tool or target: its value, the
noise interval around it, the value in figures), for the report's top, wrapped by CSS.

A shaded band repeats the best row's interval across the panel, so rows whose whiskers reach
into it read as ties rather than as a ranking."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

from toolbench.report import svg_axes as sa
from toolbench.report import svg_draw as sd
from toolbench.report.svg_draw import Style

WIDTH = 380.0
LABEL_CHARS = 22  # longer labels are cut with "…", the full text in their <title>
_PAD, _ROW = 8.0, 22.0
_HREF = re.compile(r"#[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Dot:
    label: str  # the row's name (a tool, or a target)
    value: float
    low: float | None  # the noise interval, None when not measured
    high: float | None
    style: Style  # colour/marker as in the other charts (same tool, same colour)
    tip: str  # hover text (<title>)
    href: str = ""  # "#some-id" within the page: the dot and its label link there ("" = no link)
    note: str = ""  # a short mark after the label, e.g. "↯" or "(ok 97 %)"


@dataclass(frozen=True)
class DotGroup:
    title: str  # e.g. "concurrency 10, keep-alive on"
    dots: tuple[Dot, ...]  # already ordered, best first
    unit: str  # axis label with units, e.g. "successful requests/s"
    band: bool = True  # shade the first dot's interval across the panel, so ties read as overlap
    zero: bool = False  # a line at 0, for changes that may go either way (a bar across it: no change)


def interval_charts(chart_id: str, groups: list[DotGroup], alt: str) -> list[str]:
    """One SVG per group, each with its own ids (`chart_id`-n-…) and its own title."""
    return [_group_svg(f"{chart_id}-{n}", group, alt) for n, group in enumerate(groups)]


def short(v: float) -> str:
    """A value in figures, four significant digits, no exponent."""
    if not math.isfinite(v):
        return "–"
    return f"{v:,.0f}" if abs(v) >= 1e4 else f"{v:,.4g}"


def safe_href(href: str) -> str:
    """Only a link to an id within the page; anything else (a URL, a script) gets no link."""
    return href if _HREF.fullmatch(href) else ""


def _interval(dot: Dot) -> tuple[float, float] | None:
    if dot.low is None or dot.high is None or not (math.isfinite(dot.low) and math.isfinite(dot.high)):
        return None
    return min(dot.low, dot.high), max(dot.low, dot.high)


def _plan(dots: tuple[Dot, ...], zero: bool) -> sa.AxisPlan:
    values = [d.value for d in dots if math.isfinite(d.value)]
    values += [v for d in dots if (span := _interval(d)) for v in span]
    if not zero and sa.wants_log(values):
        return sa.auto_axis(values, True, most_log=5)
    return sa.auto_axis(values, False, from_zero=True, count=6 if zero else 4)


def _label(dot: Dot) -> str:
    return sd.trimmed(dot.label, LABEL_CHARS) + (f" {dot.note}" if dot.note else "")


def _group_svg(prefix: str, group: DotGroup, alt: str) -> str:
    labels = [_label(d) for d in group.dots]
    # A change reads best as a signed figure with one decimal (its unit, %, is on the axis).
    values = [f"{d.value:+,.1f}" if group.zero and math.isfinite(d.value) else short(d.value) for d in group.dots]
    label_w = min(WIDTH * 0.5, max((sd.text_width(t, sd.TICK_FONT) for t in labels), default=0.0) + 10)
    value_w = max((sd.text_width(t, sd.TICK_FONT) for t in values), default=0.0) + 10
    title = sd.wrap(group.title, WIDTH - 2 * _PAD, sd.TITLE_FONT) if group.title else []
    top = _PAD + len(title) * sd.TITLE_FONT * sd.LINE_HEIGHT + 4
    px0, px1 = _PAD + label_w, WIDTH - _PAD - value_w
    rows_end = top + len(group.dots) * _ROW
    unit = sd.wrap(group.unit, px1 - px0 + value_w, sd.LABEL_FONT) if group.unit else []
    height = rows_end + 6 + sd.TICK_FONT + 6 + len(unit) * sd.LABEL_FONT * sd.LINE_HEIGHT + _PAD
    plan = _plan(group.dots, group.zero)
    xs = plan.scale(px0 + 6, px1 - 6)
    out = [sd.svg_open(prefix, WIDTH, height, f"{group.title}: {alt}" if group.title else alt, _summary(group)),
           sd.marker_defs(prefix, [d.style for d in group.dots])]
    if title:
        out.append(sd.lines_text(_PAD, _PAD + sd.TITLE_FONT, title, sd.TITLE_FONT, extra=' font-weight="bold"'))
    out.append(_axis(plan, xs, top, rows_end))
    first = _interval(group.dots[0]) if group.dots else None
    if group.band and first is not None:
        a, b = xs.at(_clamped(first[0], xs)), xs.at(_clamped(first[1], xs))
        out.append(f'<rect class="band" x="{sd.num(a)}" y="{sd.num(top)}" width="{sd.num(max(b - a, 1.0))}" '
                   f'height="{sd.num(rows_end - top)}" fill="{sd.colour(group.dots[0].style)}" fill-opacity="0.13"/>')
    if group.zero and xs.holds(0.0) and not xs.log:
        at = sd.num(xs.at(0.0))
        out.append(f'<path class="zero" d="M{at},{sd.num(top)}V{sd.num(rows_end)}" stroke="{sd.INK}" '
                   'stroke-width="1.2"/>')
    for n, (dot, label, value) in enumerate(zip(group.dots, labels, values)):
        out.append(_row(prefix, dot, label, value, top + (n + 0.5) * _ROW, xs))
    if unit:
        out.append(sd.lines_text((px0 + WIDTH - _PAD) / 2, rows_end + sd.TICK_FONT + 12 + sd.LABEL_FONT * 0.9,
                                 unit, sd.LABEL_FONT, "middle"))
    out.append("</svg>")
    return "".join(out)


def _clamped(v: float, xs: sa.Scale) -> float:
    return min(max(v, xs.lo), xs.hi)


def _axis(plan: sa.AxisPlan, xs: sa.Scale, top: float, rows_end: float) -> str:
    grid, labels = [], []
    for at, label in plan.ticks:
        if not xs.holds(at):
            continue
        x = xs.at(at)
        grid.append(f"M{sd.num(x)},{sd.num(top)}V{sd.num(rows_end + 4)}")
        labels.append(sd.text(x, rows_end + sd.TICK_FONT + 6, label, anchor="middle"))
    line = f'<path d="M{sd.num(xs.start - 6)},{sd.num(rows_end)}H{sd.num(xs.end + 6)}" stroke="{sd.INK}"/>'
    grid_path = f'<path d="{"".join(grid)}" fill="none" stroke="{sd.GRID}"/>' if grid else ""
    return grid_path + line + "".join(labels)


def _row(prefix: str, dot: Dot, label: str, value: str, cy: float, xs: sa.Scale) -> str:
    href = safe_href(dot.href)
    full = dot.label + (f" {dot.note}" if dot.note else "")
    name = sd.text(_PAD, cy + sd.TICK_FONT * 0.35, label, title=full if full != label else "")
    out = [f'<a href="{sd.esc(href)}">{name}</a>' if href else name]
    span = _interval(dot)
    if span is not None:
        a, b = xs.at(_clamped(span[0], xs)), xs.at(_clamped(span[1], xs))
        top, foot = sd.num(cy - 4), sd.num(cy + 4)
        out.append(f'<path class="whisker" d="M{sd.num(a)},{sd.num(cy)}H{sd.num(b)}M{sd.num(a)},{top}V{foot}'
                   f'M{sd.num(b)},{top}V{foot}" {sd.stroke(Style(dot.style.index), 1.4)}/>')
    if xs.shows(dot.value):
        drawn = f"<g><title>{sd.esc(dot.tip)}</title>{sd.marker(prefix, dot.style, xs.at(dot.value), cy)}</g>"
        out.append(f'<a href="{sd.esc(href)}">{drawn}</a>' if href else drawn)
    out.append(sd.text(WIDTH - _PAD, cy + sd.TICK_FONT * 0.35, value, anchor="end"))
    return "".join(out)


def _summary(group: DotGroup) -> str:
    rows = []
    for dot in group.dots:
        span = _interval(dot)
        rows.append(f"{dot.label}: {short(dot.value)}" + (f" ({short(span[0])} to {short(span[1])})" if span else ""))
    head = f"{group.title}, {group.unit}" if group.title else group.unit
    return f"{head}. " + ("; ".join(rows) + "." if rows else "No rows.")
