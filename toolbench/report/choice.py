"""Which tool for which purpose: the tools of a run ranked on the four questions a team
choosing a load tool asks, each from the run's own figures, and one paragraph, made from
those rankings, saying which tool to use for what.

- cost per request: the generator's CPU µs per request, in the closed-model, keep-alive-on
  cells at the one concurrency most tools ran (like with like);
- peak throughput: each tool's best successful requests/s over its closed-model cells;
- latency truth: in how many of its cells the tool's median agreed with toolbench's probe;
- open-model accuracy: how far the rate a tool sent was from the rate asked for.

Ties: two figures tie when they do not differ beyond the noise of both (toolbench.record.stats.differs);
shares of cells tie within 5 points, rate errors within ACCURACY_TIE_PP percentage points."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from toolbench.contract.adapter import PROTOCOL_NAMES
from toolbench.record import stats
from toolbench.record.schema import LoadModel, Status
from toolbench.report import fmt, likewise, protocol_fit
from toolbench.report.context import Context
from toolbench.report.groups import Point
from toolbench.report.truth import Verdict, cell_truth
from toolbench.report.view import Column, Row, Section, Table, Value, num, text

ACCURACY_TIE_PP = 1.0  # rate errors closer than one percentage point are the same accuracy
CHECKED = (Verdict.AGREES, Verdict.LOWER, Verdict.HIGHER, Verdict.SUB_RESOLUTION, Verdict.NO_LATENCY)


@dataclass(frozen=True)
class Entry:
    tool: str
    figure: stats.Estimate
    shown: str  # the figure as the paragraph says it


@dataclass(frozen=True)
class Ranking:
    question: str  # the column's name
    headline: str  # the leaders' title in the paragraph
    purpose: str  # what a tool leading this ranking is the one to use for
    basis: str  # which cells the figures come from
    margin: str  # how far apart two figures must be not to tie
    absent: str  # said when no tool has the figure
    tiers: tuple[tuple[Entry, ...], ...]  # best first; a tier is a tie

    def place(self, tool: str) -> str:
        for i, tier in enumerate(self.tiers):
            if any(e.tool == tool for e in tier):
                first = 1 + sum(len(t) for t in self.tiers[:i])
                return f"{first}=" if len(tier) > 1 else str(first)
        return fmt.ABSENT

    def entry(self, tool: str) -> Entry | None:
        return next((e for tier in self.tiers for e in tier if e.tool == tool), None)


def _closed(p: Point) -> bool:
    return bool(p.ok) and all(r.identity.model is LoadModel.CLOSED for r in p.ok)


def _open(p: Point) -> bool:
    return bool(p.ok) and all(r.identity.model is LoadModel.OPEN and r.identity.rate_rps for r in p.ok)


def _where(p: Point) -> str:
    return f"c{p.concurrency}, keep-alive {p.key.keepalive_text}"


def _cost(points: list[Point]) -> Ranking:
    ka = [p for p in points if _closed(p) and p.key.keepalive is not False and likewise.cpu_estimate(p)]
    by_c = Counter(p.concurrency for p in ka)
    chosen = max(by_c, key=lambda c: (by_c[c], c or 0)) if by_c else None
    entries = []
    for p in ka:
        cpu = likewise.cpu_estimate(p)
        if p.concurrency == chosen and cpu is not None:
            entries.append(Entry(p.key.tool, cpu, f"{fmt.number(cpu.value)} µs"))
    basis = f"closed model at concurrency {chosen}, keep-alive on" if chosen else "no closed-model cell with its cost"
    basis = f"per request, {basis}"
    return Ranking("CPU µs / request", "Cheapest per request (the generator's CPU ",
                   "to load a server from the fewest generator cores", basis, "the noise",
                   "No closed-model, keep-alive-on cell measured the generator's CPU.",
                   likewise.tiers(entries, lambda e: e.figure, most_first=False, name=lambda e: e.tool))


def _peak(points: list[Point]) -> Ranking:
    best: dict[str, Point] = {}
    for p in points:
        if _closed(p) and p.rate is not None:
            if p.key.tool not in best or p.rate.value > best[p.key.tool].rate.value:  # type: ignore[union-attr]
                best[p.key.tool] = p
    entries = [Entry(tool, p.rate, f"{fmt.number(p.rate.value)}/s at {_where(p)}"  # type: ignore[arg-type]
                     + (", where the server set the pace" if cell_truth(p).server_bound else ""))
               for tool, p in best.items() if p.rate is not None]
    return Ranking("peak ok req/s", "Most successful requests/s (", "to find a server's ceiling",
                   "each tool's best closed-model cell", "the noise", "No closed-model cell finished ok.",
                   likewise.tiers(entries, lambda e: e.figure, most_first=True, name=lambda e: e.tool))


def _truth(points: list[Point]) -> Ranking:
    checks: dict[str, list[Verdict]] = {}
    for p in points:
        if p.ok:
            checks.setdefault(p.key.tool, []).append(cell_truth(p).by_probe.verdict)
    entries = []
    for tool, verdicts in checks.items():
        checked = [v for v in verdicts if v in CHECKED]
        if checked:
            agree = sum(v is Verdict.AGREES for v in checked)
            entries.append(Entry(tool, stats.Estimate(100.0 * agree / len(checked), 0.0),
                                 f"{agree} of {len(checked)} cell{'s' if len(checked) > 1 else ''}"))
    return Ranking("probe agrees", "Latency that agrees with toolbench's probe (",
                   "when the latency it prints must be right",
                   "every cell that finished ok, the tool's median against the probe's",
                   f"{stats.MIN_DIFFERENCE_PCT:g} points", "No cell was checked against the probe.",
                   _tiers_within(entries, most_first=True, within=stats.MIN_DIFFERENCE_PCT, absolute=True))


def _accuracy(points: list[Point]) -> Ranking:
    errors: dict[str, list[float]] = {}
    asked: set[float] = set()
    for p in points:
        if not _open(p):
            continue
        for r in p.ok:
            sent = stats.attempted(r)
            if sent is not None and r.identity.rate_rps:
                asked.add(r.identity.rate_rps)
                errors.setdefault(p.key.tool, []).append((sent / r.identity.rate_rps - 1.0) * 100.0)
    entries = []
    for tool, values in errors.items():
        signed = stats.estimate(values)
        if signed is not None:
            off = stats.estimate([abs(v) for v in values])
            assert off is not None
            entries.append(Entry(tool, off, f"{signed.value:+.1f} %"))
    rates = " and ".join(f"{fmt.number(a)}/s" for a in sorted(asked)) or "no rate"
    return Ranking("rate error", "Closest to the rate asked (", "to hold a fixed arrival rate (open model)",
                   f"the open-model cells at {rates}: the rate sent against the rate asked",
                   f"the noise or {ACCURACY_TIE_PP:g} point",
                   "No open-model cell ran (`matrix.rate`), so no tool is ranked on holding a rate.",
                   _tiers_within(entries, most_first=False, within=ACCURACY_TIE_PP, absolute=True))


def _tiers_within(entries: list[Entry], most_first: bool, within: float,
                  absolute: bool = False) -> tuple[tuple[Entry, ...], ...]:
    """Entries in order, a tier holding those within `within` (points, or percent of the
    larger) of its first, or within the noise of both."""
    ordered = sorted(entries, key=lambda e: (e.figure.value, e.tool), reverse=most_first)
    out: list[list[Entry]] = []
    for e in ordered:
        if out:
            first = out[-1][0].figure
            gap = abs(first.value - e.figure.value)
            slack = within if absolute else within / 100.0 * max(abs(first.value), abs(e.figure.value))
            if gap <= max(slack, first.half_width + e.figure.half_width if first.noise_pct else 0.0):
                out[-1].append(e)
                continue
        out.append([e])
    return tuple(tuple(t) for t in out)


def rankings(ctx: Context) -> list[Ranking]:
    """Like with like: in a run of several protocols, each ranking is made in one of them
    (plain HTTP/1.1, which every tool speaks, when the run has it); `protocol_fit` says the rest."""
    return [make(_in_one_protocol(ctx.points)) for make in (_cost, _peak, _truth, _accuracy)]


def _in_one_protocol(points: list[Point]) -> list[Point]:
    protocols = [p for p in PROTOCOL_NAMES if any(q.key.protocol == p and q.ok for q in points)]
    return [q for q in points if q.key.protocol == protocols[0]] if len(protocols) > 1 else points


def _protocol_said(ctx: Context) -> str:
    protocols = {r.identity.protocol for _, r in ctx.results}
    if len(protocols) < 2:
        return ""
    shown = {q.key.protocol for q in _in_one_protocol(ctx.points)}
    ranked = ", ".join(PROTOCOL_NAMES[p] for p in PROTOCOL_NAMES if p in shown)
    return f"The rankings compare the {ranked} cells. " + protocol_fit.paragraph([r for _, r in ctx.results])


def _names(entries: tuple[Entry, ...], shown: bool = True) -> str:
    parts = [f"{e.tool} ({e.shown})" if shown else e.tool for e in entries]
    return parts[0] if len(parts) == 1 else f"{', '.join(parts[:-1])} and {parts[-1]}"


def _sentence(r: Ranking) -> str:
    """One ranking in words: its leaders (a tie said as a tie) and the next tier."""
    if not r.tiers:
        return r.absent
    title = f"{r.headline}{r.basis})"
    lead = r.tiers[0]
    said = f"{title}: {_names(lead)}" + (f", a tie within {r.margin}" if len(lead) > 1 else "")
    if len(r.tiers) > 1:
        rest = sum(len(t) for t in r.tiers[2:])
        said += f", ahead of {_names(r.tiers[1])} by more than {r.margin}" + (f" (then {rest} more)" if rest else "")
    elif len(lead) == 1:
        said += ", the only tool measured"
    return said + "."


def skipped(ctx: Context) -> dict[str, str]:
    """Tools none of whose cells ran, with the reason: not installed, when a cell says so."""
    out: dict[str, str] = {}
    ran = {r.identity.label for _, r in ctx.results
           if r.outcome.status not in (Status.UNSUPPORTED, Status.TOOL_MISSING, Status.DISTURBED)}
    for _, r in ctx.results:
        why = ("disturbed by other work on the machine" if r.outcome.status is Status.DISTURBED
               else (r.outcome.error or r.outcome.status.value).split(":")[0])
        missing = r.outcome.status is Status.TOOL_MISSING or why.startswith("skipped, not installed")
        if r.identity.label not in ran and (r.identity.label not in out or missing):
            out[r.identity.label] = "not installed" if missing else why
    return out


def paragraph(ranked: list[Ranking], left_out: dict[str, str]) -> str:
    """Which tool to use for which purpose, in one paragraph, from the rankings alone."""
    said = [_sentence(r) for r in ranked]
    uses = [f"{_names(r.tiers[0], shown=False).replace(' and ', ' or ')} {r.purpose}" for r in ranked if r.tiers]
    if uses:
        said.append(f"So: use {'; '.join(uses)}.")
    if left_out:
        said.append("Not measured here: " + ", ".join(f"{tool} ({why})" for tool, why in sorted(left_out.items()))
                    + ".")
    return " ".join(said)


def choice_section(ctx: Context) -> Section | None:
    """Shown when a run compares two tools or more."""
    if len({p.key.tool for p in ctx.points if p.ok}) < 2 or ctx.several:
        return None
    ranked = rankings(ctx)
    tools = sorted({p.key.tool for p in ctx.points if p.ok})
    cols = [Column("tool")]
    for r in ranked:
        cols += [Column(r.question, True, r.basis), Column("rank", title=f"{r.question}: 1 is best, = a tie")]
    rows = tuple(Row((text(tool),) + tuple(v for r in ranked for v in _cells(r, tool))) for tool in tools)
    intro = " ".join(part for part in (paragraph(ranked, skipped(ctx)), _protocol_said(ctx)) if part)
    return Section("choice", "Which tool for which purpose", intro=intro,
                   tables=(Table(tuple(cols), rows),))


def _cells(r: Ranking, tool: str) -> tuple[Value, Value]:
    e = r.entry(tool)
    return (num(e.shown if e else fmt.ABSENT, e.figure.value if e else None), text(r.place(tool)))
