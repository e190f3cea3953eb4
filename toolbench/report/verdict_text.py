"""How a like-for-like comparison reads: figures with their noise, tiers, limits."""
from __future__ import annotations

from typing import Callable, Iterable

from toolbench.record import stats
from toolbench.report import fmt
from toolbench.report.bounds import Bound
from toolbench.report.likewise import By, Cell, Comparison

Getter = Callable[[Cell], "stats.Estimate | None"]


def and_list(items: Iterable[str]) -> str:
    words = list(items)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1] if words else ""


def estimate(e: stats.Estimate | None, unit: str) -> str:
    """Like "30,287/s ±6.7 %"; "(noise not measured)" without one."""
    if e is None:
        return fmt.ABSENT
    if e.noise_pct is None:
        return f"{fmt.number(e.value)}{unit} (noise not measured)"
    pct = f"{e.noise_pct:.1f}" if e.noise_pct < 10 else f"{e.noise_pct:.0f}"
    return f"{fmt.number(e.value)}{unit} ±{pct} %"


def limit_phrase(bound: Bound, n: int) -> str:
    who = "" if n == 1 else ("both " if n == 2 else "all ")
    own = "its own CPU" if n == 1 else "their own CPU"
    return {Bound.SERVER: f"{who}limited by the server", Bound.GENERATOR: f"{who}limited by {own}",
            Bound.BOTH: f"{who}limited by the server and by {own}"}.get(bound, "")


def _failed(cell: Cell) -> str:
    rate = cell.point.error_rate
    return f" with {fmt.percent(rate * 100)} failed" if rate and rate >= 0.001 else ""


def tier_text(tier: tuple[Cell, ...], get: Getter, unit: str, limits: bool = True) -> str:
    parts = [f"{c.tool} {estimate(get(c), unit)}{_failed(c)}" for c in tier]
    text = parts[0] if len(parts) == 1 else and_list(parts) + " (the same within the noise)"
    bounds = {c.limit.bound for c in tier} if limits else set()
    phrase = limit_phrase(bounds.pop(), len(tier)) if len(bounds) == 1 else ""
    return f"{text}, {phrase}" if phrase else text


def where(comp: Comparison) -> str:
    text = comp.where
    return text[:1].upper() + text[1:]


def ranking_sentence(comp: Comparison) -> str:
    """One comparison in one sentence: its tiers by the measure that ranks it."""
    if comp.by is By.THROUGHPUT:
        return f"{where(comp)}: " + "; ahead of ".join(tier_text(t, lambda c: c.rate, "/s") for t in comp.by_rate) + "."
    rates = and_list(f"{c.tool} {estimate(c.rate, '/s')}" for tier in comp.by_rate for c in tier)
    server = f"the server was the limit ({rates})"
    if comp.by is By.NOTHING:
        return f"{where(comp)}: {server} and the generator's cost was not measured, so these tools are not ranked."
    ranked = "; ahead of ".join(tier_text(t, lambda c: c.cpu, " µs", limits=False) for t in comp.by_cost)
    return f"{where(comp)}: {server}, so throughput does not rank them; by CPU per request: {ranked}."


def every(n: int) -> str:
    return {1: "the one like-for-like comparison", 2: "both like-for-like comparisons"}.get(
        n, f"all {n} like-for-like comparisons")


def example(comp: Comparison, by: By | None = None) -> str:
    """The lead of one comparison, by its own measure (or `by`): "at …: 100 µs ±5 %, 2.7× less than
    engine's 273 µs ±11 %"."""
    by = by or comp.by
    ranking = comp.by_cost if by is By.COST else comp.by_rate
    first, second = ranking[0][0], ranking[1][0]
    if by is By.COST:
        a, b = first.cpu, second.cpu
        ratio = f"{b.value / a.value:.1f}× less than " if a and b and a.value else "against "
        return f"at {comp.where}: {estimate(a, ' µs')}, {ratio}{second.tool}'s {estimate(b, ' µs')}"
    ratio = f"{first.rate.value / second.rate.value:.1f}× " if second.rate.value else "against "
    return f"at {comp.where}: {estimate(first.rate, '/s')}, {ratio}{second.tool}'s {estimate(second.rate, '/s')}"


def _tie_example(comp: Comparison) -> str:
    get: Getter = (lambda c: c.cpu) if comp.by is By.COST else (lambda c: c.rate)
    unit = " µs" if comp.by is By.COST else "/s"
    return f"at {comp.where}: " + and_list(f"{c.tool} {estimate(get(c), unit)}" for c in comp.ranking[0])


def lead(ranked: list[Comparison]) -> str:
    """The headline over the comparisons that ranked their tools, each by its own measure:
    successful requests/s where the server had room, CPU per request where it was the limit."""
    n = len(ranked)
    winners: dict[str, list[Comparison]] = {}
    for comp in ranked:
        if comp.winner:
            winners.setdefault(comp.winner, []).append(comp)
    ties = [c for c in ranked if c.winner is None]
    measures = {c.by for c in ranked}
    tie_text = (f"; {'the other' if len(ties) == 1 else len(ties)} tied within the noise ({_tie_example(ties[0])})"
                if ties else "")
    if not winners:
        common = set.intersection(*(set(c.tool for c in comp.ranking[0]) for comp in ranked))
        same = {frozenset({By.THROUGHPUT}): " generated the same load", frozenset({By.COST}): " spent the same CPU per "
                "request"}.get(frozenset(measures), " came out the same")
        if not common:
            return (f"No tool led beyond the noise in any of the {n} like-for-like comparisons "
                    f"({_tie_example(ranked[0])}).")
        return f"{and_list(sorted(common))}{same} within the noise in {every(n)} ({_tie_example(ranked[0])})."
    if len(winners) > 1:
        led_by = ", ".join(f"{tool} in {len(comps)}" for tool, comps in sorted(winners.items(),
                                                                              key=lambda kv: (-len(kv[1]), kv[0])))
        return f"No tool led everywhere: of {n} like-for-like comparisons, {led_by} led beyond the noise{tie_text}."
    (tool, mine), = winners.items()
    count = every(n) if not ties else f"{len(mine)} of {n} like-for-like comparisons"
    shown = f"({example(mine[0])}){tie_text}."
    if measures == {By.THROUGHPUT}:
        return f"{tool} generated the most successful requests/s in {count}, beyond the noise {shown}"
    if measures == {By.COST}:
        where = f" in {count}" if ties else ""
        return (f"The server was the limit in {every(n)}, so throughput does not rank these tools; by CPU per "
                f"request, {tool} spent the least{where}, beyond the noise {shown}")
    parts = [f"in {len(found)} by {what} ({example(found[0])})" for what, found in (
        ("successful requests/s, where the server had room", [c for c in mine if c.by is By.THROUGHPUT]),
        ("CPU per request, where the server was the limit", [c for c in mine if c.by is By.COST])) if found]
    return f"{tool} led in {count}, beyond the noise: {', and '.join(parts)}{tie_text}."
