"""The full results table: one row per cell, with links to its raw artifacts."""
from __future__ import annotations

from collections import defaultdict

from toolbench.contract import ramp
from toolbench.record import stats
from toolbench.record.schema import Latency, RunResult, Status
from toolbench.report import anchors, fmt, groups
from toolbench.report.context import Context, RunView
from toolbench.report.cost import cpu_us_per_request
from toolbench.report.view import Column, Link, Row, Section, Table, Value, num, text

# A cell not run is no failure; a disturbed one ran to its end, its figures kept (marked, not failed).
NOT_BAD = (Status.OK, Status.UNSUPPORTED, Status.TOOL_MISSING, Status.DISTURBED)


def shared_notes(ctx: Context) -> dict[str, list[str]]:
    """Notes every result of a tool carries (how the tool rounds, where data come from):
    said once per tool rather than under every row."""
    by_tool: dict[str, list[RunResult]] = defaultdict(list)
    for _, r in ctx.results:
        if r.outcome.status is Status.OK:  # cells that did not finish carry no parser notes
            by_tool[r.identity.label].append(r)
    out = {}
    for tool, results in by_tool.items():
        common = [n for n in results[0].all_notes if all(n in r.all_notes for r in results[1:])]
        if common and len(results) > 1:
            out[tool] = common
    return out


def results_section(ctx: Context) -> Section:
    if not ctx.results:
        return Section("results", "All results", absent="This run has no results yet.")
    with_cost = any(r.cost is not None for _, r in ctx.results)
    with_probe = any(r.probe is not None for _, r in ctx.results)
    with_server = any(r.server_cost is not None for _, r in ctx.results)
    shared = shared_notes(ctx)
    rows = tuple(_row(ctx, run, r, (with_cost, with_server, with_probe), shared.get(r.identity.label, []))
                 for run, r in ctx.results)
    protocols = [Column("protocol")] if len(ctx.protocols) > 1 else []
    cols = ([Column("run")] if ctx.several else []) + [
        Column("cell"), Column("tool"), Column("concurrency", True), Column("keep-alive"), *protocols,
        Column("rep", True, "repetition"), Column("status"), Column("requests", True), Column("failed", True),
        Column("ok req/s", True, "successful requests per second: what rankings and peaks use"),
        Column("attempted req/s", True, "every request, failed ones included"),
        Column("error %", True, "failed requests of all requests"), Column("mean ms", True),
        Column("p50 ms", True), Column("p99 ms", True), Column("max ms", True),
        Column("coordinated omission", title=fmt.OMISSION_TITLE)]
    if with_cost:
        cols.append(Column("CPU µs/req", True, "generator CPU time per request"))
    if with_server:
        cols.append(Column("server CPU µs/req", True, "the target's CPU time per request"))
    if with_probe:
        cols.append(Column("probe ms", True, "the probe's median during the load"))
    cols.append(Column("raw", title="the tool's own output, by relative path"))
    left_out = [name for name, present in (("generator cost", with_cost), ("probe", with_probe)) if not present]
    raw = ("The raw links open the tool's own output, kept beside the results, by relative path."
           if all(run.raw_kept for run in ctx.runs) else "The tools' raw output is not part of this copy.")
    missing = f" No {' or '.join(left_out)} data were recorded, so those columns are left out." if left_out else ""
    intro = f"Every cell as stored. {raw}{missing}"
    points = _warmup_points(ctx) + tuple(f"{tool}: {note}." for tool, notes in sorted(shared.items())
                                         for note in notes)
    return Section("results", "All results", intro=intro, points=points,
                   tables=(Table(tuple(cols), rows, css="results"),))


def _row(ctx: Context, run: RunView, r: RunResult, shown: tuple[bool, bool, bool], shared: list[str]) -> Row:
    with_cost, with_server, with_probe = shown
    res = r.measurement.latency.resolution_ms
    rps, tried = stats.throughput(r), stats.attempted(r)
    c = r.measurement.counts
    errors = (c.requests_failed / c.requests_total * 100.0
              if c.requests_failed is not None and c.requests_total else None)
    lat = r.measurement.latency
    links = tuple(Link(a.role, href) for a in r.outcome.artifacts
                  if run.raw_kept and (href := run.file_link(a.path)) is not None)
    version = f" {r.identity.tool_version}" if r.identity.tool_version else ""
    values = ([text(run.label)] if ctx.several else []) + [
        text(r.identity.cell_id), text(r.identity.label + version),
        num(fmt.number(r.identity.concurrency), r.identity.concurrency), text(fmt.yes_no(r.identity.keepalive)),
        *([text(groups.protocol_name(r.identity.protocol))] if len(ctx.protocols) > 1 else []),
        num(str(r.identity.repetition), r.identity.repetition), _status(r),
        num(fmt.number(r.measurement.counts.requests_total), r.measurement.counts.requests_total),
        num(fmt.number(r.measurement.counts.requests_failed), r.measurement.counts.requests_failed),
        num(fmt.number(rps), rps, derived=rps is not None and stats.throughput_derived(r), flag=_ramp_flag(r)),
        num(fmt.number(tried), tried, derived=r.measurement.rates.rps is None and tried is not None),
        num(fmt.percent(errors), errors),
        _mean(lat), _ms(lat.percentiles.p50_ms, res), _ms(lat.percentiles.p99_ms, res),
        _ms(lat.max_ms, res), text(fmt.omission([r.measurement.coordinated_omission]))]
    if with_cost:
        cpu, derived = cpu_us_per_request(r)
        values.append(num(fmt.number(cpu), cpu, derived=derived))
    if with_server:
        spent = r.server_cost.cpu_us_per_request if r.server_cost else None
        values.append(num(fmt.number(spent), spent))
    if with_probe:
        probe = groups.median(r.probe.samples_ms) if r.probe else None
        values.append(num(fmt.number(probe), probe))
    values.append(Value("" if links else fmt.ABSENT, links=links))
    return Row(tuple(values), bad=r.outcome.status not in NOT_BAD, error=r.outcome.error or "",
               note="; ".join(n for n in r.all_notes if n not in shared),
               disturbed=r.outcome.status is Status.DISTURBED, anchor=anchors.cell(run.label, r.identity.cell_id))


def _status(r: RunResult) -> Value:
    disturbed = r.outcome.status is Status.DISTURBED
    return Value(text=r.outcome.status.value.replace("_", " "), flag=fmt.DISTURBED if disturbed else "")


def _ramp_flag(r: RunResult) -> str:
    short = r.ramp_s is not None and ramp.short_of_ramp(r.measurement.timing.duration_s, r.ramp_s)
    return fmt.SHORT_OF_RAMP if short else ""


def _warmup_points(ctx: Context) -> tuple[str, ...]:
    """What ran before the cells, unmeasured, and which cells were too short for their tool's ramp."""
    ran = [r for _, r in ctx.results if r.outcome.status not in (Status.UNSUPPORTED, Status.TOOL_MISSING)]
    warmed = sorted({r.warmup.duration_s for r in ran if r.warmup is not None})
    said = []
    if warmed:
        which = "Each cell" if all(r.warmup is not None for r in ran) else "The cells whose result records one"
        said.append(f"{which} ran after a warm-up of {' or '.join(f'{s:g} s' for s in warmed)}: its own tool, "
                    "unmeasured, against the same target with the same concurrency, keep-alive and request "
                    "(output in the cell's warmup/ folder). It warms the target, not the tool's next process.")
    if any(_ramp_flag(r) for r in ran):
        said.append(f"⏱ marks a rate {fmt.SHORT_OF_RAMP} (JMeter's JIT, Locust's spawn; the cell's note says "
                    f"by how much): run such cells {ramp.RAMP_MULTIPLE:g} ramps or longer.")
    return tuple(said)


def _mean(lat: Latency) -> Value:
    """The mean of whole requests; a tool that times only the first byte (http_load) shows that,
    labelled as what it is, never as a whole request's time."""
    if lat.mean_ms is None and lat.ttfb_mean_ms is not None:
        return num(fmt.number(lat.ttfb_mean_ms, lat.resolution_ms), None, flag="first byte only, not the whole request")
    return _ms(lat.mean_ms, lat.resolution_ms)


def _ms(value: float | None, resolution: float | None) -> Value:
    return num(fmt.number(value, resolution), value, flag=fmt.resolution_flag(value, resolution))
