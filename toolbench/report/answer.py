"""The one sentence that answers the question a scenario asks (`compare: tools` or
`compare: targets`), put first in the verdict. Targets are compared like with like: the same
tool (or variant) at the same concurrency and keep-alive setting, beyond the noise."""
from __future__ import annotations

from collections import Counter

from toolbench.report import fmt
from toolbench.report.by_target import Entry, TargetComparison
from toolbench.report.context import RunView
from toolbench.report.verdict_text import estimate, every

QUESTIONS = ("tools", "targets", "purposes")
# The bundled scenario that asks "which tool for which purpose"; its runs made before
# `compare: purposes` existed say `tools`, and are read as the question they asked.
CHOOSE_A_TOOL = "choose-a-tool"
SAME = " (same tool, concurrency and keep-alive)"


def question(run: RunView) -> str:
    """What the run's scenario compares, from its manifest; `tools` for runs made before
    scenarios said so (`purposes` for the bundled choose-a-tool's)."""
    asked = run.manifest.scenario.compare
    if asked == "tools" and run.manifest.scenario.name == CHOOSE_A_TOOL:
        return "purposes"
    return asked if asked in QUESTIONS else "tools"


def targets(comps: list[TargetComparison]) -> str:
    """Which target served the most successful requests/s."""
    compared = [c for c in comps if len(c.entries) > 1]
    if not compared:
        return ("This run compares targets, but no tool finished cells on two of them alike, so it cannot say "
                "which served more.")
    n = len(compared)
    leads = Counter(c.leader for c in compared if c.leader)
    ties = n - sum(leads.values())
    best = max((e for c in compared for e in c.entries), key=lambda e: e.rate.value)
    where = next(c for c in compared if best in c.entries).where
    highest = (f"; the highest was {best.target}'s {estimate(best.rate, ' successful requests/s')} "
               f"with {where}{_failed(best)}")
    if len(leads) == 1 and not ties:
        (target, _), = leads.items()
        return f"{target} served the most successful requests/s in {every(n)}{SAME}{highest}."
    if not leads:
        return f"No target served more than another beyond the noise in {_any(n)}{SAME}{highest}."
    said = ", ".join(f"{t} in {k}" for t, k in sorted(leads.items(), key=lambda kv: (-kv[1], kv[0])))
    tied = f"; {ties} tied within the noise" if ties else ""
    return f"No target led everywhere: of {n} like-for-like comparisons{SAME}, {said} served the most{tied}{highest}."


def _any(n: int) -> str:
    return {1: "the one like-for-like comparison", 2: "either like-for-like comparison"}.get(
        n, f"any of the {n} like-for-like comparisons")


def _failed(entry: Entry) -> str:
    """A leader that failed some of its requests says so: successes rank it, failures qualify it."""
    rate = entry.point.error_rate
    return f", while {fmt.percent(rate * 100, 0)} of its requests failed" if rate and rate >= 0.01 else ""
