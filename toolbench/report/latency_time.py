"""Latency percentiles over time: p50, p90 and p99 of each second, computed from the
per-request timings a tool left in its raw files (ab -g). Tools that give no per-request
timings with their second (their stored series holds counts, mean and max per second, from
which no percentile follows) are named, not drawn."""
from __future__ import annotations

from dataclasses import dataclass

from toolbench import registry
from toolbench.adapter import Adapter, RawOutput
from toolbench.errors import ToolbenchError
from toolbench.report import charts, fmt, groups, latency_data
from toolbench.report.context import Context, RunView
from toolbench.report.view import Figure, Section
from toolbench.schema import RunResult

MAX_PANELS = 8
NAMES = tuple(f"p{q:g}" for q in latency_data.OVER_TIME)


@dataclass(frozen=True)
class Timeline:
    point: groups.Point
    result: RunResult  # the repetition drawn
    seconds: list[latency_data.SecondPercentiles]


def _adapter(tool: str) -> Adapter | None:
    try:
        return registry.get(tool)
    except ToolbenchError:
        return None


def gives_timings(adapter: Adapter | None) -> bool:
    """Whether the tool's adapter reads per-request timings at all (see Adapter.timings)."""
    return adapter is not None and type(adapter).timings is not Adapter.timings


def timeline(run: RunView, r: RunResult) -> list[latency_data.SecondPercentiles] | None:
    """The cell's percentiles per second, from its raw files; None without per-request timings.
    Raises ToolbenchError when the files are there but do not read."""
    adapter = _adapter(r.identity.tool)
    if adapter is None or not gives_timings(adapter):
        return None
    files = {a.role: path for a in r.outcome.artifacts if (path := run.raw_file(a.path)) is not None}
    batches = adapter.timings(RawOutput(files=files, source=r.identity.cell_id))
    if batches is None:
        return None
    try:
        found = latency_data.tally(batches).percentiles()
    except ValueError as exc:
        raise ToolbenchError(f"{r.identity.cell_id}: its per-request timings do not read: {exc}") from None
    return found or None


def _chosen(ctx: Context) -> list[groups.Point]:
    """One cell per tool and keep-alive setting: the one at its peak, else its highest concurrency."""
    peak_at = {s.key: s.concurrency for s in ctx.series}
    out = []
    for key, pts in groups.by_series(ctx.points).items():
        ok = [p for p in pts if p.ok]
        if ok:
            out.append(next((p for p in ok if p.concurrency == peak_at.get(key)), ok[-1]))
    return out


def timelines(ctx: Context) -> tuple[list[Timeline], list[str]]:
    runs = {run.label: run for run in ctx.runs}
    found, points, without = [], [], set()
    for p in _chosen(ctx):
        run = runs.get(p.key.run)
        if not gives_timings(_adapter(p.key.tool)) or run is None:
            without.add(p.key.tool)
            continue
        line = _first_timeline(run, p, points)
        if line is not None:
            found.append(line)
    points += [f"{tool} gives no per-request timings with their second, so no percentile per second is computed "
               "for it (a per-second series, where it has one, holds counts, mean and max)." for tool in sorted(without)]
    return found, points


def _first_timeline(run: RunView, p: groups.Point, points: list[str]) -> Timeline | None:
    for r in p.ok:
        try:
            seconds = timeline(run, r)
        except (ToolbenchError, OSError) as exc:
            points.append(f"{p.key.label}: {exc}")
            return None
        if seconds:
            return Timeline(p, r, seconds)
    points.append(f"{p.key.label}, concurrency {fmt.number(p.concurrency)}: no file of per-request timings "
                  "was kept for it, so no percentile per second is drawn.")
    return None


def over_time_section(ctx: Context) -> Section:
    found, points = timelines(ctx)
    if not found:
        return Section("latency-time", "Latency over time", points=tuple(points),
                       absent="No cell has per-request timings with their second, so no percentile per second "
                              "is drawn.")
    panels = [charts.Panel(f"{t.point.key.label}, concurrency {fmt.number(t.point.concurrency)}", _lines(t))
              for t in found[:MAX_PANELS]]
    axes = charts.Axes("second of the run", "ms", y_from_zero=True, x_integer=True)
    svg = charts.panels_chart("latency-time", panels, axes, columns=2 if len(panels) > 1 else 1,
                              alt="Latency percentiles per second, one panel per tool and keep-alive setting.")
    caption = ("p50, p90 and p99 of the requests that started in each second, for the first repetition of each "
               "tool's cell at its peak. A tool's first and last seconds are partial and hold fewer requests. "
               "The times are whole milliseconds: a point at 0 means under 1 ms. Hover over a point for its value"
               + (f"; {len(panels)} of {len(found)} cells shown." if len(found) > len(panels) else "."))
    return Section("latency-time", "Latency over time", figures=(Figure(svg, caption, "latency over time"),),
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
