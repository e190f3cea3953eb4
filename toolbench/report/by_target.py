"""Targets compared per tool: where a run has several targets, each tool's cells at one
keep-alive setting, concurrency and variant are compared across the targets, by successful
throughput (in tiers beyond the noise, as tools are), with the latency percentiles, the
error rate and what serving cost the server (CPU µs per request, from `server_cost`)."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from toolbench.record import stats
from toolbench.record.schema import RunResult
from toolbench.report import fmt, groups, likewise
from toolbench.report.context import Context
from toolbench.report.perf import noise
from toolbench.report.verdict_text import estimate
from toolbench.report.view import Column, Row, Section, Table, num, text


@dataclass(frozen=True)
class Entry:
    target: str
    point: groups.Point
    rate: stats.Estimate  # successful requests/s
    server_cpu: stats.Estimate | None  # the server's CPU µs per request; None where not measured


@dataclass(frozen=True)
class TargetComparison:
    run: str
    tool: str  # the tool, or its variant's name
    variant: str  # other matrix parameters, without the target
    keepalive: bool | None
    concurrency: int | None
    by_rate: tuple[tuple[Entry, ...], ...]  # most first

    @property
    def entries(self) -> list[Entry]:
        return [e for tier in self.by_rate for e in tier]

    @property
    def where(self) -> str:
        variant = f" {self.variant}" if self.variant else ""
        return (f"{self.tool}{variant} at concurrency {fmt.number(self.concurrency)}, keep-alive "
                f"{fmt.yes_no(self.keepalive)}")

    @property
    def leader(self) -> str | None:
        """The target alone in the first tier; None for a tie."""
        return self.by_rate[0][0].target if len(self.by_rate[0]) == 1 and len(self.entries) > 1 else None


def server_cpu(r: RunResult) -> float | None:
    return r.server_cost.cpu_us_per_request if r.server_cost is not None else None


def several_targets(results: list[RunResult]) -> bool:
    return len({r.identity.target_label for r in results}) > 1


def comparisons(ctx: Context) -> list[TargetComparison]:
    """One per tool, keep-alive, protocol, concurrency and variant of a run with several targets, in plan order."""
    multi = {run.label for run in ctx.runs if several_targets(run.results)}
    found: dict[tuple[str, str, str, bool | None, int | None], list[Entry]] = defaultdict(list)
    for p in ctx.points:
        rate = p.rate
        if p.key.run not in multi or rate is None:
            continue
        first = p.ok[0]
        cpu = stats.estimate([v for r in p.ok if (v := server_cpu(r)) is not None])
        # Targets are compared within one protocol, named in the variant where the report has several.
        variant = " ".join(v for v in (groups.variant_of(first), p.key.protocol_shown and f"({p.key.protocol_shown})")
                           if v)
        key = (p.key.run, p.key.tool, variant, p.key.keepalive, p.key.protocol, p.concurrency)
        found[key].append(Entry(first.identity.target_label, p, rate, cpu))
    return [TargetComparison(run, tool, variant, keepalive, concurrency,
                             likewise.tiers(entries, lambda e: e.rate, most_first=True, name=lambda e: e.target))
            for (run, tool, variant, keepalive, _, concurrency), entries in found.items()]


def _rank(comp: TargetComparison, entry: Entry) -> str:
    if len(comp.entries) < 2:
        return "alone"
    order = next(i for i, tier in enumerate(comp.by_rate) if entry in tier)
    place = 1 + sum(len(t) for t in comp.by_rate[:order])
    return f"{place}=" if len(comp.by_rate[order]) > 1 else str(place)


def _row(ctx: Context, comp: TargetComparison, e: Entry) -> Row:
    p = e.point
    errors = p.error_rate * 100.0 if p.error_rate is not None else None
    p50 = p.median(lambda r: r.measurement.latency.percentiles.p50_ms)
    p99 = p.median(lambda r: r.measurement.latency.percentiles.p99_ms)
    gen = likewise.cpu_estimate(p)
    values = ([text(comp.run)] if ctx.several else []) + [
        text(comp.tool + (f" {comp.variant}" if comp.variant else "")), text(fmt.yes_no(comp.keepalive)),
        num(fmt.number(comp.concurrency), comp.concurrency), text(e.target), text(_rank(comp, e)),
        num(fmt.number(e.rate.value), e.rate.value, derived=p.rps_derived), num(noise(e.rate), e.rate.noise_pct),
        num(fmt.percent(errors), errors), num(fmt.number(p50, p.resolution_ms), p50),
        num(fmt.number(p99, p.resolution_ms), p99),
        num(fmt.number(e.server_cpu.value) if e.server_cpu else fmt.ABSENT,
            e.server_cpu.value if e.server_cpu else None),
        num(fmt.number(gen.value) if gen else fmt.ABSENT, gen.value if gen else None)]
    return Row(tuple(values))


def targets_section(ctx: Context) -> Section | None:
    """None when no run has several targets: the section would say nothing."""
    comps = ctx.target_comparisons
    if not comps:
        return None
    cols = ([Column("run")] if ctx.several else []) + [
        Column("tool"), Column("keep-alive"), Column("concurrency", True), Column("target"),
        Column("rank", title="among the targets, for this tool, keep-alive and concurrency"),
        Column("ok req/s", True, "successful requests per second, median over the repetitions"),
        Column("noise", True, "half the range of the repetitions, or of the whole seconds with one repetition"),
        Column("error %", True, "failed requests of all requests"),
        Column("p50 ms", True), Column("p99 ms", True),
        Column("server CPU µs / request", True, "the target's CPU (every process toolbench started for it) per "
                                                "request, median over the repetitions"),
        Column("generator CPU µs / request", True, "the tool's CPU per request, median over the repetitions")]
    rows = tuple(_row(ctx, comp, e) for comp in comps for e in comp.entries)
    intro = ("Each tool's cells compared across the targets at the same keep-alive setting and concurrency: "
             "the targets are ranked by successful throughput, in tiers beyond the noise (“1=” shares a rank); "
             "the server's CPU per request says what serving cost each target.")
    return Section("targets", "Targets compared", intro=intro, tables=(Table(tuple(cols), rows, css="results"),))


def sentences(comps: list[TargetComparison], most: int) -> list[str]:
    """The verdict's sentences on targets: which served the most for each tool, at what server cost."""
    out = []
    for comp in comps[:most]:
        if len(comp.entries) < 2:
            continue
        figures = ", ".join(f"{e.target} {estimate(e.rate, '/s')}" for e in comp.entries)
        lead = comp.leader
        said = (f"{comp.where}: {lead} served the most successful requests, beyond the noise ({figures})" if lead
                else f"{comp.where}: the targets served the same within the noise ({figures})")
        costs = likewise.tiers(comp.entries, lambda e: e.server_cpu, most_first=False, name=lambda e: e.target)
        if costs:
            said += "; the server's CPU per request: " + ", ".join(
                f"{e.target} {estimate(e.server_cpu, ' µs')}" for tier in costs for e in tier)
            if len(costs[0]) == 1 and len(costs) > 1:
                said += f", {costs[0][0].target} the cheapest beyond the noise"
        out.append(said + ".")
    if len(comps) > most:
        out.append(f"{len(comps) - most} more comparisons of targets are in the “Targets compared” section.")
    return out


def headline(comps: list[TargetComparison]) -> str:
    """One sentence over every comparison of targets: which target led for how many tools' cells."""
    compared = [c for c in comps if len(c.entries) > 1]
    if not compared:
        return ""
    leads: dict[str, int] = defaultdict(int)
    for comp in compared:
        leads[comp.leader or ""] += 1
    n = len(compared)
    said = [f"{target} served the most in {k} of {n}" for target, k in sorted(leads.items(), key=lambda kv: -kv[1])
            if target]
    ties = leads.get("", 0)
    if ties:
        said.append(f"the targets tied within the noise in {ties} of {n}")
    return "Across targets, for each tool: " + ", ".join(said) + " comparisons of targets."
