"""Per request (issue 32): for each request name of a workload, the tools side by side, from each
cell's figures per name (Measurement.by_request): count, ok, failed by class (failed checks
included), p50/p90/p99 and the rate. Like is compared with like as everywhere in the report: one
table per request name and group of cells with the same load (concurrency, or the stages' peak
users; keep-alive; protocol; rate and parameters; run). A tool that gives no figure per name, or
not all of them, has a dash there, and the cell's note says why. Shown only when some cell of the
report has figures per name."""
from __future__ import annotations

from toolbench.record.schema import RequestFigures, RunResult
from toolbench.report import anchors, fmt, groups
from toolbench.report.context import Context, RunView
from toolbench.report.failed_requests import CLASSES
from toolbench.report.view import Column, Link, Row, Section, Table, Value, num, text
from toolbench.report.workload_source import of_run

INTRO = ("Each request of the workload by name, the tools side by side, as each tool counted and timed it "
         "(its figures per request name, which add up to the cell's totals). One table per request and load: "
         "only cells with the same concurrency (with stages: the same peak users), keep-alive and protocol "
         "are compared. A dash: the tool gives no such figure per name (the row's note says why), never 0. "
         "The rate is the tool's own requests/s for the name, or (†) the name's requests over the cell's "
         "duration where the tool gives none.")
NO_FIGURES = "no figures per request name"
GroupKey = tuple[str, str, "bool | None", str, "int | None"]


def per_request_section(ctx: Context) -> Section | None:
    """None when no cell of the report has figures per request name."""
    if not any(r.measurement.by_request for _, r in ctx.results):
        return None
    ran = [(run, r) for run, r in ctx.results if r.outcome.status not in groups.NOT_RUN]
    classes = [(name, title) for name, title in CLASSES
               if name == "check" or any(_failed(f, name) for _, r in ran for f in r.measurement.by_request)]
    cols = ([Column("run")] if ctx.several else []) + [
        Column("tool"), Column("cell"), Column("requests", True), Column("ok", True), Column("failed", True),
        *[Column(name.replace("_", " "), True, f"failed: {title}") for name, title in classes],
        Column("p50 ms", True), Column("p90 ms", True), Column("p99 ms", True),
        Column("req/s", True, "the tool's requests/s for this name; †: derived by toolbench")]
    tables = []
    for key, cells in _groups(ctx, ran).items():
        for name in _names(ctx, cells):
            rows = tuple(_row(ctx, run, r, name, classes) for run, r in cells)
            tables.append(Table(tuple(cols), rows, caption=f"{name}: {_where(key)}"))
    return Section("per-request", "Per request", intro=INTRO, tables=tuple(tables))


def _groups(ctx: Context, ran: list[tuple[RunView, RunResult]]) -> dict[GroupKey, list[tuple[RunView, RunResult]]]:
    """The cells that ran, by load: those of one group are alike but for the tool. Only groups
    where some cell has figures per name (a group of single-request cells has nothing to show)."""
    runs = {id(r): run for run, r in ran}
    out: dict[GroupKey, list[tuple[RunView, RunResult]]] = {}
    for p in ctx.points:
        key: GroupKey = (p.key.run, p.key.variant, p.key.keepalive, p.key.protocol_shown or p.key.protocol,
                         p.concurrency)
        out.setdefault(key, []).extend((runs[id(r)], r) for r in p.results if id(r) in runs)
    return {k: v for k, v in out.items() if any(r.measurement.by_request for _, r in v)}


def _where(key: GroupKey) -> str:
    run, variant, keepalive, protocol, concurrency = key
    parts = [f"concurrency {concurrency}" if concurrency is not None else "",
             f"keep-alive {fmt.yes_no(keepalive) if keepalive is not None else fmt.ABSENT}", variant,
             protocol if protocol != "http1" else "", f"run {run}" if run else ""]
    return ", ".join(p for p in parts if p)


def _names(ctx: Context, cells: list[tuple[RunView, RunResult]]) -> list[str]:
    """The workload's order where the stored scenario reads; then any other name, as first seen."""
    names: list[str] = []
    for run in dict.fromkeys(run.name for run, _ in cells):
        view = next(v for v, _ in cells if v.name == run)
        workload = of_run(view)
        names += [r.name for r in workload.requests] if workload else []
    names += [f.name for _, r in cells for f in r.measurement.by_request]
    return list(dict.fromkeys(names))


def _failed(f: RequestFigures, name: str) -> int | None:
    return getattr(f.counts.failures, name)


def _row(ctx: Context, run: RunView, r: RunResult, name: str, classes: list[tuple[str, str]]) -> Row:
    link = Link(r.identity.cell_id, "#" + anchors.cell(run.label, r.identity.cell_id))
    lead = ([text(run.label)] if ctx.several else []) + [text(r.identity.label), Value("", links=(link,))]
    f = next((f for f in r.measurement.by_request if f.name == name), None)
    if f is None:
        blank = [num(fmt.ABSENT, None) for _ in range(6 + len(classes))]
        return Row(tuple(lead + blank), note=_why_absent(r, bool(r.measurement.by_request)))
    c, p = f.counts, f.latency.percentiles
    rate, derived = (f.rates.rps, False) if f.rates.rps is not None else (f.rates.rps_derived, True)
    res = f.latency.resolution_ms
    values = lead + [num(fmt.number(c.requests_total), c.requests_total), num(fmt.number(c.requests_ok), c.requests_ok),
                     num(fmt.number(c.requests_failed), c.requests_failed),
                     *[num(fmt.number(_failed(f, cls)), _failed(f, cls)) for cls, _ in classes],
                     *[num(fmt.number(v, res), v) for v in (p.p50_ms, p.p90_ms, p.p99_ms)],
                     num(fmt.number(rate), rate, derived=derived and rate is not None)]
    shown = (c.requests_total, p.p50_ms, p.p90_ms, p.p99_ms, rate)
    return Row(tuple(values), note=_why_absent(r, True) if None in shown else "")


def _why_absent(r: RunResult, some: bool) -> str:
    """The cell's own note on its figures per name (the plan's, or the parser's), else a plain one."""
    said = [n for n in r.all_notes if "figures per request name" in n]
    if said:
        return "; ".join(said)
    if some:
        return f"{r.identity.tool} gives no such figure for this name"
    return f"{NO_FIGURES}: {r.identity.tool} gave none for this cell"
