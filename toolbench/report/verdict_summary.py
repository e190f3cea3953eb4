"""One line per topic of the verdict, shown while the topic is closed: its answer in a few
words, counted from the same data as the topic's sentences (toolbench.report.verdict)."""
from __future__ import annotations

from collections import Counter

from toolbench.record.schema import Status
from toolbench.report.bounds import Bound
from toolbench.report.by_target import TargetComparison
from toolbench.report.context import RunView
from toolbench.report.likewise import Cell, Comparison, leader
from toolbench.report.truth import Verdict
from toolbench.report.verdict_text import and_list


def _counted(wins: Counter[str], n: int, what: str) -> str:
    """"wrk led 3, ab 1 of 8 comparisons; 4 ties"."""
    ties = n - sum(wins.values())
    items = sorted(wins.items(), key=lambda kv: (-kv[1], kv[0]))
    led = ", ".join(f"{name} {what} {k}" if i == 0 else f"{name} {k}" for i, (name, k) in enumerate(items))
    said = f"{led} of {n}" if led else ("the one tied" if n == 1 else f"all {n} tied")
    return said + (f"; {ties} {'tie' if ties == 1 else 'ties'}" if ties and led else "")


def targets(comps: list[TargetComparison]) -> str:
    compared = [c for c in comps if len(c.entries) > 1]
    if not compared:
        return "no target compared with another"
    return _counted(Counter(c.leader for c in compared if c.leader), len(compared), "led")


def like_for_like(comps: list[Comparison]) -> str:
    several = [c for c in comps if len(c.cells) > 1]
    if not several:
        return "nothing compared like for like"
    return _counted(Counter(c.winner for c in several if c.winner), len(several), "led")


def limits(cells: list[Cell]) -> str:
    if not cells:
        return "no cell to judge"
    bounds = Counter(c.limit.bound for c in cells)
    said = {Bound.SERVER: "limited by the server", Bound.GENERATOR: "limited by the generator",
            Bound.BOTH: "limited by both", Bound.NEITHER: "limited by neither", Bound.UNKNOWN: "limit not known"}
    of = "the one cell" if len(cells) == 1 else f"{len(cells)} cells"
    return f"of {of}: " + ", ".join(f"{k} {said[b]}" for b, k in bounds.most_common())


def cost(comps: list[Comparison], cells: list[Cell]) -> str:
    if not any(c.cpu is not None for c in cells):
        return "not measured"
    rated = [c for c in comps if sum(len(t) for t in c.by_cost) > 1]
    if not rated:
        return "one tool measured per comparison: nothing to rank"
    wins = Counter(t for c in rated if (t := leader(c.by_cost)) is not None)
    return "least CPU per request: " + _counted(wins, len(rated), "in")


def truth(cells: list[Cell]) -> str:
    checked = [c.truth for c in cells if c.truth.probe_ms is not None]
    if not checked:
        return "no tool's latency checked against the probe"
    tally: dict[str, Counter[Verdict]] = {}
    for c in checked:
        tally.setdefault(c.point.key.name, Counter())[c.by_probe.verdict] += 1
    agreed = sorted(t for t, v in tally.items() if v[Verdict.AGREES] == sum(v.values()))
    lower = sorted(t for t, v in tally.items() if v[Verdict.LOWER])
    said = f"agreed with the probe in every cell: {and_list(agreed)}" if agreed else "no tool agreed in every cell"
    return said + (f"; under-reported: {and_list(lower)}" if lower else "")


def failures(run: RunView, cells: list[Cell]) -> str:
    by_status = Counter(r.outcome.status for r in run.results)
    parts = [f"{by_status[s]} {word}" for s, word in ((Status.FAILED, "failed"), (Status.TIMED_OUT, "timed out"),
                                                     (Status.INTERRUPTED, "interrupted"), (Status.PARTIAL, "partial"))
             if by_status[s]]
    skipped = by_status[Status.UNSUPPORTED] + by_status[Status.TOOL_MISSING]
    if skipped:
        parts.append(f"{skipped} not run")
    failing = sum((c.point.error_rate or 0.0) > 0 for c in cells)
    if failing:
        parts.append(f"{failing} with failed requests")
    return ", ".join(parts) + " (cells)" if parts else "none"
