"""The purpose scorecard at the top of a choose-a-tool report: tools × purposes, each cell the
tool's rank and figure on that purpose (toolbench.report.choice's rankings), ties shaded as
ties. Best tools first: most first places, then the lowest ranks on average."""
from __future__ import annotations

from dataclasses import dataclass

from toolbench.report import choice, fmt
from toolbench.report.context import Context


@dataclass(frozen=True)
class Purpose:
    question: str  # the column's heading: the figure ranked
    purpose: str  # what the leader of this column is the tool for
    basis: str  # which cells the figures come from


@dataclass(frozen=True)
class ScoreCell:
    rank: str  # "1", "2=" (a tie), or the absent mark
    figure: str  # the figure as the rankings say it, or the absent mark
    tier: int | None  # 0 for the first tier; None when the tool is not ranked on this purpose
    tied: bool  # shares its tier with another tool

    @property
    def shade(self) -> str:
        """A class for the cell's shading: the first tiers darkest; ties also get a dashed edge."""
        if self.tier is None:
            return "none"
        return f"t{min(self.tier, 3)}" + (" tie" if self.tied else "")


@dataclass(frozen=True)
class ScoreRow:
    tool: str
    cells: tuple[ScoreCell, ...]


@dataclass(frozen=True)
class Scorecard:
    purposes: tuple[Purpose, ...]
    rows: tuple[ScoreRow, ...]
    uses: tuple[str, ...]  # "wrk to find a server's ceiling", one per ranked purpose
    not_measured: tuple[str, ...]  # "locust (not installed)"
    caption: str


def _cell(r: choice.Ranking, tool: str) -> ScoreCell:
    for i, tier in enumerate(r.tiers):
        entry = next((e for e in tier if e.tool == tool), None)
        if entry is not None:
            return ScoreCell(r.place(tool), entry.shown, i, len(tier) > 1)
    return ScoreCell(fmt.ABSENT, fmt.ABSENT, None, False)


def _order(row: ScoreRow) -> tuple[int, int, float, str]:
    """Most first places, then ranked on the most purposes, then the best ranks on average."""
    tiers = [c.tier for c in row.cells if c.tier is not None]
    firsts = sum(t == 0 for t in tiers)
    mean = sum(tiers) / len(tiers) if tiers else float("inf")
    return -firsts, -len(tiers), mean, row.tool


def _names(tools: tuple[str, ...]) -> str:
    return tools[0] if len(tools) == 1 else f"{', '.join(tools[:-1])} or {tools[-1]}"


def build(ctx: Context) -> Scorecard:
    ranked = choice.rankings(ctx)
    tools = sorted({p.key.tool for p in ctx.points if p.ok})
    rows = sorted((ScoreRow(tool, tuple(_cell(r, tool) for r in ranked)) for tool in tools), key=_order)
    uses = tuple(f"{_names(tuple(e.tool for e in r.tiers[0]))} {r.purpose}" for r in ranked if r.tiers)
    skipped = choice.skipped(ctx)
    not_measured = tuple(f"{tool} ({why})" for tool, why in sorted(skipped.items()) if tool not in tools)
    caption = ("Each tool's rank on each purpose (1 is best; “=” a tie within the noise, shaded alike) and the "
               "figure ranked: " + "; ".join(f"{r.question}: {r.basis}" for r in ranked) + "."
               + (f" Not measured here: {', '.join(not_measured)}." if not_measured else ""))
    return Scorecard(tuple(Purpose(r.question, r.purpose, r.basis) for r in ranked), tuple(rows), uses,
                     not_measured, caption)
