"""The latency percentiles each tool reported, where it reported them."""
from __future__ import annotations

import math
from typing import Callable

from toolbench.record.schema import Latency
from toolbench.report import charts, fmt, groups
from toolbench.report.context import Context
from toolbench.report.view import Figure, Row, Section, Table, Value, columns, num, text

SHOWN = (("p50", "p50_ms", 50.0), ("p75", "p75_ms", 75.0), ("p90", "p90_ms", 90.0), ("p95", "p95_ms", 95.0),
         ("p99", "p99_ms", 99.0), ("p99.9", "p999_ms", 99.9))
MAX_PANELS = 8


def _pct(point: groups.Point, field: str) -> float | None:
    return point.median(lambda r: getattr(r.measurement.latency.percentiles, field))


def _has_percentiles(point: groups.Point) -> bool:
    return any(_pct(point, field) is not None for _, field, _ in SHOWN)


def percentiles_section(ctx: Context) -> Section:
    shown = [p for p in ctx.points if _has_percentiles(p)]
    silent = sorted({p.key.name for p in ctx.points if p.ok} - {p.key.name for p in shown})
    points = tuple(f"{name} reports no latency percentiles." for name in silent)
    if not shown:
        printed = any(getattr(r.measurement.latency.percentiles, field) is not None
                      for _, r in ctx.results for _, field, _ in SHOWN)
        return Section("latency", "Latency percentiles", points=points, absent=(
            "No cell that finished ok reported latency percentiles, so none are compared here; the results table "
            "shows what the tools printed for the cells that did not finish ok." if printed else
            "No tool reported latency percentiles in this run."))
    rows = [Row(tuple(_row(ctx, p)), note=_uncorrected_note(p)) for p in shown]
    labels = (["run"] if ctx.several else []) + ["tool", "keep-alive", "concurrency"] + \
             [(f"{name} ms", f"{q:g}th percentile, as the tool reported it") for name, _, q in SHOWN] + \
             [("max ms", "the slowest request"), ("resolution ms", "the tool's rounding step"),
              ("coordinated omission", fmt.OMISSION_TITLE)]
    table = Table(columns(*labels, numeric_from=3 if ctx.several else 2, text=("coordinated omission",)), tuple(rows))
    intro = ("Response time percentiles as each tool reported them, median over repetitions. "
             "† marks a value toolbench derived from the tool's per-request data. " + _omission_said(shown))
    figure = _figure(ctx, shown)
    return Section("latency", "Latency percentiles", intro=intro, tables=(table,),
                   figures=(figure,) if figure else (), points=points)


def _row(ctx: Context, p: groups.Point) -> list[Value]:
    res = p.resolution_ms
    values = ([text(p.key.run)] if ctx.several else []) + [
        text(p.key.name), text(p.key.keepalive_text), num(fmt.number(p.concurrency), p.concurrency)]
    for _, field, _ in SHOWN:
        v = _pct(p, field)
        values.append(num(fmt.number(v, res), v, derived=p.derived(f"latency.percentiles.{field}"),
                          flag=fmt.resolution_flag(v, res)))
    top = p.median(lambda r: r.measurement.latency.max_ms)
    values.append(num(fmt.number(top, res), top, flag=fmt.resolution_flag(top, res)))
    values.append(num(fmt.number(res), res))
    values.append(text(fmt.omission(r.measurement.coordinated_omission for r in p.ok)))
    return values


def _omission_said(shown: list[groups.Point]) -> str:
    """Which tools' percentiles count the wait of a request held back behind a slow one."""
    def tools(word: str) -> list[str]:
        return sorted({p.key.name for p in shown if fmt.omission(r.measurement.coordinated_omission
                                                                    for r in p.ok) == word})

    corrected, not_corrected, unsaid = tools("corrected"), tools("not corrected"), tools(fmt.ABSENT)
    said = []
    if corrected:
        said.append(f"{', '.join(corrected)} time{'s' if len(corrected) == 1 else ''} each request from when it "
                    "was meant to be sent (coordinated omission corrected): a request held back behind a slow "
                    "one counts its wait.")
    if not_corrected:
        said.append(f"{', '.join(not_corrected)} time{'s' if len(not_corrected) == 1 else ''} each request from "
                    "when it was actually sent (not corrected): while a response is slow, the requests not yet "
                    "sent count none of that wait, so their tail percentiles read lower than a user's would.")
    if unsaid:
        said.append(f"For {', '.join(unsaid)} the result does not record which (the adapter does not say).")
    return " ".join(said)


def _uncorrected_note(p: groups.Point) -> str:
    """An open-model row times requests from their intended send (coordinated omission
    corrected); the tool's figures from the actual send go beside it, as it reported both."""
    def unc(get: Callable[[Latency], float | None]) -> float | None:
        return p.median(lambda r: get(r.measurement.latency_uncorrected) if r.measurement.latency_uncorrected else None)

    p50, p99, top = unc(lambda u: u.percentiles.p50_ms), unc(lambda u: u.percentiles.p99_ms), unc(lambda u: u.max_ms)
    if p50 is None and p99 is None and top is None:
        return ""
    res = p.resolution_ms
    return ("Open model: the percentiles run from the intended send time. From the actual send "
            f"(uncorrected): p50 {fmt.number(p50, res)} ms, p99 {fmt.number(p99, res)} ms, "
            f"max {fmt.number(top, res)} ms.")


def _nines(q: float) -> float:
    return -math.log10(1.0 - q / 100.0)


def panel_concurrencies(concurrencies: list[int]) -> list[int]:
    """The concurrencies that get a panel: all, or MAX_PANELS of them, the ends kept and the rest spread evenly."""
    chosen = sorted(concurrencies)
    if len(chosen) > MAX_PANELS:
        step = (len(chosen) - 1) / (MAX_PANELS - 1)
        chosen = sorted({chosen[round(i * step)] for i in range(MAX_PANELS)})
    return chosen


def _figure(ctx: Context, shown: list[groups.Point]) -> Figure | None:
    by_c: dict[int, list[groups.Point]] = {}
    for p in shown:
        by_c.setdefault(p.concurrency or 0, []).append(p)
    panels, ys = [], []
    for c in panel_concurrencies(list(by_c)):
        lines = []
        for p in by_c[c]:
            pairs = [(_nines(q), v) for _, field, q in SHOWN
                     if (v := _pct(p, field)) is not None and not fmt.below_resolution(v, p.resolution_ms)]
            if pairs:
                lines.append(charts.Line(p.key.label, [x for x, _ in pairs], [y for _, y in pairs], ctx.style(p.key)))
                ys += [y for _, y in pairs]
        if lines:
            panels.append(charts.Panel(f"concurrency {c}", lines))
    if not panels:
        return None
    ticks = tuple(charts.Tick(_nines(q), name.removeprefix("p")) for name, _, q in SHOWN
                  if name in ("p50", "p90", "p99", "p99.9"))
    axes = charts.Axes("percentile", "ms", log_y=charts.wants_log(ys), x_ticks=ticks)
    svg = charts.panels_chart("percentiles", panels, axes, columns=2 if len(panels) > 1 else 1,
                              alt="Latency percentile curves per tool, one panel per concurrency.")
    caption = ("Latency by percentile, one panel per concurrency"
               + (f" ({len(panels)} of {len(by_c)} shown)" if len(panels) < len(by_c) else "")
               + ". The x axis spreads the tail: 90, 99 and 99.9 are evenly spaced. Keep-alive on: solid; "
               "off: dashed. Values below the tool's resolution are left out (the table shows them as <N).")
    return Figure(svg, caption, "latency percentiles", title="Latency percentiles (ms), per concurrency")
