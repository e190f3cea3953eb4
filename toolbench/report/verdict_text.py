"""How a like-for-like comparison reads: figures with their noise, tiers, limits."""
from __future__ import annotations

from typing import Callable, Iterable

from toolbench import stats
from toolbench.report import fmt
from toolbench.report.bounds import Bound
from toolbench.report.likewise import By, Cell, Comparison

Getter = Callable[[Cell], "stats.Estimate | None"]


def and_list(items: Iterable[str]) -> str:
    words = list(items)
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1] if words else ""


def estimate(e: stats.Estimate | None, unit: str) -> str:
    """Like "30,287/s ±6.7 %"; a noise not measured reads as the one assumed: "(±10 % assumed)"."""
    if e is None:
        return fmt.ABSENT
    if e.noise_pct is None:
        return f"{fmt.number(e.value)}{unit} (±{stats.ASSUMED_NOISE_PCT:g} % assumed)"
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
