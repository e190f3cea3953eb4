"""The headline at the top of a report: at most two sentences, the answer first.

The first sentence says who led and how many comparisons were ties; the second gives the one
figure a reader would quote (the highest rate, with its noise) and anything that qualifies the
whole run (interrupted, disturbed cells left out). Every comparison, with its figures, is in the
verdict below it and in the like-for-like table."""
from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING

from toolbench.record.manifest import RunStatus
from toolbench.record.schema import Status
from toolbench.report import disturbed, fmt
from toolbench.report.by_target import TargetComparison
from toolbench.report.context import RunView
from toolbench.report.groups import Point
from toolbench.report.likewise import By, Comparison
from toolbench.report.verdict_text import and_list, estimate, every
from toolbench.report.view import Section

if TYPE_CHECKING:
    from toolbench.report.scorecard import Scorecard

# A sentence ends at . ! or ? before a space and a capital, or at the end ("1.5" and "c10." do not).
SENTENCE_END = re.compile(r"[.!?](?=\s+[A-Z“\"(]|\s*$)")

__all__ = ["QUESTIONS", "tools", "targets", "purposes", "short_where", "dot_note", "estimate"]

QUESTIONS = {
    "tools": "Which load tool generates the most successful requests per second, like for like?",
    "targets": "Which target serves the most successful requests per second, like for like?",
    "purposes": "Which load tool suits which purpose?",
}


def question(description: str) -> str:
    """The description's opening question, when it opens with one (a study's does); else ""."""
    end = description.find("?")
    opening = description[:end + 1]
    return opening.strip() if 0 < end < 400 and not re.search(r"[.!](\s|$)", opening) else ""


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def short_where(comp: Comparison) -> str:
    variant = f", {comp.variant}" if comp.variant else ""
    return f"c{fmt.number(comp.concurrency)}, keep-alive {fmt.yes_no(comp.keepalive)}{variant}"


def dot_note(point: Point) -> str:
    """A mark beside a dot's label: repetitions left out because the machine was disturbed."""
    return "↯" if disturbed.of(point.results) else ""


def _qualifier(run: RunView) -> str:
    """What qualifies the whole run, as the tail of the second sentence; "" when nothing does."""
    parts = []
    if run.manifest.status is RunStatus.INTERRUPTED:
        parts.append(f"the run was interrupted ({_plural(len(run.results), 'cell')} recorded)")
    left = disturbed.of(run.results)
    if left:
        parts.append(f"{_plural(len(left), 'cell')} disturbed by other work on the machine "
                     f"{'was' if len(left) == 1 else 'were'} left out")
    return "; ".join(parts)


def _no_answer(run: RunView, what: str) -> str:
    if not run.results:
        return "This run has no results yet."
    ok = sum(r.outcome.status is Status.OK for r in run.results)
    if not ok:
        return f"No cell finished ok ({_plural(len(run.results), 'cell')} recorded), so this run cannot say {what}."
    return f"No two of its cells that finished ok can be compared like for like, so this run cannot say {what}."


def _second(best: str, run: RunView) -> str:
    qualifier = _qualifier(run)
    text = "; ".join(s for s in (best, qualifier) if s)
    return (text[:1].upper() + text[1:] + ".") if text else ""


def join(*sentences: str) -> str:
    return " ".join(s for s in sentences if s)


def first_sentence(text: str) -> str:
    found = SENTENCE_END.search(text)
    return text[:found.end()] if found else text


def claims_tally(section: Section) -> str:
    """"Of the study's 18 claims, 6 were reproduced, …": from the verdict column of its table."""
    verdicts = Counter(row.values[[c.label for c in table.columns].index("verdict")].text
                       for table in section.tables for row in table.rows)
    n = sum(verdicts.values())
    said = and_list(f"{k} {v}" for v, k in verdicts.most_common())
    return f"Of the study's {_plural(n, 'claim')} checked on this run: {said}." if n else ""


def tools(ranked: list[Comparison], run: RunView) -> str:
    if not ranked:
        return join(_no_answer(run, "which tool generated the most"), _second("", run))
    n = len(ranked)
    unranked = sum(c.by is By.NOTHING for c in ranked)
    wins = Counter(c.winner for c in ranked if c.winner)
    ties = n - unranked - sum(wins.values())
    rest = [f"{_plural(ties, 'tie')} within the noise"] if ties else []
    rest += [f"{unranked} not ranked (the server was the limit and the tools' CPU was not measured)"] \
        if unranked else []
    by = " (by CPU per request where the server was the limit)" if any(c.by is By.COST for c in ranked) else ""
    of_n = "the one like-for-like comparison" if n == 1 else f"{n} like-for-like comparisons"
    if len(wins) == 1 and not rest:
        first = f"{next(iter(wins))} led in {every(n)} beyond the noise{by}."
    elif wins:
        led = and_list(f"{tool} {k}" for tool, k in sorted(wins.items(), key=lambda kv: (-kv[1], kv[0])))
        first = f"Of {of_n}, {led} led beyond the noise{by}; {and_list(rest)}."
    else:
        first = f"No tool led beyond the noise in {'the' if n == 1 else 'any of the'} {of_n}: {and_list(rest)}."
    return join(first, _second(_highest(ranked), run))


def _highest(comps: list[Comparison]) -> str:
    """The one figure a reader would quote: the highest successful rate, with its noise and place."""
    best = max((cell for comp in comps for cell in comp.cells), key=lambda c: c.rate.value)
    where = next(comp for comp in comps if best in comp.cells)
    return f"the highest rate was {best.point.key.name}'s {estimate(best.rate, '/s')} at {short_where(where)}"


def alone(comps: list[Comparison], run: RunView) -> str:
    """No comparison holds two tools: say so, and give the highest rate measured."""
    cells = [cell for comp in comps for cell in comp.cells]
    if not cells:
        return join(_no_answer(run, "which tool generated the most"), _second("", run))
    tools = sorted({c.point.key.name for c in cells})
    first = (f"{tools[0]} is the only tool here, so nothing is ranked." if len(tools) == 1 else
             "No two tools finished a cell alike (same concurrency, keep-alive and variant), so none is ranked.")
    return join(first, _second(_highest(comps), run))


def targets(comps: list[TargetComparison], run: RunView) -> str:
    if not comps:
        return join(_no_answer(run, "which target served the most"), _second("", run))
    n = len(comps)
    leads = Counter(c.leader for c in comps if c.leader)
    ties = n - sum(leads.values())
    same = " (same tool, concurrency and keep-alive)"
    of_n = "the one like-for-like comparison" if n == 1 else f"{n} like-for-like comparisons"
    if len(leads) == 1 and not ties:
        first = f"{next(iter(leads))} served the most successful requests/s in {every(n)}{same}, beyond the noise."
    elif leads:
        led = and_list(f"{t} in {k}" for t, k in sorted(leads.items(), key=lambda kv: (-kv[1], kv[0])))
        first = f"Of {of_n}{same}, {led} served the most beyond the noise; {_plural(ties, 'tie')} within the noise."
    else:
        first = f"No target served more than another beyond the noise in {of_n}{same}."
    best = max((e for c in comps for e in c.entries), key=lambda e: e.rate.value)
    where = next(c for c in comps if best in c.entries)
    top = (f"the highest was {best.target}'s {estimate(best.rate, '/s')} with {where.tool} at "
           f"c{fmt.number(where.concurrency)}, keep-alive {fmt.yes_no(where.keepalive)}")
    return join(first, _second(top, run))


def purposes(card: "Scorecard", run: RunView) -> str:
    if not card.uses:
        return join(_no_answer(run, "which tool suits which purpose"), _second("", run))
    first = "Use " + "; ".join(card.uses) + "."
    counted = f"ranked from this run's own figures over {_plural(len(card.rows), 'tool')}"
    if card.not_measured:
        counted += f" ({_plural(len(card.not_measured), 'more')} not measured here)"
    return join(first, _second(counted, run))
