"""The verdict: plain sentences drawn from the data, and only the claims the data support.

Which tool generated the most successful requests, like for like and beyond the noise;
what limited each cell; what the load cost the generator; which tool measured truthfully;
what failed. Where the data cannot answer (no monitor, no probe, no finished cell) it says
so. Every figure it uses carries its noise (toolbench.record.stats.Estimate)."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from toolbench.record import stats
from toolbench.record.manifest import RunStatus
from toolbench.record.schema import Status
from toolbench.report import answer
from toolbench.report import by_target as targets
from toolbench.report import anchors, disturbed, fmt
from toolbench.report import verdict_summary as summary
from toolbench.report.bounds import Bound
from toolbench.report.by_target import TargetComparison
from toolbench.report.context import Context, RunView
from toolbench.report.groups import Series
from toolbench.report.likewise import By, Cell, Comparison, leader
from toolbench.report.truth import CellTruth, Verdict
from toolbench.report.verdict_text import estimate, every, example, lead, limit_phrase, ranking_sentence

MAX_LISTED = 6  # per-comparison sentences in the verdict; the like-for-like table has them all


@dataclass(frozen=True)
class Said:
    text: str
    href: str = ""  # the table rows the sentence's figures came from ("#id"); "" when none


@dataclass(frozen=True)
class Topic:
    name: str  # what the sentences answer: throughput, limits, cost, truthfulness, failures
    sentences: tuple[Said, ...]
    summary: str = ""  # the answer in a few words, shown while the topic is closed

    @property
    def text(self) -> str:
        return " ".join(s.text for s in self.sentences)


@dataclass(frozen=True)
class RunVerdict:
    run: str  # the run's label, "" for a single run
    headline: str
    topics: tuple[Topic, ...]


def verdicts(ctx: Context) -> list[RunVerdict]:
    comps = ctx.comparisons
    return [_run_verdict(run, [c for c in comps if c.run == run.label],
                         [s for s in ctx.series if s.key.run == run.label],
                         [t for t in ctx.target_comparisons if t.run == run.label]) for run in ctx.runs]


def _run_verdict(run: RunView, comps: list[Comparison], series: list[Series],
                 on_targets: list[TargetComparison]) -> RunVerdict:
    cells = [cell for comp in comps for cell in comp.cells]
    if answer.question(run) == "targets":
        several_tools = len({c.tool for c in cells}) > 1
        headline = " ".join(s for s in (answer.targets(on_targets), _headline(run, comps) if several_tools else "")
                            if s)
    else:
        headline = " ".join(s for s in (_headline(run, comps), targets.headline(on_targets)) if s)
    headline = " ".join(s for s in (headline, disturbed.left_out(run.results)) if s)  # never silently left out
    topics = (Topic("Targets", _said(targets.sentences(on_targets, MAX_LISTED)), summary.targets(on_targets)),
              Topic("Like for like", tuple(_ranking(comps)), summary.like_for_like(comps)),
              Topic("Limits", _said(_limits(cells)), summary.limits(cells)),
              Topic("Cost", _said(_cost(comps, cells)), summary.cost(comps, cells)),
              Topic("Truthfulness", _said(_truth([c.truth for c in cells])), summary.truth(cells)),
              Topic("Failures", _said(_failures(run, cells, series)), summary.failures(run, cells)))
    return RunVerdict(run.label, headline, tuple(t for t in topics if t.sentences))


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def _headline(run: RunView, comps: list[Comparison]) -> str:
    prefix = (f"Interrupted run ({_plural(len(run.results), 'cell')} recorded). "
              if run.manifest.status is RunStatus.INTERRUPTED else "")
    if not run.results:
        return "This run has no results yet."
    if not comps:
        ok = sum(r.outcome.status is Status.OK for r in run.results)
        if ok:
            return (prefix + f"{_plural(ok, 'cell')} finished ok, but no tool said how many requests succeeded, "
                    "so this run cannot say which tool generated the most.")
        return (prefix + f"No cell finished ok ({_plural(len(run.results), 'cell')} recorded), so this run cannot "
                "say which tool generated the most.")
    several = [c for c in comps if len(c.cells) > 1]
    if not several:
        return prefix + _alone(comps)
    ranked = [c for c in several if c.by is not By.NOTHING]
    unranked = [c for c in several if c.by is By.NOTHING]
    sentences = [lead(ranked)] if ranked else []
    if unranked:
        sentences.append(f"In {_plural(len(unranked), 'comparison')} the server was the limit and the generator's "
                         "cost was not measured, so the tools there are not ranked.")
    return prefix + " ".join(sentences)


def _alone(comps: list[Comparison]) -> str:
    cells = [cell for comp in comps for cell in comp.cells]
    best = max(cells, key=lambda c: c.rate.value)
    tools = sorted({c.tool for c in cells})
    failed = best.point.error_rate
    errors = f"; {fmt.percent(failed * 100, 0)} of its requests failed" if failed and failed >= 0.01 else ""
    limit = limit_phrase(best.limit.bound, 1)
    comp = next(c for c in comps if any(cell is best for cell in c.cells))
    where = f"at {comp.where}" + (f", {limit}" if limit else "")
    rate = estimate(best.rate, " successful requests/s")
    if len(tools) == 1:
        return f"{best.tool}, the only tool here, peaked at {rate} {where}{errors}."
    return (f"No two tools finished a like-for-like cell (same keep-alive and concurrency), so none is ranked; "
            f"the highest was {best.tool}'s {rate} {where}{errors}.")


def _said(sentences: list[str]) -> tuple[Said, ...]:
    return tuple(Said(s) for s in sentences)


def rows_of(comp: Comparison) -> str:
    """The like-for-like table's first row of a comparison (toolbench.report.ranking lists its
    cells together, in the order of the ranking used)."""
    first = (comp.ranking if comp.by is not By.NOTHING else comp.by_rate)[0][0].point
    return "#" + anchors.point(first.key.run, first.key.label, comp.where)


def _ranking(comps: list[Comparison]) -> list[Said]:
    several = [c for c in comps if len(c.cells) > 1]
    out = [Said(ranking_sentence(c), rows_of(c)) for c in several[:MAX_LISTED]]
    if len(several) > MAX_LISTED:
        out.append(Said(f"{len(several) - MAX_LISTED} more comparisons are in the like-for-like table.", "#ranking"))
    if several:
        out.append(Said(f"A difference counts only beyond the noise of both cells (half the range of their repetitions, "
                   f"or of their whole seconds with one repetition; where neither was measured, beyond "
                   f"{stats.UNMEASURED_FLOOR_PCT:g} %) and beyond {stats.MIN_DIFFERENCE_PCT:g} %; anything closer "
                   "is a tie."))
        out += _said(_unmeasured([cell for comp in several for cell in comp.cells]))
    return out


def _unmeasured(cells: list[Cell]) -> list[str]:
    """The cells whose noise between runs is not measured: fewer than stats.MIN_REPETITIONS."""
    few = [c for c in cells if not c.rate.noise_measured]
    if not few:
        return []
    most = max(c.rate.repetitions for c in few)
    return [f"The noise between runs is not measured for {len(few)} of these {len(cells)} cells "
            f"({'one repetition' if most == 1 else f'at most {most} repetitions'}; it takes "
            f"{stats.MIN_REPETITIONS}): their leads and ties may not repeat. Run with `repeat: "
            f"{stats.MIN_REPETITIONS}` or more to measure it."]


def _cells_text(cells: list[Cell]) -> str:
    shown = [f"{c.tool} at c {fmt.number(c.point.concurrency)}, keep-alive {c.point.key.keepalive_text}"
             for c in cells[:4]]
    return "; ".join(shown) + (f" and {len(cells) - 4} more" if len(cells) > 4 else "")


def _limits(cells: list[Cell]) -> list[str]:
    out = []
    for bound, what in ((Bound.SERVER, "Limited by the server (the probe far above its unloaded time, or the "
                         "server's CPU saturated)"),
                        (Bound.GENERATOR, "Limited by the generator (the tool's processes used all the CPU its "
                         "design can use)"),
                        (Bound.BOTH, "Limited by both"),
                        (Bound.NEITHER, "Limited by neither the server nor the tool's own CPU"),
                        (Bound.UNKNOWN, "Not known (a side not measured: no probe answer or no monitor)")):
        mine = [c for c in cells if c.limit.bound is bound]
        if mine:
            out.append(f"{what}: {_cells_text(mine)}.")
    return out


def _cost(comps: list[Comparison], cells: list[Cell]) -> list[str]:
    if not cells:
        return []
    if not any(c.cpu is not None for c in cells):
        return ["What that load cost the generator was not measured (no monitor data), so no tool can be "
                "called cheaper than another."]
    rated = [c for c in comps if sum(len(t) for t in c.by_cost) > 1]
    if not rated:
        best = min((c for c in cells if c.cpu is not None), key=lambda c: c.cpu.value)  # type: ignore[union-attr]
        return [f"{best.tool} spent {estimate(best.cpu, ' µs')} of CPU per request at concurrency "
                f"{fmt.number(best.point.concurrency)}, keep-alive {best.point.key.keepalive_text}."]
    leaders: dict[str, list[Comparison]] = {}
    for comp in rated:
        if (tool := leader(comp.by_cost)) is not None:
            leaders.setdefault(tool, []).append(comp)
    ties = [c for c in rated if leader(c.by_cost) is None]
    tie_text = f"; {_plural(len(ties), 'comparison')} tied within the noise" if ties else ""
    if not leaders:
        return [f"Per request, like for like: no tool spent less CPU than another beyond the noise in "
                f"{every(len(rated))}."]
    if len(leaders) > 1:
        listed = ", ".join(f"{tool} in {len(found)}" for tool, found in sorted(leaders.items()))
        return [f"Least CPU per request, like for like: {listed} of {len(rated)} comparisons{tie_text}."]
    (tool, mine), = leaders.items()
    count = every(len(rated)) if not ties else f"{len(mine)} of {len(rated)} like-for-like comparisons"
    return [f"Per request, like for like: {tool} spent the least CPU in {count}, beyond the noise "
            f"({example(mine[0], By.COST)}){tie_text}."]


def _truth(checks: list[CellTruth]) -> list[str]:
    if not checks:
        return []
    out = []
    probed = [c for c in checks if c.probe_ms is not None]
    if not probed and any(r.probe is not None for c in checks for r in c.point.ok):
        out.append("The probe ran but every request it timed during the load failed, so no tool's latency was "
                   "checked against an independent measurement.")
    elif not probed:
        out.append("No probe ran, so no tool's latency was checked against an independent measurement.")
    else:
        out += _probe_sentences(probed)
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


def _outside(checks: list[CellTruth]) -> str:
    """Per tool, the largest share of a connection's cycle spent outside the timed request."""
    found = []
    for tool in sorted({c.point.key.name for c in checks}):
        mine = [c for c in checks if c.point.key.name == tool and c.outside_ms is not None and c.implied_ms]
        if mine:
            top = max(mine, key=lambda c: (c.outside_ms or 0.0) / (c.implied_ms or 1.0))
            share = (top.outside_ms or 0.0) / (top.implied_ms or 1.0) * 100.0
            found.append(f"{tool} (up to {share:.0f} %: {fmt.number(top.outside_ms)} ms of a "
                         f"{fmt.number(top.implied_ms)} ms cycle at concurrency {fmt.number(top.point.concurrency)})")
    return ", ".join(found)


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
    if outside := _outside(checks):
        out.append("Mean latency below concurrency ÷ rate, so each connection spent time outside the timed request "
                   f"(the client's own overhead or think time): {outside}.")
    if higher := _listed(tally, Verdict.HIGHER):
        out.append(f"Mean latency above concurrency ÷ rate, more than its connections could carry: {higher}; the "
                   "latency includes waiting inside the tool before the send, or the rate counts other requests.")
    coarse = [(t, c) for t, c in sorted(tally.items()) if c[Verdict.SUB_RESOLUTION]]
    if coarse:
        listed = ", ".join(f"{t} (<{fmt.number(resolution.get(t))} ms, {c[Verdict.SUB_RESOLUTION]} of "
                           f"{sum(c.values())} cells)" for t, c in coarse)
        out.append(f"Mean latency below the tool's resolution, shown as <N rather than 0: {listed}.")
    if silent := [t for t, c in sorted(tally.items()) if c[Verdict.NO_LATENCY] == sum(c.values())]:
        out.append(f"No latency reported at all: {', '.join(silent)}.")
    return out


def _failures(run: RunView, cells: list[Cell], series: list[Series]) -> list[str]:
    by_status = Counter(r.outcome.status for r in run.results)
    out = []
    for status, verb in ((Status.FAILED, "failed"), (Status.TIMED_OUT, "timed out"),
                         (Status.INTERRUPTED, "was interrupted"),
                         (Status.PARTIAL, "was partial (a generator's part failed, nothing summed)")):
        ids = [r.identity.cell_id for r in run.results if r.outcome.status is status]
        if ids:
            shown = ", ".join(ids[:4]) + (f" and {len(ids) - 4} more" if len(ids) > 4 else "")
            verb = verb if len(ids) == 1 else verb.replace("was ", "were ")
            out.append(f"{_plural(len(ids), 'cell')} {verb}: {shown}.")
    skipped = by_status[Status.UNSUPPORTED] + by_status[Status.TOOL_MISSING]
    if skipped:
        reasons = sorted({r.outcome.error or r.outcome.status.value for r in run.results
                          if r.outcome.status in (Status.UNSUPPORTED, Status.TOOL_MISSING)})
        out.append(f"{skipped} {'cell was' if skipped == 1 else 'cells were'} not run: {'; '.join(reasons[:3])}.")
    for s in series:
        if s.errors_from is not None and s.cells_ok:
            out.append(f"{s.key.name} with keep-alive {s.key.keepalive_text} saw failures from concurrency "
                       f"{fmt.number(s.errors_from)} on.")
    failing = [c for c in cells if (c.point.error_rate or 0.0) > 0]
    if failing:
        listed = "; ".join(f"{c.tool} {fmt.percent((c.point.error_rate or 0) * 100)} at c "
                           f"{fmt.number(c.point.concurrency)}, keep-alive {c.point.key.keepalive_text}"
                           for c in sorted(failing, key=lambda c: -(c.point.error_rate or 0))[:4])
        out.append(f"Failed requests, beside the successful rate the ranking uses: {listed}"
                   + (f" and {len(failing) - 4} more cells." if len(failing) > 4 else "."))
    status = run.manifest.status
    if status is not RunStatus.COMPLETE:
        out.append(f"The run's status is “{status.value}”: it may not hold every planned cell.")
    return out
