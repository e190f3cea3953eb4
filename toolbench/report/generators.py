"""The generators of cells run on several machines: each one's share of the load, what it
measured and what it cost, its clock's offset, and whether it was the limit. A cell some of
whose generators failed is said to be partial, with each failure's reason."""
from __future__ import annotations

from toolbench.record.schema import GeneratorPart, RunResult, Status
from toolbench.report import fmt
from toolbench.report.context import Context
from toolbench.report.view import Row, Section, Table, Value, columns, num, text

_LABELS = ("cell", "generator", "host", "status", "connections", ("rate", "requests/s asked of it"),
           "requests", ("req/s ok", "its successful requests per second"), ("p50 ms", "its own median"),
           ("p99 ms", "its own 99th percentile"), ("CPU mean %", "the tool's processes there, 100 % = one core"),
           ("peak RSS", "resident memory of the tool's processes there"), ("sockets", "peak sockets of the tool"),
           ("bound", "the generator was the limit: its tool used what it can of that host's CPU"),
           ("clock offset ms", "that host's clock minus toolbench's, ± half the round trip it was read in"))


def generators_section(ctx: Context) -> Section | None:
    cells = [(run, r) for run, r in ctx.results if r.generators]
    if not cells:
        return None
    rows = tuple(Row(tuple(_row(r, part))) for _, r in cells for part in r.generators)
    partial = tuple(f"{r.identity.cell_id} is partial: {r.outcome.error}" for _, r in cells
                    if r.outcome.status is Status.PARTIAL)
    bound = sorted({f"{part.name} ({part.host})" for _, r in cells for part in r.generators if part.generator_bound})
    points = partial + ((f"Generator-bound: {', '.join(bound)}: the load those cells reached says more of the "
                         "generator than of the server.",) if bound else ())
    intro = ("Cells run on several generators at once, each with its share of the load, started at one instant "
             "(each host's clock offset taken off). A cell's figures elsewhere in this report are the merge of "
             "these parts (counts and bytes summed, latency from the merged histograms); a cell with a failed "
             "part is partial and nothing of it is summed. Where the tool's own distributed mode ran the cell "
             "(Locust's workers, JMeter's servers), the merge is the tool's and each part's figures are told "
             "apart from its output: a Locust worker's own requests, a JMeter server's rows of the "
             "controller's result file; a part whose figures cannot be told apart shows none, with the "
             "reason in the cell's notes.")
    table = Table(columns(*_LABELS, numeric_from=4, text=("bound",)), rows)
    return Section("generators", "Generators", intro=intro, tables=(table,), points=points)


def _row(r: RunResult, part: GeneratorPart) -> list[Value]:
    m, cost, clock = part.measurement, part.cost, part.clock
    p50, p99 = m.latency.percentiles.p50_ms, m.latency.percentiles.p99_ms
    return [text(r.identity.cell_id), text(part.name), text(part.host),
            text(part.status.value if part.error is None else f"{part.status.value}: {part.error}"),
            num(fmt.number(part.concurrency), part.concurrency), num(fmt.number(part.rate_rps), part.rate_rps),
            num(fmt.number(m.counts.requests_total), m.counts.requests_total),
            num(fmt.number(m.rates.rps_ok), m.rates.rps_ok), num(fmt.number(p50), p50), num(fmt.number(p99), p99),
            num(fmt.number(cost.cpu_mean_pct if cost else None), cost.cpu_mean_pct if cost else None),
            num(fmt.size(cost.rss_peak_bytes if cost else None), cost.rss_peak_bytes if cost else None),
            num(fmt.number(cost.sockets_peak if cost else None), cost.sockets_peak if cost else None),
            text({True: "generator-bound", False: "had room", None: None}[part.generator_bound]),
            num(f"{clock.offset_ms:+.1f} ± {clock.rtt_ms / 2:.1f}" if clock else "this machine",
                clock.offset_ms if clock else None)]
