"""Charts as inline SVG text, written here: no plotting library, no network, no files beside the report.

Every series keeps one colour and one marker per tool across all charts, and a line style per
keep-alive setting, so a chart reads without colour. The SVG has no size of its own (a viewBox
only: CSS sizes it), names itself with a <title> and <desc>, and every point with a tip carries
it as the <title> of the marker's group, shown on hover without a script."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from toolbench.report import svg_axes as sa
from toolbench.report import svg_draw as sd
from toolbench.report.svg_axes import wants_log
from toolbench.report.svg_draw import LINESTYLES, MARKERS, PALETTE, Style
from toolbench.report.svg_interval import Dot, DotGroup, interval_charts

__all__ = ["PALETTE", "MARKERS", "LINESTYLES", "Style", "Line", "Panel", "Tick", "Axes", "Dot", "DotGroup",
           "keepalive_style", "wants_log", "line_chart", "panels_chart", "interval_charts"]


@dataclass(frozen=True)
class Line:
    label: str
    xs: list[float]
    ys: list[float]
    style: Style = field(default_factory=Style)
    lows: list[float] | None = None  # the range over repetitions, drawn as error bars
    highs: list[float] | None = None
    # One text per point, shown on hover as the point's SVG <title> (no script needed);
    # a point whose y is NaN is not drawn and has no tip.
    tips: tuple[str, ...] | None = None


@dataclass(frozen=True)
class Panel:
    title: str
    lines: list[Line]


@dataclass(frozen=True)
class Tick:
    at: float
    label: str


@dataclass(frozen=True)
class Axes:
    xlabel: str
    ylabel: str
    log_x: bool = False
    log_y: bool = False
    x_ticks: tuple[Tick, ...] = ()  # fixed ticks with their labels
    y_from_zero: bool = False
    x_integer: bool = False  # whole numbers only on the x axis (seconds, counts)
    x_exact: bool = False  # ticks at exactly the x values drawn


def keepalive_style(index: int, keepalive: bool | None) -> Style:
    return Style(index, "-" if keepalive else ("--" if keepalive is False else ":"))


def line_chart(chart_id: str, lines: list[Line], axes: Axes, alt: str, title: str = "") -> str:
    return panels_chart(chart_id, [Panel(title, lines)], axes, alt, columns=1)


BESIDE = 0.36  # the most of a single chart's width a legend beside it may take; wider goes below
_SMALL_WIDTH, _SMALL_HEIGHT, _WIDEST = 460.0, 290.0, 1100.0


@dataclass(frozen=True)
class _Frame:
    """The margins every panel of a chart shares, so the panels line up."""
    width: float
    height: float
    top: float
    left: float
    right: float
    bottom: float
    xlabel: list[str]
    ylabel: list[str]


def panels_chart(chart_id: str, panels: list[Panel], axes: Axes, alt: str, columns: int = 2,
                 panel_size: tuple[float, float] = (7.5, 4.0)) -> str:
    """Small multiples sharing one legend below them; a single panel is an ordinary chart,
    its legend beside it when the labels are short enough, else below it."""
    panels = panels or [Panel("", [])]
    columns = max(1, min(columns, len(panels)))
    rows = math.ceil(len(panels) / columns)
    single = len(panels) == 1
    width = panel_size[0] * 100 if single else min(_WIDEST, _SMALL_WIDTH * columns)
    cell_h = panel_size[1] * 100 if single else _SMALL_HEIGHT
    entries = _legend_entries(panels)
    widest = max((sd.entry_width(label) for label, _ in entries), default=0.0)
    beside = single and bool(entries) and widest <= BESIDE * width
    cell_w = (width - (widest if beside else 0.0)) / columns
    frame, y_plans = _frame(panels, axes, cell_w, cell_h)
    body = []
    for n, (panel, y_plan) in enumerate(zip(panels, y_plans)):
        x0, y0 = (n % columns) * cell_w, (n // columns) * cell_h
        body.append(_panel(chart_id, panel, axes, frame, y_plan, x0, y0))
    if beside:
        box = sd.legend(chart_id, entries, width - widest, frame.top, widest, one_column=True)
        height = max(cell_h, frame.top + box.height + 8)
    else:
        box = sd.legend(chart_id, entries, 10.0, rows * cell_h + 2, width - 20)
        height = rows * cell_h + (box.height + 8 if entries else 0.0)
    styles = [line.style for panel in panels for line in panel.lines]
    return (sd.svg_open(chart_id, width, height, alt, _summary(panels)) + sd.marker_defs(chart_id, styles)
            + "".join(body) + box.svg + "</svg>")


def _legend_entries(panels: list[Panel]) -> list[tuple[str, Style]]:
    first: dict[str, Style] = {}
    for panel in panels:
        for line in panel.lines:
            first.setdefault(line.label, line.style)
    return sorted(first.items(), key=lambda item: sd.style_order(item[1]))


def _frame(panels: list[Panel], axes: Axes, cell_w: float, cell_h: float) -> tuple[_Frame, list[sa.AxisPlan]]:
    titles = max((len(sd.wrap(p.title, cell_w - 16, sd.TITLE_FONT)) for p in panels if p.title), default=0)
    top = titles * sd.TITLE_FONT * sd.LINE_HEIGHT + 10 if titles else 12.0
    xlabel = sd.wrap(axes.xlabel, cell_w - 60, sd.LABEL_FONT) if axes.xlabel else []
    bottom = 10 + sd.TICK_FONT + 6 + len(xlabel) * sd.LABEL_FONT * sd.LINE_HEIGHT
    plot_h = max(40.0, cell_h - top - bottom)
    ylabel = sd.wrap(axes.ylabel, plot_h, sd.LABEL_FONT) if axes.ylabel else []
    count = min(8.0, max(3.0, plot_h / 45))
    y_plans = [sa.auto_axis(_ys(p), axes.log_y, from_zero=axes.y_from_zero and not axes.log_y, count=count)
               for p in panels]
    ticks = max((sd.text_width(label, sd.TICK_FONT) for plan in y_plans for _, label in plan.ticks), default=0.0)
    left = len(ylabel) * sd.LABEL_FONT * sd.LINE_HEIGHT + 8 + ticks + 8
    return _Frame(cell_w, cell_h, top, left, 22.0, bottom, xlabel, ylabel), y_plans


def _ys(panel: Panel) -> list[float]:
    found = [y for line in panel.lines for y in line.ys]
    for line in panel.lines:
        if line.lows is not None and line.highs is not None:
            found += [*line.lows, *line.highs]
    return found


def _x_plan(panel: Panel, axes: Axes, plot_w: float) -> sa.AxisPlan:
    xs = sorted({x for line in panel.lines for x in line.xs if math.isfinite(x)})
    if axes.log_x:
        xs = [x for x in xs if x > 0]
    exact = [(x, f"{x:g}") for x in xs]
    if axes.x_ticks:
        return sa.fixed_axis(xs, [(t.at, t.label) for t in axes.x_ticks], axes.log_x)
    if len(xs) == 1:  # one value: centre it, rather than zoom into a sliver
        return sa.centred_axis(xs[0], axes.log_x, exact if axes.x_exact else None, axes.x_integer)
    if axes.x_exact and 0 < len(xs) <= 12:  # ticks at the values tried, e.g. the concurrencies
        return sa.fixed_axis(xs, exact, axes.log_x)
    return sa.auto_axis(xs, axes.log_x, integer=axes.x_integer, count=min(10.0, max(3.0, plot_w / 80)))


def _panel(chart_id: str, panel: Panel, axes: Axes, frame: _Frame, y_plan: sa.AxisPlan, x0: float,
           y0: float) -> str:
    px0, px1 = x0 + frame.left, x0 + frame.width - frame.right
    py0, py1 = y0 + frame.top, y0 + frame.height - frame.bottom
    x_plan = _x_plan(panel, axes, px1 - px0)
    xs, ys = x_plan.scale(px0, px1), y_plan.scale(py1, py0)
    out = ['<g class="panel">']
    if panel.title:
        lines = sd.wrap(panel.title, frame.width - 16, sd.TITLE_FONT)
        out.append(sd.lines_text(x0 + frame.width / 2, y0 + sd.TITLE_FONT + 2, lines, sd.TITLE_FONT, "middle",
                                 ' font-weight="bold"'))
    out.append(_y_axis(y_plan, ys, px0, px1))
    out.append(_x_axis(x_plan, xs, py0, py1, x0 + frame.width))
    out.append(f'<path d="M{sd.num(px0)},{sd.num(py0)}V{sd.num(py1)}H{sd.num(px1)}" fill="none" '
               f'stroke="{sd.INK}" stroke-width="1"/>')
    if frame.ylabel:
        mid, at = (py0 + py1) / 2, x0 + sd.LABEL_FONT + 2
        out.append(sd.lines_text(at, mid, frame.ylabel, sd.LABEL_FONT, "middle",
                                 f' transform="rotate(-90 {sd.num(at)} {sd.num(mid)})"'))
    if frame.xlabel:
        out.append(sd.lines_text((px0 + px1) / 2, py1 + sd.TICK_FONT + 8 + sd.LABEL_FONT, frame.xlabel,
                                 sd.LABEL_FONT, "middle"))
    placed = [_placed(line, xs, ys) for line in panel.lines]
    # Lines under markers: a marker, and the tip it carries, is never hidden by another series' line.
    for line, points in zip(panel.lines, placed):
        out.append(_error_bars(line, xs, ys))
        out.append(sd.polyline(points, line.style))
    for line, points in zip(panel.lines, placed):
        out.append(_markers(chart_id, line, points))
    out.append("</g>")
    return "".join(out)


def _placed(line: Line, xs: sa.Scale, ys: sa.Scale) -> list[tuple[float, float] | None]:
    return [(xs.at(x), ys.at(y)) if xs.shows(x) and ys.shows(y) else None for x, y in zip(line.xs, line.ys)]


def _y_axis(plan: sa.AxisPlan, ys: sa.Scale, px0: float, px1: float) -> str:
    grid, labels = [], []
    for at, label in plan.ticks:
        if not ys.holds(at):
            continue
        y = sd.num(ys.at(at))
        grid.append(f"M{sd.num(px0 - 4)},{y}H{sd.num(px1)}")
        labels.append(sd.text(px0 - 7, ys.at(at) + sd.TICK_FONT * 0.35, label, anchor="end"))
    return _grid(grid) + "".join(labels)


def _x_axis(plan: sa.AxisPlan, xs: sa.Scale, py0: float, py1: float, right_edge: float) -> str:
    grid, labels, last = [], [], -math.inf
    for at, label in sorted(plan.ticks):
        if not xs.holds(at):
            continue
        x = xs.at(at)
        grid.append(f"M{sd.num(x)},{sd.num(py0)}V{sd.num(py1 + 4)}")
        half = sd.text_width(label, sd.TICK_FONT) / 2
        if x - half < last + 4:  # would overlap the label before it: the tick stays, unlabelled
            continue
        anchor, left = ("end", x - 2 * half) if x + half > right_edge else ("middle", x - half)
        labels.append(sd.text(x, py1 + sd.TICK_FONT + 5, label, anchor=anchor))
        last = left + 2 * half
    return _grid(grid) + "".join(labels)


def _grid(parts: list[str]) -> str:
    return f'<path d="{"".join(parts)}" fill="none" stroke="{sd.GRID}" stroke-width="1"/>' if parts else ""


def _error_bars(line: Line, xs: sa.Scale, ys: sa.Scale) -> str:
    if line.lows is None or line.highs is None:
        return ""
    parts = []
    for x, low, high in zip(line.xs, line.lows, line.highs):
        if not xs.shows(x) or not (math.isfinite(low) and math.isfinite(high)):
            continue
        # Below zero on a log axis: the bar runs to the axis' foot.
        a, b = ys.at(low if ys.shows(low) else ys.lo), ys.at(high if ys.shows(high) else ys.lo)
        px, top, foot = sd.num(xs.at(x)), sd.num(min(a, b)), sd.num(max(a, b))
        cap = sd.num(xs.at(x) - 3)
        parts.append(f"M{px},{top}V{foot}M{cap},{top}h6M{cap},{foot}h6")
    if not parts:
        return ""
    return f'<path d="{"".join(parts)}" fill="none" stroke="{sd.colour(line.style)}" stroke-width="0.8"/>'


def _markers(chart_id: str, line: Line, points: list[tuple[float, float] | None]) -> str:
    # A tip per point, or none at all: tips that do not match the points would name the wrong ones.
    tips = line.tips if line.tips is not None and len(line.tips) == len(points) else None
    out = []
    for n, point in enumerate(points):
        if point is None:
            continue
        drawn = sd.marker(chart_id, line.style, point[0], point[1])
        out.append(f"<g><title>{sd.esc(tips[n])}</title>{drawn}</g>" if tips is not None else drawn)
    return "".join(out)


def _summary(panels: list[Panel]) -> str:
    """The <desc>: what is drawn, in words (series and how many points each)."""
    counts: dict[str, int] = {}
    for panel in panels:
        for line in panel.lines:
            finite = sum(1 for x, y in zip(line.xs, line.ys) if math.isfinite(x) and math.isfinite(y))
            counts[line.label] = counts.get(line.label, 0) + finite
    shown = [f"{label} ({n} {'point' if n == 1 else 'points'})" for label, n in list(counts.items())[:24]]
    more = f"; and {len(counts) - 24} more series" if len(counts) > 24 else ""
    head = f"{len(panels)} panels. " if len(panels) > 1 else ""
    return f"{head}Series: {'; '.join(shown)}{more}." if shown else f"{head}No data drawn."
