"""Latency percentiles over time: p50, p90 and p99 of each second, computed from the
per-request timings a tool left in its raw files (ab -g, JMeter's JTL). Tools that give no
per-request timings with their second (their stored series holds counts, mean and max per
second, from which no percentile follows) are named, not drawn."""
from __future__ import annotations

from dataclasses import dataclass

from toolbench.contract import registry
from toolbench.contract.adapter import Adapter, RawOutput
from toolbench.errors import ToolbenchError
from toolbench.record import timings
from toolbench.record.schema import RunResult
from toolbench.report import charts, fmt, groups
from toolbench.report.context import Context, RunView
from toolbench.report.view import Figure, Section

MAX_PANELS = 8
NAMES = tuple(f"p{q:g}" for q in timings.OVER_TIME)


@dataclass(frozen=True)
class Timeline:
    point: groups.Point
    result: RunResult  # the repetition drawn
    seconds: list[timings.SecondPercentiles]


def _adapter(tool: str) -> Adapter | None:
    try:
        return registry.get(tool)
    except ToolbenchError:
        return None


def gives_timings(adapter: Adapter | None) -> bool:
    """Whether the tool's adapter reads per-request timings at all (see Adapter.timings)."""
    return adapter is not None and type(adapter).timings is not Adapter.timings


def timeline(run: RunView, r: RunResult) -> list[timings.SecondPercentiles] | None:
    """The cell's percentiles per second, from its raw files; None without per-request timings.
    Raises ToolbenchError (a ParseError) when the files are there but do not read."""
    adapter = _adapter(r.identity.tool)
    if adapter is None or not gives_timings(adapter):
        return None
    files = {a.role: path for a in r.outcome.artifacts if (path := run.raw_file(a.path)) is not None}
    tally = adapter.timings(RawOutput(files=files, source=r.identity.cell_id))
    if tally is None or not tally.requests:
        return None
    return tally.percentiles()


def _ordered(ctx: Context) -> list[groups.Point]:
    """The cells that finished ok: each tool's peak first (where a reader looks), then the others."""
    peaks = {(s.key, s.concurrency) for s in ctx.series}
    ok = [p for p in ctx.points if p.ok]
    return [p for p in ok if (p.key, p.concurrency) in peaks] + [p for p in ok if (p.key, p.concurrency) not in peaks]


def timelines(ctx: Context) -> tuple[list[Timeline], list[str], int]:
    """Up to MAX_PANELS cells' timelines, what could not be drawn, and how many cells were left out."""
    runs = {run.label: run for run in ctx.runs}
    found, points, without, left_out, not_copied = [], [], set(), 0, False
    unkept: dict[groups.SeriesKey, list[int | None]] = {}
    for p in _ordered(ctx):
        run = runs.get(p.key.run)
        if not gives_timings(_adapter(p.key.tool)) or run is None:
            without.add(p.key.tool)
        elif not run.raw_kept:
            not_copied = True
        elif len(found) == MAX_PANELS:
            left_out += 1  # not read: a panel too many
        else:
            try:
                line = _first_timeline(run, p)
            except (ToolbenchError, OSError) as exc:  # named by its place in the run, not on this disk
                points.append(f"{p.key.label}: {str(exc).replace(f'{run.path}/', '')}")
                continue
            if line is not None:
                found.append(line)
            else:
                unkept.setdefault(p.key, []).append(p.concurrency)
    points += [f"{key.label}, concurrency {', '.join(fmt.number(c) for c in sorted(cs, key=lambda c: c or 0))}: no "
               "file of per-request timings was kept, so no percentile per second is drawn." for key, cs in unkept.items()]
    if not_copied:
        points.append("Percentiles per second come from the tools' raw files, which are not part of this copy.")
    points += [f"{tool} gives no per-request timings with their second, so no percentile per second is computed "
               "for it (a per-second series, where it has one, holds counts, mean and max)." for tool in sorted(without)]
    return found, points, left_out


def _first_timeline(run: RunView, p: groups.Point) -> Timeline | None:
    """The first ok repetition's timeline; None when none kept a file of per-request timings."""
    for r in p.ok:
        seconds = timeline(run, r)
        if seconds:
            return Timeline(p, r, seconds)
    return None


def over_time_section(ctx: Context) -> Section:
    found, points, left_out = timelines(ctx)
    if not found:
        return Section("latency-time", "Latency over time", points=tuple(points),
                       absent="No cell has per-request timings with their second, so no percentile per second "
                              "is drawn.")
    panels = [charts.Panel(f"{t.point.key.label}, concurrency {fmt.number(t.point.concurrency)}", _lines(t))
              for t in found]
    axes = charts.Axes("second of the run", "ms", y_from_zero=True, x_integer=True)
    svg = charts.panels_chart("latency-time", panels, axes, columns=2 if len(panels) > 1 else 1,
                              alt="Latency percentiles per second, one panel per cell.")
    caption = ("p50, p90 and p99 of the requests that started in each second, one panel per cell (its first "
               "repetition with per-request timings), each tool's peak first. A tool's first and last seconds are "
               "partial and hold fewer requests. The times are whole milliseconds: a point at 0 means under 1 ms. "
               "Hover over a point for its value"
               + (f"; {left_out} more cells are left out to stay readable." if left_out else "."))
    return Section("latency-time", "Latency over time", figures=(Figure(svg, caption, "latency over time", title="Latency (ms) in each second of the run"),),
                   points=tuple(points))


def _lines(t: Timeline) -> list[charts.Line]:
    lines = []
    for i, name in enumerate(NAMES):
        tips = tuple(f"{t.point.key.label}, second {s.second}: {name} {_ms(s.values_ms[i])} "
                     f"of {s.requests:,} requests" for s in t.seconds)
        lines.append(charts.Line(name, [float(s.second) for s in t.seconds], [s.values_ms[i] for s in t.seconds],
                                 charts.Style(i, charts.LINESTYLES[i % len(charts.LINESTYLES)]), tips=tips))
    return lines


def _ms(value: float) -> str:
    return "under 1 ms" if value == 0 else f"{fmt.number(value)} ms"
