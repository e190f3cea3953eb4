"""What generating the load cost the generator: CPU per request, memory, sockets."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from toolbench.record.schema import GeneratorCost, RunResult
from toolbench.report import charts, fmt, groups
from toolbench.report.context import Context
from toolbench.report.view import Figure, Row, Section, Table, Value, columns, num, text


def cpu_us_per_request(r: RunResult) -> tuple[float | None, bool]:
    """As the monitor measured it, else from CPU seconds and requests; the flag says derived."""
    cost = r.cost
    if cost is None:
        return None, False
    if cost.cpu_us_per_request is not None:
        return cost.cpu_us_per_request, False
    if cost.cpu_user_s is None or cost.cpu_system_s is None or not r.measurement.counts.requests_total:
        return None, False
    return (cost.cpu_user_s + cost.cpu_system_s) * 1e6 / r.measurement.counts.requests_total, True


@dataclass(frozen=True)
class Metric:
    label: str
    title: str
    get: Callable[[GeneratorCost], float | int | None]
    show: Callable[[float | None], str]
    always: bool = False  # shown even when no cell has it, so its absence is visible


# Fields the monitor added to the schema are read with getattr: older records lack them.
METRICS = (
    Metric("CPU mean %", "the tool's processes, 100 % = one core", lambda c: c.cpu_mean_pct, fmt.number),
    Metric("CPU peak %", "the busiest sample", lambda c: c.cpu_peak_pct, fmt.number),
    Metric("peak RSS", "resident memory of the tool's processes", lambda c: c.rss_peak_bytes, fmt.size, True),
    Metric("threads", "peak thread count", lambda c: c.threads_peak, fmt.number),
    Metric("open files", "peak open file descriptors", lambda c: c.open_files_peak, fmt.number),
    Metric("sockets", "peak sockets of the tool", lambda c: c.sockets_peak, fmt.number, True),
    Metric("connections", "peak established connections to the target",
           lambda c: getattr(c, "connections_peak", None), fmt.number),
    Metric("TIME_WAIT", "peak sockets in TIME_WAIT on the host", lambda c: c.time_wait_peak, fmt.number),
)


def cost_median(p: groups.Point, get: Callable[[GeneratorCost], float | int | None]) -> float | None:
    return p.median(lambda r: get(r.cost) if r.cost is not None else None)


def point_cpu(p: groups.Point) -> tuple[float | None, bool]:
    pairs = [cpu_us_per_request(r) for r in p.ok]
    return groups.median(v for v, _ in pairs), any(d for v, d in pairs if v is not None)


def cost_section(ctx: Context) -> Section:
    measured = [p for p in ctx.points if any(r.cost is not None for r in p.ok)]
    if not measured:
        if any(r.cost is not None for _, r in ctx.results):
            return Section("cost", "Generator cost", absent=(
                "No cell that finished ok has monitor data, so no tool's cost is compared here; what the cells that "
                "did not finish ok cost the generator is in the results table (CPU µs/req)."))
        return Section("cost", "Generator cost", absent=(
            "Generator cost was not measured in this run (no monitor data): the CPU time, memory and sockets "
            "each tool needed are unknown, not zero."))
    shown = [m for m in METRICS if m.always or any(cost_median(p, m.get) is not None for p in measured)]
    server = any(r.server_cost is not None for p in measured for r in p.ok)
    rows = [Row(tuple(_row(ctx, p, shown, server))) for p in measured]
    labels = (["run"] if ctx.several else []) + ["tool", "keep-alive", "concurrency",
              ("CPU µs / request", "CPU time (user + system) of the tool's processes per request")] + (
        [("server CPU µs / request", "CPU time of the target's processes per request, beside the tool's")]
        if server else []) + [
              ("CPU % per 1k req/s", "share of one core needed for each 1,000 requests/s")] + \
        [(m.label, m.title) for m in shown]
    table = Table(columns(*labels, numeric_from=3 if ctx.several else 2), tuple(rows))
    unmeasured = sorted({p.key.label for p in ctx.points if p.ok} - {p.key.label for p in measured})
    points = tuple(f"{label}: cost not measured." for label in unmeasured)
    notes = tuple(dict.fromkeys(f"{p.key.label}, concurrency {fmt.number(p.concurrency)}: {n}." for p in measured
                                for r in p.ok if r.cost for n in getattr(r.cost, "notes", [])))
    intro = ("What the load generator itself used while it ran, from toolbench's monitor of the tool's processes "
             "and the host" + (", with what the server spent per request beside it" if server else "")
             + ". Median over repetitions.")
    return Section("cost", "Generator cost", intro=intro, tables=(table,), figures=_figures(ctx, measured),
                   points=points, details=notes, details_title="The monitor's notes, cell by cell")


def _row(ctx: Context, p: groups.Point, shown: list[Metric], server: bool) -> list[Value]:
    cpu, derived = point_cpu(p)
    spent = p.median(lambda r: r.server_cost.cpu_us_per_request if r.server_cost else None)
    values = ([text(p.key.run)] if ctx.several else []) + [
        text(p.key.name), text(p.key.keepalive_text), num(fmt.number(p.concurrency), p.concurrency),
        num(fmt.number(cpu), cpu, derived=derived)] + ([num(fmt.number(spent), spent)] if server else []) + [
        num(fmt.number(cpu / 10.0) if cpu is not None else fmt.ABSENT, cpu / 10.0 if cpu is not None else None,
            derived=cpu is not None)]
    for m in shown:
        v = cost_median(p, m.get)
        values.append(num(m.show(v), v))
    return values


def _figures(ctx: Context, measured: list[groups.Point]) -> tuple[Figure, ...]:
    lines = []
    for key, pts in groups.by_series(measured).items():
        xy = [(float(p.concurrency), cpu) for p in pts if p.concurrency is not None
              for cpu in [point_cpu(p)[0]] if cpu is not None]
        if xy:
            lines.append(charts.Line(key.label, [x for x, _ in xy], [y for _, y in xy], ctx.style(key)))
    if not lines:
        return ()
    xs = [x for line in lines for x in line.xs]
    ys = [y for line in lines for y in line.ys]
    axes = charts.Axes("concurrency (connections)", "CPU µs per request", log_x=charts.wants_log(xs, 8),
                       log_y=charts.wants_log(ys), y_from_zero=True, x_exact=True)
    svg = charts.line_chart("cost", lines, axes, alt="CPU microseconds per request against concurrency, per tool.")
    caption = "CPU time the generator spent per request: lower is cheaper. Keep-alive on: solid; off: dashed."
    return (Figure(svg, caption, "generator cost", title="Generator CPU per request (µs) against concurrency"),)
