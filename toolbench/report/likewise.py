"""Like with like: tools are ranked only against cells of the same run with the same
keep-alive setting, concurrency, protocol and variant (extra parameters, open-model rate,
target); a run has one stop for every cell. Each ranking comes in tiers: the cells of a tier are
the same within the noise (toolbench.record.stats.differs), and every tier is beyond the noise
of the next.

Throughput (successful requests/s) ranks the tools unless the server was the limit of the
leading cells: then throughput shows the server, not the tools, and they are ranked by the
CPU they spent per request instead."""
from __future__ import annotations

import enum
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Sequence, TypeVar

from toolbench.record import stats
from toolbench.report import bounds, fmt
from toolbench.report.context import Context
from toolbench.report.cost import cpu_us_per_request
from toolbench.report.groups import Point
from toolbench.report.truth import CellTruth, cell_truth


class By(str, enum.Enum):
    THROUGHPUT = "throughput"
    COST = "CPU per request"
    NOTHING = "nothing"  # the server was the limit and the tools' cost was not measured


@dataclass(frozen=True)
class Cell:
    point: Point
    rate: stats.Estimate  # successful requests/s, with its noise
    cpu: stats.Estimate | None  # the generator's CPU µs per request, with its noise
    limit: bounds.Limit
    truth: CellTruth

    @property
    def tool(self) -> str:
        return self.point.key.tool


Tiers = tuple[tuple[Cell, ...], ...]
T = TypeVar("T")


@dataclass(frozen=True)
class Comparison:
    run: str
    variant: str
    keepalive: bool | None
    concurrency: int | None
    cells: tuple[Cell, ...]  # the cells that finished ok with a successful rate
    by_rate: Tiers  # most first
    by_cost: Tiers  # cheapest first; cells whose cost was not measured are left out
    protocol: str = "http1"
    protocol_shown: str = ""  # its name where the report has several protocols ("HTTP/2 over TLS")

    @property
    def server_limited(self) -> bool:
        """The leading cells all hit the server's limit: several tie at it, or every cell did."""
        top = self.by_rate[0]
        return all(c.limit.bound.server for c in top) and (len(top) > 1 or all(c.limit.bound.server
                                                                            for c in self.cells))

    @property
    def by(self) -> By:
        if not self.server_limited:
            return By.THROUGHPUT
        return By.COST if sum(len(t) for t in self.by_cost) >= 2 else By.NOTHING

    @property
    def ranking(self) -> Tiers:
        return self.by_cost if self.by is By.COST else self.by_rate

    @property
    def winner(self) -> str | None:
        """The tool alone in the first tier of the ranking used; None for a tie or no ranking."""
        return None if self.by is By.NOTHING else leader(self.ranking)

    @property
    def where(self) -> str:
        # The variant last: "at concurrency 10, keep-alive on, on nginx" reads where "at on nginx, ..." does not.
        variant = f", {self.variant}" if self.variant else ""
        protocol = f", {self.protocol_shown}" if self.protocol_shown else ""
        return (f"concurrency {fmt.number(self.concurrency)}, keep-alive {fmt.yes_no(self.keepalive)}{protocol}"
                f"{variant}")

    def order(self, tool: str) -> int | None:
        """The tier of a tool in the ranking used, 0 first; None when it is not ranked."""
        return next((i for i, tier in enumerate(self.ranking) for c in tier if c.tool == tool), None)


def leader(ranking: Tiers) -> str | None:
    """The tool alone in the first tier, when at least two cells were ranked; else None."""
    if sum(len(t) for t in ranking) < 2 or len(ranking[0]) > 1:
        return None
    return ranking[0][0].tool


def tiers(cells: Sequence[T], get: Callable[[T], stats.Estimate | None], most_first: bool,
          name: Callable[[T], str] = lambda c: c.tool) -> tuple[tuple[T, ...], ...]:  # type: ignore[attr-defined]
    """Cells in order, grouped: a cell joins the tier of the one before it when it does not
    differ, beyond the noise, from that tier's first cell. `name` breaks exact ties."""
    rated = sorted((c for c in cells if get(c) is not None),
                   key=lambda c: (get(c).value, name(c)), reverse=most_first)  # type: ignore[union-attr]
    out: list[list[T]] = []
    for cell in rated:
        if out and not stats.differs(get(out[-1][0]), get(cell)):  # type: ignore[arg-type]
            out[-1].append(cell)
        else:
            out.append([cell])
    return tuple(tuple(t) for t in out)


def cpu_estimate(point: Point) -> stats.Estimate | None:
    return stats.estimate([v for r in point.ok if (v := cpu_us_per_request(r)[0]) is not None])


def judged(point: Point, host_cores: int | None) -> Cell | None:
    rate = point.rate
    if rate is None:
        return None
    return Cell(point, rate, cpu_estimate(point), bounds.limit_of(point, host_cores), cell_truth(point))


def comparisons(ctx: Context) -> list[Comparison]:
    """Every like-for-like group of cells that finished ok, in plan order; a group of one
    cell is kept (a tool alone at its concurrency), so that nothing measured is left out."""
    cores = {run.label: run.cpu_count for run in ctx.runs}
    groups: dict[tuple[str, str, bool | None, str, int | None], list[Cell]] = defaultdict(list)
    for p in ctx.points:
        cell = judged(p, cores.get(p.key.run))
        if cell is not None:
            groups[(p.key.run, p.key.variant, p.key.keepalive, p.key.protocol, p.concurrency)].append(cell)
    return [Comparison(run, variant, keepalive, concurrency, tuple(cells),
                       by_rate=tiers(cells, lambda c: c.rate, most_first=True),
                       by_cost=tiers(cells, lambda c: c.cpu, most_first=False),
                       protocol=protocol, protocol_shown=cells[0].point.key.protocol_shown)
            for (run, variant, keepalive, protocol, concurrency), cells in groups.items()]


def contradictions(a: list[Comparison], b: list[Comparison]) -> list[str]:
    """Where two runs of one scenario rank two tools in opposite orders, beyond the noise of
    both, by the same measure, in the same like-for-like cell. A tie against a win is no
    contradiction: one run could not tell what the other could."""
    theirs = {(c.variant, c.keepalive, c.protocol, c.concurrency): c for c in b}
    found = []
    for mine in a:
        other = theirs.get((mine.variant, mine.keepalive, mine.protocol, mine.concurrency))
        if other is None or other.by is not mine.by or mine.by is By.NOTHING:
            continue
        tools = sorted({c.tool for c in mine.cells} & {c.tool for c in other.cells})
        for i, x in enumerate(tools):
            for y in tools[i + 1:]:
                ox, oy, px, py = mine.order(x), mine.order(y), other.order(x), other.order(y)
                if None in (ox, oy, px, py) or ox == oy or px == py:
                    continue
                if (ox < oy) != (px < py):  # type: ignore[operator]
                    found.append(f"{mine.where}: {x} and {y} ranked in opposite orders by {mine.by.value}")
    return found
