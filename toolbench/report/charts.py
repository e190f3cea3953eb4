"""Charts as inline SVG text (matplotlib, no network, no files beside the report).

Every series keeps one colour and one marker per tool across all charts, and a
line style per keep-alive setting, so a chart reads without colour."""
from __future__ import annotations

import html
import io
import math
import re
from dataclasses import dataclass, field
from typing import Any

# Okabe & Ito's palette: distinguishable with the common colour-vision deficiencies.
PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442")
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
LINESTYLES = ("-", "--", ":", "-.")


@dataclass(frozen=True)
class Style:
    index: int = 0  # picks colour and marker
    linestyle: str = "-"
    hollow: bool = False


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


def wants_log(values: list[float], ratio: float = 30.0) -> bool:
    """A log axis when values span a wide range, and only when none is zero or below."""
    return bool(values) and min(values) > 0 and max(values) / min(values) >= ratio


def line_chart(chart_id: str, lines: list[Line], axes: Axes, alt: str, title: str = "") -> str:
    return panels_chart(chart_id, [Panel(title, lines)], axes, alt, columns=1)


def panels_chart(chart_id: str, panels: list[Panel], axes: Axes, alt: str, columns: int = 2,
                 panel_size: tuple[float, float] = (7.5, 4.0)) -> str:
    """Small multiples sharing one legend below them; a single panel is an ordinary chart."""
    plt = _pyplot()
    columns = max(1, min(columns, len(panels)))
    rows = math.ceil(len(panels) / columns)
    single = len(panels) == 1
    width = panel_size[0] if single else min(11.0, 4.6 * columns)
    height = panel_size[1] if single else 2.9 * rows + 0.6
    fig, grid = plt.subplots(rows, columns, figsize=(width, height), dpi=100, squeeze=False)
    tips: list[list[str]] = []
    try:
        handles: dict[str, Any] = {}
        for ax, panel in zip(grid.flat, panels):
            _draw(ax, panel, axes, handles, tips)
        for ax in list(grid.flat)[len(panels):]:
            ax.set_visible(False)
        # The same order in every chart: by tool, then keep-alive on before off.
        handles = {label: h for label, (_, h) in sorted(handles.items(), key=lambda item: item[1][0])}
        if single:  # the legend beside the chart, where it takes no height
            if handles:
                grid[0][0].legend(list(handles.values()), list(handles), loc="upper left", bbox_to_anchor=(1.02, 1.0),
                                  fontsize=8, frameon=False)
            fig.tight_layout()
        else:  # one legend below all panels
            ncol = min(4, len(handles)) or 1
            legend_in = 0.2 * math.ceil(len(handles) / ncol) + 0.15 if handles else 0.0
            if handles:
                fig.legend(list(handles.values()), list(handles), loc="lower center", ncol=ncol, fontsize=8,
                           frameon=False)
            # Fixed margins, in inches: tight_layout would measure every panel's text, which
            # costs seconds on a large run's small multiples.
            fig.subplots_adjust(left=0.8 / width, right=1 - 0.15 / width, top=1 - 0.3 / height,
                                bottom=(legend_in + 0.55) / height, wspace=0.28, hspace=0.5)
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
    finally:
        plt.close(fig)
    return _inline(_with_tips(buf.getvalue(), tips), chart_id, alt)


def _draw(ax: Any, panel: Panel, axes: Axes, handles: dict[str, Any], tips: list[list[str]]) -> None:
    for line in panel.lines:
        colour = PALETTE[line.style.index % len(PALETTE)]
        kwargs = dict(linestyle=line.style.linestyle, marker=MARKERS[line.style.index % len(MARKERS)],
                      color=colour, linewidth=1.6, markersize=5,
                      markerfacecolor="white" if line.style.hollow else colour)
        if line.lows is not None and line.highs is not None:
            errs = [[y - lo for y, lo in zip(line.ys, line.lows)], [hi - y for y, hi in zip(line.ys, line.highs)]]
            drawn = ax.errorbar(line.xs, line.ys, yerr=errs, capsize=3, elinewidth=0.8, **kwargs)
            handle = drawn.lines[0]
        else:
            (handle,) = ax.plot(line.xs, line.ys, **kwargs)
        if line.tips is not None:
            handle.set_gid(f"{_TIPS}{len(tips)}")
            tips.append([tip for tip, y in zip(line.tips, line.ys) if math.isfinite(y)])
        order = (line.style.index, LINESTYLES.index(line.style.linestyle) if line.style.linestyle in LINESTYLES else 9,
                 line.style.hollow)
        handles.setdefault(line.label, (order, handle))
    from matplotlib import ticker

    if axes.log_x:
        ax.set_xscale("log")
        if not axes.x_ticks and not axes.x_exact:  # plain numbers, as on a log y axis
            ax.xaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
            ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    if axes.log_y:
        # Plain numbers (0.2, 1, 5), not powers of ten: these are milliseconds a reader compares.
        ax.set_yscale("log")
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
    elif axes.y_from_zero:
        ax.set_ylim(bottom=0)
    if not axes.log_y:
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:,.10g}"))
    if axes.x_integer:
        ax.xaxis.set_major_locator(ticker.MaxNLocator(integer=True))
    xs = sorted({x for line in panel.lines for x in line.xs})
    if axes.x_ticks:
        ax.set_xticks([t.at for t in axes.x_ticks], [t.label for t in axes.x_ticks])
        ax.minorticks_off()
    elif axes.x_exact and 0 < len(xs) <= 12:  # ticks at the values tried, e.g. the concurrencies
        ax.set_xticks(xs, [f"{x:g}" for x in xs])
        ax.minorticks_off()
    if len(xs) == 1 and not axes.x_ticks:  # one value: centre it, rather than zoom into a sliver
        ax.set_xlim(xs[0] / 2, xs[0] * 2) if axes.log_x and xs[0] > 0 else ax.set_xlim(xs[0] - 1, xs[0] + 1)
    ax.set_xlabel(axes.xlabel)
    ax.set_ylabel(axes.ylabel)
    if panel.title:
        ax.set_title(panel.title, fontsize=10)
    ax.grid(True, alpha=0.3)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib import pyplot as plt

    plt.rcParams.update({
        "svg.hashsalt": "toolbench",  # the same data give the same SVG
        "svg.fonttype": "none",  # text stays text: small, selectable, in the page's font
        "font.family": "sans-serif",
        "font.size": 9,
        "axes.spines.top": False,
        "axes.spines.right": False,
        # Labels come from stored runs (a tool's variant, a run's name): `$...$` in one is shown as
        # it is, never parsed as mathtext (which can fail on it, or draw something else).
        "text.parse_math": False,
    })
    return plt


_ID = re.compile(r'\bid="([^"]+)"')
_TIPS = "toolbench-tips-"
_USE = re.compile(r"<use\b[^>]*/>")


def _with_tips(svg: str, tips: list[list[str]]) -> str:
    """Wraps each marker of a line with tips in a group whose <title> is its tip. The
    markers of a line are drawn in the order of its points, NaN left out; a line whose
    count of markers differs (a point clipped away) keeps no tips rather than wrong ones."""
    for n, texts in enumerate(tips):
        start = svg.find(f'<g id="{_TIPS}{n}">')
        if start < 0:
            continue
        end = _group_end(svg, start)
        group = svg[start:end]
        markers = _USE.findall(group)
        if len(markers) != len(texts):
            continue
        parts = iter(texts)
        group = _USE.sub(lambda m: f"<g><title>{html.escape(next(parts))}</title>{m.group(0)}</g>", group)
        svg = svg[:start] + group + svg[end:]
    return svg


def _group_end(svg: str, start: int) -> int:
    """The offset just past the </g> that closes the group opened at `start`."""
    depth, at = 0, start
    for match in re.finditer(r"<g\b[^>]*?(/?)>|</g>", svg[start:]):
        if match.group(0) == "</g>":
            depth -= 1
        elif not match.group(1):
            depth += 1
        at = start + match.end()
        if depth == 0:
            return at
    return at


def _inline(svg: str, chart_id: str, alt: str) -> str:
    """Drops the XML prolog and makes every id unique to this chart: several SVGs share one page."""
    svg = svg[svg.index("<svg"):]
    svg = re.sub(r"\s*<metadata>.*?</metadata>", "", svg, count=1, flags=re.DOTALL)  # who made it: not needed
    ids = set(_ID.findall(svg))
    svg = _ID.sub(lambda m: f'id="{chart_id}-{m.group(1)}"', svg)
    svg = re.sub(r"#([A-Za-z_][\w\-.]*)",
                 lambda m: f"#{chart_id}-{m.group(1)}" if m.group(1) in ids else m.group(0), svg)
    # Width and height come from CSS, so the chart scales with the page and prints.
    svg = re.sub(r'<svg([^>]*?) width="[^"]+" height="[^"]+"', r'<svg\1', svg, count=1)
    head_end = svg.index(">") + 1
    title = f'<title id="{chart_id}-title">{html.escape(alt)}</title>'
    return f'{svg[:head_end - 1]} role="img" aria-labelledby="{chart_id}-title">{title}{svg[head_end:]}'

