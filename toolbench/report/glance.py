"""The top of a report: the question the run asks, a headline of at most two sentences that
answers it, and one figure that shows the answer, before any table or paragraph of reasoning.

Which figure depends on the question (toolbench.report.answer.question):
- tools: each tool's figure in each like-for-like comparison, with its noise interval, best
  first, the leader's interval shaded so that a tie reads as overlap;
- targets: the same by target, one group per tool and place;
- purposes (choose-a-tool): the scorecard, tools × purposes, rank and figure in each cell;
- several runs (the compare page): what changed beyond the noise (toolbench.report.glance_compare).
Every dot links to the table row its figure came from (toolbench.report.anchors)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from toolbench.record import stats
from toolbench.report import anchors, answer, charts, glance_compare, glance_text, scorecard
from toolbench.report.by_target import TargetComparison
from toolbench.report.context import Context
from toolbench.report.groups import Point
from toolbench.report.likewise import By, Cell, Comparison
from toolbench.report.view import Section

MAX_GROUPS = 12  # panels in the answering figure; the like-for-like table has every comparison
RATE_UNIT = "successful requests/s"
CPU_UNIT = "generator CPU µs per request"


@dataclass(frozen=True)
class AnswerFigure:
    title: str
    svgs: tuple[str, ...]  # one small chart per group, laid out side by side as the page allows
    caption: str
    alt: str


@dataclass(frozen=True)
class Glance:
    question: str
    headline: str  # at most two sentences
    figure: AnswerFigure | None = None
    scorecard: scorecard.Scorecard | None = None
    claims: Section | None = None  # a study's claims checked on the run (toolbench.report.claims_section)


def glance(ctx: Context, claims: Section | None = None) -> Glance:
    """`claims`: when the run carries a study's claims, they open the report, and the headline
    gives their tally before the answer's first sentence."""
    found = _glance(ctx)
    if claims is None:
        return found
    headline = glance_text.join(glance_text.claims_tally(claims), glance_text.first_sentence(found.headline))
    return dataclasses.replace(found, headline=headline, claims=claims)


def _glance(ctx: Context) -> Glance:
    if ctx.several:
        return glance_compare.glance(ctx)
    run = ctx.runs[0]
    asked = answer.question(run)
    question = glance_text.question(run.description) or glance_text.QUESTIONS[asked]
    if asked == "purposes":
        card = scorecard.build(ctx)
        return Glance(question, glance_text.purposes(card, run), scorecard=card)
    if asked == "targets":
        comps = [c for c in ctx.target_comparisons if len(c.entries) > 1]
        return Glance(question, glance_text.targets(comps, run), figure=_targets_figure(ctx, comps))
    ranked = [c for c in ctx.comparisons if len(c.cells) > 1]
    if not ranked:  # nothing to rank: each tool's own cells, so the page still shows what was measured
        alone = [c for c in ctx.comparisons if c.cells]
        return Glance(question, glance_text.alone(alone, run), figure=_alone_figure(ctx, alone))
    return Glance(question, glance_text.tools(ranked, run), figure=_tools_figure(ctx, ranked))


def _interval(e: stats.Estimate | None) -> tuple[float | None, float | None]:
    if e is None or e.noise_pct is None:
        return None, None
    return max(0.0, e.value - e.half_width), e.value + e.half_width


def _tools_figure(ctx: Context, comps: list[Comparison]) -> AnswerFigure | None:
    if not comps:
        return None
    shown = comps[:MAX_GROUPS]
    groups = [_tools_group(ctx, comp) for comp in shown]
    by_cost = sum(comp.by is By.COST for comp in shown)
    more = f" The first {MAX_GROUPS} of {len(comps)} comparisons are drawn; the table has them all." \
        if len(comps) > MAX_GROUPS else ""
    cost = (f" Where the server was the limit ({by_cost} of {len(shown)}), throughput shows the server, so the "
            "tools are drawn by their CPU per request, fewest first.") if by_cost else ""
    caption = ("Each like-for-like comparison (same concurrency, keep-alive and variant): each tool's figure, the "
               "median of its repetitions, with its noise as a bar; best first. The shaded band is the leader's "
               "noise: a tool whose bar reaches it is tied with the leader." + cost + more +
               " A dot links to its row in the like-for-like table.")
    alt = "; ".join(f"{g.title}: " + ", ".join(f"{d.label} {d.tip.split(': ', 1)[-1]}" for d in g.dots)
                    for g in groups)
    return AnswerFigure("Each tool, like for like", tuple(charts.interval_charts("answer", groups, alt)), caption, alt)


def _tools_group(ctx: Context, comp: Comparison) -> charts.DotGroup:
    cost = comp.by is By.COST
    cells = [c for tier in comp.ranking for c in tier] if cost else [c for tier in comp.by_rate for c in tier]
    dots = tuple(_tool_dot(ctx, comp, cell, cost) for cell in cells)
    ranked_by = "" if comp.by is By.THROUGHPUT else (" (by CPU: the server was the limit)" if cost
                                                      else " (not ranked: the server was the limit)")
    return charts.DotGroup(glance_text.short_where(comp) + ranked_by, dots, CPU_UNIT if cost else RATE_UNIT,
                           band=comp.by is not By.NOTHING)


def _tool_dot(ctx: Context, comp: Comparison, cell: Cell, cost: bool) -> charts.Dot:
    figure = cell.cpu if cost else cell.rate
    assert figure is not None  # the cost ranking holds only cells whose cost was measured
    low, high = _interval(figure)
    unit = " µs" if cost else "/s"
    p = cell.point
    return charts.Dot(label=p.key.name, value=figure.value, low=low, high=high, style=ctx.style(p.key),
                      tip=f"{p.key.label}: {glance_text.estimate(figure, unit)}",
                      href=_row_of(ctx, p),
                      note=glance_text.dot_note(p))


def _alone_figure(ctx: Context, comps: list[Comparison]) -> AnswerFigure | None:
    """One group per tool and keep-alive setting: its cells by concurrency, in order."""
    found: dict[str, list[charts.Dot]] = {}
    for comp in sorted(comps, key=lambda c: c.concurrency or 0):
        for cell in comp.cells:
            p = cell.point
            low, high = _interval(cell.rate)
            found.setdefault(p.key.label, []).append(charts.Dot(
                label=f"c{p.concurrency}" + (f", {comp.variant}" if comp.variant else ""), value=cell.rate.value,
                low=low, high=high, style=ctx.style(p.key), tip=f"{p.key.label}, c{p.concurrency}: "
                f"{glance_text.estimate(cell.rate, '/s')}", href=_row_of(ctx, p), note=glance_text.dot_note(p)))
    if not found:
        return None
    groups = [charts.DotGroup(label, tuple(dots), RATE_UNIT, band=False) for label, dots in list(found.items())[
        :MAX_GROUPS]]
    alt = "; ".join(f"{g.title}: " + ", ".join(f"{d.label} {d.value:,.0f}/s" for d in g.dots) for g in groups)
    caption = ("No two tools ran a cell alike, so nothing is ranked: each tool's cells by concurrency, the median "
               "successful requests/s of the repetitions with its noise as a bar.")
    return AnswerFigure("Each tool's cells", tuple(charts.interval_charts("answer", groups, alt)), caption, alt)


def _targets_figure(ctx: Context, comps: list[TargetComparison]) -> AnswerFigure | None:
    if not comps:
        return None
    groups = []
    for comp in comps[:MAX_GROUPS]:
        dots = tuple(charts.Dot(label=e.target, value=e.rate.value, low=_interval(e.rate)[0],
                                high=_interval(e.rate)[1], style=ctx.style(e.point.key),
                                tip=f"{e.target}: {glance_text.estimate(e.rate, '/s')}",
                                href=_row_of(ctx, e.point),
                                note=glance_text.dot_note(e.point))
                     for e in comp.entries)
        groups.append(charts.DotGroup(comp.where, dots, RATE_UNIT))
    alt = "; ".join(f"{g.title}: " + ", ".join(f"{d.label} {d.value:,.0f}/s" for d in g.dots) for g in groups)
    caption = ("Each tool's cells at one concurrency and keep-alive setting, compared across the targets: the "
               "median successful requests/s of the repetitions with its noise as a bar, most first. The shaded "
               "band is the leading target's noise: a target whose bar reaches it is tied with it.")
    return AnswerFigure("Each target, like for like", tuple(charts.interval_charts("answer", groups, alt)),
                        caption, alt)


def _row_of(ctx: Context, point: Point) -> str:
    """The like-for-like table's row of a point: the comparison it sits in names the row."""
    for comp in ctx.comparisons:
        if any(cell.point is point for cell in comp.cells):
            return "#" + anchors.point(point.key.run, point.key.label, comp.where)
    return ""
