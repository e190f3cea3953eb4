"""The latency distribution from the stored HDR histograms: HdrHistogram's percentile
plot (latency against 1/(1-p), as wrk2 and HdrHistogram's plotter draw it) and the
requests per latency bucket, one line per tool and keep-alive setting, one panel per
concurrency, the repetitions of a cell merged exactly. Every point names its value on hover."""
from __future__ import annotations

from dataclasses import dataclass

from hdrh.histogram import HdrHistogram

from toolbench.errors import SchemaError
from toolbench.record import histogram
from toolbench.report import charts, fmt, groups, latency_data
from toolbench.report.context import Context
from toolbench.report.latency import panel_concurrencies
from toolbench.report.view import Figure, Section

NINES = 6  # x ticks up to 99.9999 %


@dataclass(frozen=True)
class Merged:
    point: groups.Point
    hist: HdrHistogram
    repetitions: int
    resolution_ms: float | None  # the step of the times the histograms were built from

    @property
    def count(self) -> int:
        return int(self.hist.get_total_count())


def merged(ctx: Context) -> tuple[list[Merged], list[str]]:
    """Each cell's ok repetitions with a histogram, merged; and what could not be read."""
    found, problems = [], []
    for p in ctx.points:
        texts = [r.measurement.histogram for r in p.ok if r.measurement.histogram]
        if not texts:
            continue
        try:
            hist = histogram.merge(texts)
        except SchemaError as exc:
            problems.append(f"{p.key.label}, concurrency {fmt.number(p.concurrency)}: its stored histogram does "
                            f"not read ({exc}); it is left out.")
            continue
        if hist.get_total_count():
            steps = [r.measurement.histogram_resolution_ms for r in p.ok
                     if r.measurement.histogram and r.measurement.histogram_resolution_ms]
            found.append(Merged(p, hist, len(texts), max(steps) if steps else None))
    return found, problems


def distribution_section(ctx: Context) -> Section:
    found, problems = merged(ctx)
    silent = sorted({p.key.name for p in ctx.points if p.ok} - {m.point.key.name for m in found})
    points = tuple(problems) + tuple(f"{name} gives no per-request latency, so it has no histogram to draw."
                                     for name in silent)
    if not found:
        return Section("latency-distribution", "Latency distribution", points=points,
                       absent="No cell that finished ok has a latency histogram (only tools that give per-request "
                              "times, or their own histogram, have one).")
    figures = [f for f in (_percentile_figure(ctx, found), _bucket_figure(ctx, found)) if f is not None]
    intro = ("The whole latency distribution of each cell, from its HDR histogram (the repetitions of a cell "
             "merged exactly). Hover over a point for its value."
             + (" Open-model cells count from each request's intended send time (coordinated omission corrected), "
                "as their percentiles do." if any(r.identity.rate_rps is not None for m in found
                                                   for r in m.point.ok) else ""))
    return Section("latency-distribution", "Latency distribution", intro=intro, figures=tuple(figures), points=points)


def _by_concurrency(found: list[Merged]) -> tuple[list[int], dict[int, list[Merged]]]:
    by_c: dict[int, list[Merged]] = {}
    for m in found:
        by_c.setdefault(m.point.concurrency or 0, []).append(m)
    return panel_concurrencies(list(by_c)), by_c


def _label(m: Merged) -> str:
    reps = f", {m.repetitions} repetitions" if m.repetitions > 1 else ""
    return f"{m.point.key.label}, concurrency {fmt.number(m.point.concurrency)}{reps}"


def percentile_line(m: Merged, style: charts.Style) -> charts.Line | None:
    """The HDR plot's line of one cell: each level of the percentile distribution at 1/(1-p).
    Its last level holds the slowest request (HdrHistogram steps there before 100 %, which
    1/(1-p) cannot place). Values below the tool's resolution are left out: they mean "under
    one step", not a value; so are the inner levels of a flat run."""
    levels, top = latency_data.distribution(m.hist)
    kept = _ends_of_flats([level for level in levels if not fmt.below_resolution(level.value_ms, m.resolution_ms)])
    if not kept:
        return None
    tips = [f"{_label(m)}: {level.percentile:.5g} % of {m.count:,} requests took at most "
            f"{fmt.number(level.value_ms)} ms" for level in kept]
    if kept[-1].value_ms == top:
        tips[-1] += " (the slowest)"
    return charts.Line(m.point.key.label, [level.inverse_tail for level in kept], [level.value_ms for level in kept],
                       style, tips=tuple(tips))


def _ends_of_flats(levels: list[histogram.Level]) -> list[histogram.Level]:
    """The first and last level of each run of equal values: the line between them is flat, so
    the levels inside it draw nothing (and whole-millisecond tools have long runs of them)."""
    return [level for i, level in enumerate(levels)
            if i in (0, len(levels) - 1) or not levels[i - 1].value_ms == level.value_ms == levels[i + 1].value_ms]


def _nines_ticks(top_x: float) -> tuple[charts.Tick, ...]:
    labels = ("0%", "90%", "99%", "99.9%", "99.99%", "99.999%", "99.9999%")
    return tuple(charts.Tick(10.0 ** i, labels[i]) for i in range(NINES + 1) if 10.0 ** i <= max(top_x, 10.0))


def _percentile_figure(ctx: Context, found: list[Merged]) -> Figure | None:
    chosen, by_c = _by_concurrency(found)
    panels, ys, xs = [], [], []
    for c in chosen:
        lines = [line for m in by_c[c] if (line := percentile_line(m, ctx.style(m.point.key))) is not None]
        if lines:
            panels.append(charts.Panel(f"concurrency {c}", lines))
            ys += [y for line in lines for y in line.ys]
            xs += [x for line in lines for x in line.xs]
    if not panels:
        return None
    axes = charts.Axes("percentile (1/(1−p) on a log scale)", "ms", log_x=True, log_y=charts.wants_log(ys, 10),
                       x_ticks=_nines_ticks(max(xs)))
    svg = charts.panels_chart("hdr-percentiles", panels, axes, columns=2 if len(panels) > 1 else 1,
                              alt="Latency by percentile as HdrHistogram plots it, one panel per concurrency.")
    caption = ("Latency by percentile, as HdrHistogram and wrk2 plot it: the x axis is 1/(1−p), so 90 %, 99 %, "
               "99.9 % … are evenly spaced and the tail gets the room; a line ends at its slowest request. "
               "Values below the tool's resolution are left out. Keep-alive on: solid; off: dashed"
               + (f"; {len(panels)} of {len(by_c)} concurrencies shown." if len(panels) < len(by_c) else "."))
    return Figure(svg, caption, "HDR percentile distribution", title="Latency (ms) at every percentile")


def bucket_line(m: Merged, style: charts.Style) -> charts.Line:
    """Requests per latency bucket; an empty bucket between two full ones breaks the line
    (a log axis cannot draw its 0), and its tip is not needed: the gap says it."""
    found = latency_data.buckets(m.hist, m.resolution_ms)
    tips = tuple(f"{_label(m)}: {_range(b, m.resolution_ms)}: {b.count:,} requests "
                 f"({100.0 * b.count / m.count:.3g} %)" for b in found)
    return charts.Line(m.point.key.label, [b.middle_ms for b in found],
                       [float(b.count) if b.count else float("nan") for b in found], style, tips=tips)


def _range(b: latency_data.Bucket, resolution_ms: float | None) -> str:
    if b.low_ms == 0:
        return f"under {fmt.number(b.high_ms)} ms"
    if resolution_ms and b.high_ms - b.low_ms <= resolution_ms * 1.000001:
        return f"{fmt.number(b.low_ms)} ms"  # one step of the tool's clock
    return f"{fmt.number(b.low_ms)} to under {fmt.number(b.high_ms)} ms"


def _bucket_figure(ctx: Context, found: list[Merged]) -> Figure | None:
    chosen, by_c = _by_concurrency(found)
    panels = [charts.Panel(f"concurrency {c}", [bucket_line(m, ctx.style(m.point.key)) for m in by_c[c]])
              for c in chosen]
    axes = charts.Axes("latency (ms, log scale)", "requests in the bucket (log scale)", log_x=True, log_y=True)
    svg = charts.panels_chart("latency-histogram", panels, axes, columns=2 if len(panels) > 1 else 1,
                              alt="Requests per latency bucket, one panel per concurrency.")
    caption = (f"Requests per latency bucket, {latency_data.BUCKETS_PER_DECADE} buckets to a tenfold (whole "
               "milliseconds for tools that time in whole milliseconds; their bucket under 1 ms, the times they "
               "round to 0, is drawn at 0.5 ms). A gap in a line is an empty bucket. Keep-alive on: solid; "
               "off: dashed" + (f"; {len(panels)} of {len(by_c)} concurrencies shown." if len(panels) < len(by_c)
                                else "."))
    return Figure(svg, caption, "latency histogram", title="How many requests took how long (ms)")
