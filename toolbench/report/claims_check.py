"""A study's claims (toolbench.scenario.claims) checked on a run's results: a pure function.

Each side of a claim is the cells its selector matches, grouped into points (a series at one
concurrency, every repetition merged: toolbench.report.groups.Point), and the side's figure is its
best point: the highest for a rate, the lowest for a latency, a cost or an error rate, with that
point's noise (toolbench.record.stats.Estimate). The claim is reproduced when the higher side beats
the lower beyond the noise of both (stats.differs), and by at least the claim's ratio when it gives
one; not reproduced when the lower side is higher beyond the noise, or the ratio falls short by
more than the noise could explain (whether or not the two figures' noise overlaps); within the
noise otherwise. Two sides said to be alike are reproduced within the noise of both, not
reproduced beyond it; a side said to be at most the other is reproduced below it or within the
noise, not reproduced above it beyond the noise. Cells disturbed by other work on the machine are
left out (toolbench.report.disturbed) and the figures say how many. Beside the verdict, the evidence:
what the run recorded of both best points (toolbench.report.claims_evidence)."""
from __future__ import annotations

import enum
import math
from collections import Counter
from dataclasses import dataclass
from typing import Iterable

from toolbench.record import stats
from toolbench.record.schema import RunResult, Status
from toolbench.report import claims_evidence, fmt, groups
from toolbench.scenario.claims import Claim, Relation
from toolbench.scenario.criteria.figures import read
from toolbench.scenario.criteria.spec import Selector

# Figures where more is better; for every other (latencies, costs, errors) the best point is the lowest.
HIGHER_IS_BETTER = ("rps", "rps_attempted", "requests_total", "requests_ok", "received_bytes_per_s")


class Verdict(str, enum.Enum):
    REPRODUCED = "reproduced"
    NOT_REPRODUCED = "not reproduced"
    WITHIN_NOISE = "within the noise"
    NOT_MEASURED = "not measured"
    NOT_CHECKED = "not checked by a run"


@dataclass(frozen=True)
class Side:
    name: str  # the best point, as a reader tells it from the others ("ab c200 ka")
    figure: stats.Estimate
    disturbed: int  # the side's cells left out, disturbed by other work on the machine
    results: tuple[RunResult, ...] = ()  # the best point's repetitions (the disturbed left out)


@dataclass(frozen=True)
class Checked:
    claim: Claim
    verdict: Verdict
    ours: str  # both sides' figures with their noise and the ratio, or what was not measured
    higher: Side | None = None
    lower: Side | None = None
    evidence: str = ""  # what the run recorded of both sides' best points (toolbench.report.claims_evidence)


def check_all(claims: Iterable[Claim], results: list[RunResult]) -> list[Checked]:
    """Every claim checked on one run's results, in the claims' order."""
    varies = _varying(results)
    return [check(claim, results, varies) for claim in claims]


def check(claim: Claim, results: list[RunResult], varies: frozenset[str] | None = None) -> Checked:
    if claim.sides is None:
        return Checked(claim, Verdict.NOT_CHECKED, "")
    varies = _varying(results) if varies is None else varies
    higher = side(claim.sides.higher, claim.figure, results, varies)
    lower = side(claim.sides.lower, claim.figure, results, varies)
    if isinstance(higher, str) or isinstance(lower, str):
        names = ("higher", "lower") if claim.sides.relation is Relation.HIGHER else ("first", "second")
        missing = [f"{which} ({sel.text() or 'every cell'}): {why}"
                   for which, sel, why in zip(names, (claim.sides.higher, claim.sides.lower), (higher, lower))
                   if isinstance(why, str)]
        return Checked(claim, Verdict.NOT_MEASURED, "; ".join(missing))
    if claim.sides.relation is Relation.ALIKE:
        verdict = Verdict.NOT_REPRODUCED if stats.differs(higher.figure, lower.figure) else Verdict.REPRODUCED
    elif claim.sides.relation is Relation.AT_MOST:
        above = stats.differs(higher.figure, lower.figure) and higher.figure.value > lower.figure.value
        verdict = Verdict.NOT_REPRODUCED if above else Verdict.REPRODUCED
    else:
        verdict = judge(higher.figure, lower.figure, claim.sides.by_at_least)
    found = claims_evidence.said(claims_evidence.SideCells(higher.name, higher.results),
                                 claims_evidence.SideCells(lower.name, lower.results))
    return Checked(claim, verdict, ours(claim.figure, higher, lower), higher, lower, found)


def judge(higher: stats.Estimate, lower: stats.Estimate, by_at_least: float | None) -> Verdict:
    """The verdict on two sides' figures: a ratio clearly short is one whose most favourable
    reading within the noise of both (higher at its top, lower at its bottom) is still short.
    That is checked first: two figures whose noise overlaps are still clearly not 4 times apart
    (study 000's "about 4 times the dev server", 1.2x, was said within the noise in one run and
    not reproduced in the other)."""
    if by_at_least is not None and lower.value > 0:
        floor = lower.value - lower.half_width
        best = math.inf if floor <= 0 else (higher.value + higher.half_width) / floor
        if best < by_at_least:
            return Verdict.NOT_REPRODUCED
    if not stats.differs(higher, lower):
        return Verdict.WITHIN_NOISE
    if lower.value > higher.value:
        return Verdict.NOT_REPRODUCED
    if by_at_least is None or lower.value <= 0 or higher.value / lower.value >= by_at_least:
        return Verdict.REPRODUCED
    return Verdict.WITHIN_NOISE


def side(selector: Selector, figure: str, results: list[RunResult], varies: frozenset[str]) -> Side | str:
    """The side's best point, or why it has none."""
    chosen = [r for r in results if matches(selector, r)]
    if not chosen:
        return "no cell of the run matches it"
    disturbed = sum(1 for r in chosen if r.outcome.status is Status.DISTURBED)
    kept = [r for r in chosen if r.outcome.status is not Status.DISTURBED]
    measured = [(p, e) for p in groups.points([("", kept)]) if (e := estimate(p, figure)) is not None]
    if not measured:
        return _why_none(chosen, figure)
    best = (max if figure in HIGHER_IS_BETTER else min)(measured, key=lambda pe: pe[1].value)
    return Side(point_name(best[0], varies), best[1], disturbed, best[0].results)


def estimate(point: groups.Point, figure: str) -> stats.Estimate | None:
    """The point's figure over its ok repetitions, with its noise; the rate's noise is measured
    over whole seconds when there is one repetition (groups.Point.rate)."""
    if figure == "rps":
        return point.rate
    values = [v for r in point.ok if (v := read(figure, r)) is not None and math.isfinite(v)]
    return stats.estimate(values, None)


def matches(selector: Selector, r: RunResult) -> bool:
    """As a criterion's selector picks cells (toolbench.scenario.criteria.evaluate)."""
    i = r.identity
    return ((not selector.tool or i.label in selector.tool)
            and (not selector.target or i.target_label in selector.target)
            and (not selector.concurrency or i.concurrency in selector.concurrency)
            and (not selector.keepalive or i.keepalive in selector.keepalive)
            and (not selector.rate or i.rate_rps in selector.rate))


def _why_none(chosen: list[RunResult], figure: str) -> str:
    statuses = Counter(r.outcome.status for r in chosen)
    if statuses[Status.OK]:
        return f"no cell that finished ok has {figure}"
    said = ", ".join(f"{n} {status.value.replace('_', ' ')}" for status, n in statuses.most_common())
    return f"no cell finished ok ({said})"


def _varying(results: list[RunResult]) -> frozenset[str]:
    """What tells the run's cells apart: only that is named in a side's point."""
    seen = {"tool": {r.identity.label for r in results}, "target": {r.identity.target_label for r in results},
            "concurrency": {r.identity.concurrency for r in results},
            "keepalive": {r.identity.keepalive for r in results}, "rate": {r.identity.rate_rps for r in results}}
    return frozenset(key for key, values in seen.items() if len(values) > 1)


def point_name(point: groups.Point, varies: frozenset[str]) -> str:
    first = point.results[0].identity
    # The tool is named unless the targets alone tell the cells apart (one tool, several targets).
    tool = "tool" in varies or "target" not in varies
    parts = [first.target_label if "target" in varies else "", first.label if tool else "",
             f"c{point.concurrency}" if "concurrency" in varies and point.concurrency is not None else "",
             {True: "ka", False: "close"}.get(first.keepalive, "") if "keepalive" in varies else "",
             f"open {first.rate_rps:g}/s" if "rate" in varies and first.rate_rps is not None else ""]
    return " ".join(p for p in parts if p)


def ours(figure: str, higher: Side, lower: Side) -> str:
    """Like "ab c200 ka 9,056/s ±3.1 % vs ab c10 close 3,194/s ±2.0 % (2.8×)"."""
    ratio = f" ({_ratio(higher.figure.value / lower.figure.value)})" if lower.figure.value > 0 else ""
    left_out = higher.disturbed + lower.disturbed
    note = (f"; {left_out} disturbed {'cell' if left_out == 1 else 'cells'} left out" if left_out else "")
    return f"{higher.name} {shown(figure, higher.figure)} vs {lower.name} {shown(figure, lower.figure)}{ratio}{note}"


def shown(figure: str, e: stats.Estimate) -> str:
    """A figure in its unit, with its noise: "9,056/s ±3.1 %", "1.2 ms (noise not measured)"."""
    if e.noise_pct is None:
        noise = " (noise not measured)"
    else:
        noise = f" ±{e.noise_pct:.1f} %" if e.noise_pct < 10 else f" ±{e.noise_pct:.0f} %"
    return _in_unit(figure, e.value) + noise


def _in_unit(figure: str, value: float) -> str:
    if figure == "error_rate":
        return fmt.percent(value * 100)
    if figure.endswith("_bytes") or figure == "received_bytes_per_s":
        return fmt.size(value) + ("/s" if figure.endswith("_per_s") else "")
    for ending, unit in (("rps", "/s"), ("rps_attempted", "/s"), ("_ms", " ms"), ("_us_per_request", " µs"),
                         ("_pct", " %"), ("duration_s", " s")):
        if figure.endswith(ending):
            return fmt.number(value) + unit
    return fmt.number(value)


def _ratio(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}×"
    return f"{value:.1f}×" if value >= 1 else f"{value:.2f}×"
