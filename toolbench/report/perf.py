"""Sections on what the tools generated: peaks, throughput against concurrency,
and the per-second time series."""
from __future__ import annotations

from toolbench.record import stats
from toolbench.report import charts, disturbed, fmt, groups
from toolbench.report.context import Context
from toolbench.report.view import Figure, Row, Section, Table, Value, columns, num, text


def peaks_section(ctx: Context) -> Section:
    ran = [peak for peak in ctx.series if peak.cells_run]
    # The interval needs two repetitions; with one, its column would only say so in every row.
    repeated = any(peak.spread is not None and peak.spread.n > 1 for peak in ran)
    rows = [Row(tuple(_peak_values(ctx, peak, repeated)), bad=peak.cells_ok < peak.cells_run) for peak in ran]
    labels = (["run"] if ctx.several else []) + [
        "tool", "keep-alive", ("peak ok req/s", "the highest median rate of successful requests over the "
                               "concurrencies tried")]
    if repeated:
        labels.append(("95 % CI", "t-interval of the mean rate over the repetitions; outliers flagged, not dropped"))
    labels += [("noise", "half the range of the peak's repetitions, or of its whole seconds with one repetition, "
                "as a share of the median"),
               ("at concurrency", "where the peak was reached"), ("p99 ms at peak", "the tool's own 99th percentile"),
               ("errors from concurrency", "the lowest concurrency at which a request or a cell failed"),
               ("cells ok", "cells that finished ok, of all planned")]
    table = Table(columns(*labels, numeric_from=3 if ctx.several else 2), tuple(rows))
    reps = max((len(p.results) for p in ctx.points), default=0)
    intro = ("Each tool's highest rate of successful requests, per keep-alive setting" +
             (f", as the median of up to {reps} repetitions." if reps > 1 else ".") +
             " Peaks at different concurrencies are not a ranking: the like-for-like table ranks the tools.")
    skipped = tuple(f"{p.key.label}: not run ({p.why_not_run})." for p in ctx.series if not p.cells_run)
    return Section("peaks", "Peak throughput", intro=intro, tables=(table,) if rows else (), points=skipped,
                   absent="" if rows else "No cell ran: there is nothing to rank.")


def _peak_values(ctx: Context, peak: groups.Series, repeated: bool) -> list[Value]:
    best = peak.best
    p99 = best.median(lambda r: r.measurement.latency.percentiles.p99_ms) if best else None
    res = best.resolution_ms if best else None
    values = ([text(peak.key.run)] if ctx.several else []) + [
        text(peak.key.name), text(peak.key.keepalive_text),
        num(fmt.number(peak.rps), peak.rps, derived=best.rps_derived if best else False)]
    if repeated:
        values.append(_interval(peak))
    rate = best.rate if best else None
    values.append(num(noise(rate) if rate else fmt.ABSENT, rate.noise_pct if rate else None))
    return values + [
        num(fmt.number(peak.concurrency), peak.concurrency),
        num(fmt.number(p99, res), p99, flag=fmt.resolution_flag(p99, res)),
        num(fmt.number(peak.errors_from) if peak.errors_from is not None else "none", peak.errors_from),
        num(f"{peak.cells_ok} of {peak.cells}", peak.cells_ok)]


def noise(rate: stats.Estimate) -> str:
    """The noise of a figure and what it was measured over: "±3.1 % (2 repetitions)"."""
    if rate.noise_pct is None:
        return "not measured"
    return f"±{rate.noise_pct:.1f} % ({rate.basis})"


def _interval(peak: groups.Series) -> Value:
    spread = peak.spread
    if spread is None or spread.ci95_low is None or spread.ci95_high is None:
        return num(fmt.ABSENT, None)
    outliers = f" (outlier: rep {', '.join(map(str, spread.outliers))})" if spread.outliers else ""
    return num(f"{fmt.number(max(0.0, spread.ci95_low))}–{fmt.number(spread.ci95_high)}{outliers}", spread.iqr,
               flag="outlier" if spread.outliers else "")


def throughput_section(ctx: Context) -> Section:
    lines = []
    for key, pts in groups.by_series(ctx.points).items():
        rated = [p for p in pts if p.rps is not None and p.concurrency is not None]
        if not rated:
            continue
        spreads = [p.spread(stats.throughput) for p in rated]
        has_spread = any(s is not None for s in spreads)
        lines.append(charts.Line(
            key.label, [float(p.concurrency or 0) for p in rated], [p.rps or 0.0 for p in rated], ctx.style(key),
            lows=[s[0] if s else p.rps or 0.0 for s, p in zip(spreads, rated)] if has_spread else None,
            highs=[s[1] if s else p.rps or 0.0 for s, p in zip(spreads, rated)] if has_spread else None))
    marks = disturbed.throughput_marks(ctx)
    lines += marks
    if not lines:
        return Section("throughput", "Throughput vs concurrency", absent="No cell finished ok: nothing to chart.")
    xs = [x for line in lines for x in line.xs]
    axes = charts.Axes("concurrency (connections)", "successful requests/s", log_x=charts.wants_log(xs, 8),
                       y_from_zero=True, x_exact=True)
    svg = charts.line_chart("throughput", lines, axes, alt="Requests per second against concurrency for "
                            f"{', '.join(line.label for line in lines)}.")
    caption = ("Successful requests per second (median of repetitions; bars: lowest to highest). "
               "Keep-alive on: solid line; off: dashed. Each tool has its own marker."
               + (f" Crosses: the {len(marks[0].xs)} cells disturbed by other work on the machine, each its own "
                  "rate, left out of the lines and medians." if marks else ""))
    return Section("throughput", "Throughput vs concurrency", figures=(Figure(svg, caption, "throughput", title="Successful requests/s against concurrency"),))


MAX_SERIES_LINES = 4


def _shown(pts: list[groups.Point], peak: int | None) -> list[groups.Point]:
    """At most a few concurrencies per panel: the lowest, the highest, the peak, and one between."""
    with_series = [p for p in pts if any(stats.whole_seconds(r) for r in p.ok)]
    if len(with_series) <= MAX_SERIES_LINES:
        return with_series
    keep = {0, len(with_series) - 1, len(with_series) // 2}
    keep |= {i for i, p in enumerate(with_series) if p.concurrency == peak}
    return [p for i, p in enumerate(with_series) if i in keep]


def series_section(ctx: Context) -> Section:
    panels, without, left_out = [], [], 0
    peak_at = {p.key: p.concurrency for p in ctx.series}
    for key, pts in groups.by_series(ctx.points).items():
        shown = _shown(pts, peak_at.get(key))
        left_out += sum(1 for p in pts if any(stats.whole_seconds(r) for r in p.ok)) - len(shown)
        lines = []
        for i, p in enumerate(shown):
            whole = next(w for r in p.ok if (w := stats.whole_seconds(r)))
            style = charts.Style(i, charts.LINESTYLES[i % len(charts.LINESTYLES)])
            lines.append(charts.Line(f"concurrency {fmt.number(p.concurrency)}", [float(s.second) for s in whole],
                                     [float(s.requests - (s.errors or 0)) for s in whole], style))
        if lines:
            panels.append(charts.Panel(key.label, lines))
        elif any(p.ok for p in pts):
            without.append(key.label)
    points = tuple(f"{label}: no whole second of per-second data (the tool gives none, or the run was "
                   "shorter than three seconds)." for label in without)
    if not panels:
        return Section("series", "Per-second time series", points=points,
                       absent="No cell has a whole second of per-second data (the tools here do not report it, or "
                              "the runs were too short).")
    svg = charts.panels_chart("series", panels, charts.Axes("second of the run", "successful requests in that second",
                                                            y_from_zero=True, x_integer=True),
                              alt="Requests per second over time, one panel per tool and keep-alive setting.",
                              columns=2 if len(panels) > 1 else 1)
    caption = ("Successful requests in each whole second, for the first repetition of each cell; one line per "
               "concurrency, told apart by marker and line style. The first and last seconds of a run are partial "
               "(a tool's clock starts and stops mid-second) and are left out."
               + (f" To stay readable, each panel shows at most {MAX_SERIES_LINES} concurrencies (the lowest, the "
                  f"highest, the peak and one between); {left_out} more are in the results." if left_out else ""))
    return Section("series", "Per-second time series", figures=(Figure(svg, caption, "time series", title="Requests/s in each second of the run"),), points=points)
