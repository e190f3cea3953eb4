"""The top of the compare page (several runs): what changed beyond the noise, as a figure.

One group per later run against the first: each cell both ran, its change in successful
requests/s in percent, with a bar as wide as the two runs' noise together; the line at 0 is no
change, so a bar that crosses it is within the noise. Changes beyond the noise of both runs
(toolbench.record.stats.differs) come first, largest first."""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from toolbench.record import stats
from toolbench.report import charts, compare, fmt, likewise
from toolbench.report.context import Context, RunView
from toolbench.report.groups import Point

if TYPE_CHECKING:
    from toolbench.report.glance import Glance

MAX_ROWS = 16  # cells drawn per pair of runs; the compare table has them all


@dataclass(frozen=True)
class Change:
    name: str
    old: Point
    new: Point
    pct: float  # (new - old) / old, in percent
    half_width_pct: float  # the two runs' noise together, in percent of the old figure
    beyond: bool


def changes(ctx: Context, base: RunView, run: RunView) -> list[Change]:
    out = []
    for (_, _, keepalive, _, c), pts in compare.matched(ctx, compare.cell_key).items():  # type: ignore[misc]
        old, new = pts.get(base.label), pts.get(run.label)
        if not (old and new and old.rate and new.rate and old.rate.value):
            continue
        a, b = new.rate, old.rate
        name = f"{new.key.name} c{fmt.number(c)} ka {fmt.yes_no(keepalive)}"
        out.append(Change(name, old, new, (a.value - b.value) / b.value * 100.0,
                          (a.half_width + b.half_width) / b.value * 100.0, stats.differs(a, b)))
    return sorted(out, key=lambda ch: (not ch.beyond, -abs(ch.pct), ch.name))


def _sentence(base: RunView, run: RunView, found: list[Change], clashes: list[str]) -> str:
    pair = f"From “{base.label}” to “{run.label}”"
    if base.stop != run.stop:
        return (f"{pair}, no change is called: the runs stopped their cells differently "
                f"({base.stop or 'unknown'} against {run.stop or 'unknown'}).")
    if not found:
        return f"{pair}, no cell ran in both runs, so nothing can be compared."
    beyond = [ch for ch in found if ch.beyond]
    up = sum(ch.pct > 0 for ch in beyond)
    said = (f"{pair}, {len(beyond)} of {len(found)} cells changed beyond the noise of both runs "
            f"({up} faster, {len(beyond) - up} slower)" if beyond else
            f"{pair}, none of the {len(found)} cells both runs share changed beyond the noise of both")
    if clashes:
        said += f", and {len(clashes)} like-for-like rankings of tools are reversed"
    return said + "."


def glance(ctx: Context) -> "Glance":
    from toolbench.report.glance import AnswerFigure, Glance  # it imports this module

    base = ctx.runs[0]
    comps = ctx.comparisons
    sentences, groups = [], []
    for run in ctx.runs[1:]:
        found = changes(ctx, base, run) if base.stop == run.stop else []
        clashes = likewise.contradictions([c for c in comps if c.run == base.label],
                                          [c for c in comps if c.run == run.label])
        sentences.append(_sentence(base, run, found, clashes))
        if found:
            groups.append(_group(ctx, base, run, found[:MAX_ROWS]))
    question = f"What changed from “{base.label}” to " + ", ".join(f"“{r.label}”" for r in ctx.runs[1:]) + "?"
    headline = " ".join(sentences[:2])  # at most two sentences: a third run and more are in the table
    if not groups:
        return Glance(question, headline)
    alt = "; ".join(f"{g.title}: " + ", ".join(f"{d.label} {d.value:+.1f} %" for d in g.dots) for g in groups)
    caption = ("Each cell both runs ran: its change in successful requests/s against the first run, in percent, "
               "with the two runs' noise together as a bar. A bar that crosses 0 is within the noise; "
               f"changes beyond the noise of both runs come first. At most {MAX_ROWS} cells a pair are drawn; "
               "the table below has them all.")
    figure = AnswerFigure("What changed beyond the noise", tuple(charts.interval_charts("answer", groups, alt)),
                          caption, alt)
    return Glance(question, headline, figure=figure)


def _group(ctx: Context, base: RunView, run: RunView, found: list[Change]) -> charts.DotGroup:
    dots = tuple(charts.Dot(label=ch.name, value=ch.pct, low=ch.pct - ch.half_width_pct,
                            high=ch.pct + ch.half_width_pct, style=ctx.style(ch.new.key),
                            tip=f"{ch.name}: {ch.pct:+.1f} % (noise ±{ch.half_width_pct:.0f} % together)"
                                + (", beyond the noise" if ch.beyond else ", within the noise"),
                            note="!" if ch.beyond else "")
                 for ch in found)
    return charts.DotGroup(f"“{run.label}” against “{base.label}”", dots, "change in successful requests/s, %",
                           band=False, zero=True)
