"""The verdict: plain sentences drawn from the data, and only the claims the data support.

Which tool generated the most, at what cost, and which measured truthfully; where
the data cannot answer (no monitor, no probe, no finished cell) it says so."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from toolbench.report import fmt, groups
from toolbench.report.context import Context, RunView
from toolbench.report.cost import point_cpu
from toolbench.report.truth import CellTruth, Verdict, truths
from toolbench.schema import Status


@dataclass(frozen=True)
class Topic:
    name: str  # what the sentences answer: throughput, cost, truthfulness, failures
    sentences: tuple[str, ...]


@dataclass(frozen=True)
class RunVerdict:
    run: str  # the run's label, "" for a single run
    headline: str
    topics: tuple[Topic, ...]


def verdicts(ctx: Context) -> list[RunVerdict]:
    checks = truths(ctx)
    return [_run_verdict(run, [p for p in ctx.peaks if p.key.run == run.label],
                         [c for c in checks if c.point.key.run == run.label]) for run in ctx.runs]


def _run_verdict(run: RunView, peaks: list[groups.Peak], checks: list[CellTruth]) -> RunVerdict:
    best = groups.leader(peaks)
    topics = (Topic("Throughput", tuple(_ranking(peaks))), Topic("Cost", tuple(_cost(best, peaks))),
              Topic("Truthfulness", tuple(_truth(checks))), Topic("Failures", tuple(_failures(run, peaks))))
    return RunVerdict(run.label, _headline(best, peaks, run), tuple(t for t in topics if t.sentences))


def _rate(peak: groups.Peak) -> str:
    return f"{fmt.number(peak.rps)} requests/s"


def _where(peak: groups.Peak) -> str:
    return f"at concurrency {fmt.number(peak.concurrency)} with keep-alive {peak.key.keepalive_text}"


def _headline(best: groups.Peak | None, peaks: list[groups.Peak], run: RunView) -> str:
    if best is None:
        done = sum(p.cells for p in peaks)
        return (f"No cell finished ok ({done} cells recorded), so this run cannot say which tool generated the most."
                if done else "This run has no results yet.")
    others = [p for p in peaks if p.key.name != best.key.name and p.rps]
    if not others:
        alone = "the only tool that finished" if len({p.key.name for p in peaks}) > 1 else "the only tool here"
        return f"{best.key.name}, {alone}, peaked at {_rate(best)} {_where(best)}."
    second = max(others, key=lambda p: p.rps or 0.0)
    ratio = (best.rps or 0.0) / (second.rps or 1.0)
    return (f"{best.key.name} generated the most load: {_rate(best)} {_where(best)}, {ratio:.1f}× the best of "
            f"{second.key.name} ({fmt.number(second.rps)}/s, keep-alive {second.key.keepalive_text}).")


def _ranking(peaks: list[groups.Peak]) -> list[str]:
    out = []
    for keepalive in (True, False):
        rated = sorted((p for p in peaks if p.key.keepalive is keepalive and p.rps), key=lambda p: -(p.rps or 0.0))
        if len(rated) > 1:
            listed = ", ".join(f"{p.key.name} {fmt.number(p.rps)}/s (concurrency {fmt.number(p.concurrency)})"
                               for p in rated)
            out.append(f"Keep-alive {fmt.yes_no(keepalive)}, best first: {listed}.")
    return out


def _cost(best: groups.Peak | None, peaks: list[groups.Peak]) -> list[str]:
    costs = {p.key: point_cpu(p.point)[0] for p in peaks if p.point is not None}
    if best is None:
        return []
    if not any(v is not None for v in costs.values()):
        return ["What that load cost the generator was not measured (no monitor data), so no tool can be "
                "called cheaper than another."]
    out = []
    mine = costs.get(best.key)
    if mine is None:
        out.append(f"The cost of {best.key.name}'s peak was not measured.")
    else:
        rss = best.point.median(lambda r: r.cost.rss_peak_bytes if r.cost else None) if best.point else None
        out.append(f"At its peak {best.key.name} spent {fmt.number(mine)} µs of CPU per request "
                   f"({fmt.number(mine / 10.0)} % of a core per 1,000 requests/s)"
                   + (f", with a peak RSS of {fmt.size(rss)}." if rss is not None else "."))
    known = {k: v for k, v in costs.items() if v is not None}
    if len({k.name for k in known}) > 1:
        cheapest = min(known, key=lambda k: known[k] or 0.0)
        out.append(f"Cheapest per request at its peak: {cheapest.name} with keep-alive {cheapest.keepalive_text} "
                   f"({fmt.number(known[cheapest])} µs).")
    return out


def _truth(checks: list[CellTruth]) -> list[str]:
    if not checks:
        return []
    out = []
    probed = [c for c in checks if c.probe_ms is not None]
    if not probed:
        out.append("No probe ran, so no tool's latency was checked against an independent measurement.")
    else:
        out += _probe_sentences(probed)
        bound = [c for c in probed if c.server_bound]
        if bound:
            names = ", ".join(sorted({c.point.key.name for c in bound}))
            out.append(f"In {len(bound)} of {len(probed)} probed cells ({names}) the probe slowed down far beyond "
                       "its unloaded time: there the server, not the tool, set the rate.")
    return out + _rate_sentences(checks)


def _tally(checks: list[CellTruth], probe: bool) -> dict[str, Counter[Verdict]]:
    out: dict[str, Counter[Verdict]] = {}
    for c in checks:
        out.setdefault(c.point.key.name, Counter())[(c.by_probe if probe else c.by_rate).verdict] += 1
    return out


def _listed(tally: dict[str, Counter[Verdict]], *verdicts: Verdict) -> str:
    """Tools with cells under the verdicts, each with its share: "siege (3 of 4 cells), ab (1 of 2 cells)"."""
    found = []
    for tool, counts in sorted(tally.items()):
        n, hit = sum(counts.values()), sum(counts[v] for v in verdicts)
        if hit:
            found.append(tool if hit == n else f"{tool} ({hit} of {n} cells)")
    return ", ".join(found)


def _probe_sentences(checks: list[CellTruth]) -> list[str]:
    """One sentence per verdict, naming the tools: readable with two tools or six."""
    tally = _tally(checks, probe=True)
    out = []
    agreed = [t for t, c in sorted(tally.items()) if c[Verdict.AGREES] == sum(c.values())]
    if agreed:
        out.append(f"Agreed with the independent probe in every cell checked: {', '.join(agreed)}.")
    partly = {t: c for t, c in tally.items() if t not in agreed}
    if any(c[Verdict.AGREES] for c in partly.values()):
        out.append(f"Agreed with the probe in some cells: {_listed(partly, Verdict.AGREES)}.")
    if lower := _listed(tally, Verdict.LOWER):
        out.append(f"Reported lower latency than the probe saw, so under-reports: {lower}.")
    if higher := _listed(tally, Verdict.HIGHER):
        out.append(f"Reported higher latency than the probe saw: {higher}.")
    if coarse := _listed(tally, Verdict.SUB_RESOLUTION):
        out.append(f"Too coarse for the probe to confirm (below the tool's resolution): {coarse}.")
    return out


def _rate_sentences(checks: list[CellTruth]) -> list[str]:
    tally = _tally(checks, probe=False)
    resolution = {c.point.key.name: c.point.resolution_ms for c in checks if c.point.resolution_ms}
    out = []
    fits = [t for t, c in sorted(tally.items()) if c[Verdict.AGREES] == sum(c.values())]
    if fits:
        out.append(f"Mean latency consistent with the tool's own rate (concurrency ÷ requests/s) in every cell: "
                   f"{', '.join(fits)}.")
    partly = {t: c for t, c in tally.items() if t not in fits}
    if any(c[Verdict.AGREES] for c in partly.values()):
        out.append(f"Consistent with its own rate in some cells: {_listed(partly, Verdict.AGREES)}.")
    if wrong := _listed(tally, Verdict.LOWER, Verdict.HIGHER):
        out.append(f"Mean latency that does not fit the tool's own rate, so one of its two numbers is wrong: {wrong}.")
    coarse = [(t, c) for t, c in sorted(tally.items()) if c[Verdict.SUB_RESOLUTION]]
    if coarse:
        listed = ", ".join(f"{t} (<{fmt.number(resolution.get(t))} ms, {c[Verdict.SUB_RESOLUTION]} of "
                           f"{sum(c.values())} cells)" for t, c in coarse)
        out.append(f"Mean latency below the tool's resolution, shown as <N rather than 0: {listed}.")
    if silent := [t for t, c in sorted(tally.items()) if c[Verdict.NO_LATENCY] == sum(c.values())]:
        out.append(f"No latency reported at all: {', '.join(silent)}.")
    return out


def _failures(run: RunView, peaks: list[groups.Peak]) -> list[str]:
    by_status = Counter(r.outcome.status for r in run.results)
    out = []
    for status, verb in ((Status.FAILED, "failed"), (Status.TIMED_OUT, "timed out"),
                         (Status.INTERRUPTED, "were interrupted")):
        cells = [r.identity.cell_id for r in run.results if r.outcome.status is status]
        if cells:
            shown = ", ".join(cells[:4]) + (f" and {len(cells) - 4} more" if len(cells) > 4 else "")
            out.append(f"{len(cells)} {'cell' if len(cells) == 1 else 'cells'} {verb}: {shown}.")
    skipped = by_status[Status.UNSUPPORTED] + by_status[Status.TOOL_MISSING]
    if skipped:
        reasons = sorted({r.outcome.error or r.outcome.status.value for r in run.results
                          if r.outcome.status in (Status.UNSUPPORTED, Status.TOOL_MISSING)})
        out.append(f"{skipped} {'cell was' if skipped == 1 else 'cells were'} not run: {'; '.join(reasons[:3])}.")
    for p in peaks:
        if p.errors_from is not None and p.cells_ok:
            out.append(f"{p.key.name} with keep-alive {p.key.keepalive_text} saw failures from concurrency "
                       f"{fmt.number(p.errors_from)} on.")
    if run.manifest.get("status") not in (None, "complete"):
        out.append(f"The run's status is “{run.manifest.get('status')}”: it may not hold every planned cell.")
    return out
