"""Several runs side by side (one scenario on two dates, or two scenarios), with the
differences against the first run given, and which of them are beyond the noise of both."""
from __future__ import annotations

from toolbench.record import stats
from toolbench.record.manifest import Manifest
from toolbench.report import fmt, groups, likewise
from toolbench.report.context import Context, RunView
from toolbench.report.environment import ended
from toolbench.report.view import Column, Link, Row, Section, Table, Value, num, text

BEYOND = "beyond the noise"


def labels(runs: list[tuple[str, Manifest]]) -> list[str]:
    """Short, distinct names for runs: the scenario when they differ, else the date, else the folder."""
    def scenario(m: Manifest) -> str:
        return m.scenario.name

    def date(m: Manifest) -> str:
        return fmt.when(m.started_at or "").removesuffix(" UTC")

    for make in (lambda n, m: scenario(m), lambda n, m: date(m), lambda n, m: f"{scenario(m)} {date(m)}".strip(),
                 lambda n, m: n):
        names = [make(name, manifest) for name, manifest in runs]
        if all(names) and len(set(names)) == len(names):
            return names
    return [f"{i + 1}: {name}" for i, (name, _) in enumerate(runs)]


def compare_section(ctx: Context) -> Section:
    base = ctx.runs[0]
    tables = (_runs_table(ctx), _peaks_table(ctx), _cells_table(ctx))
    intro = (f"{len(ctx.runs)} runs side by side. Changes are relative to the first, “{base.label}”: "
             "+ means more than there. A change is marked “!” when it is beyond the noise of both runs (the same "
             "rule as the verdict's ties); cells are matched by tool, keep-alive, concurrency, protocol, variant and "
             "stop.")
    return Section("compare", "Differences between runs", intro=intro,
                   tables=tuple(t for t in tables if t.rows), points=tuple(_conclusions(ctx)))


def _runs_table(ctx: Context) -> Table:
    rows = []
    for run in ctx.runs:
        mine = [s for s in ctx.series if s.key.run == run.label and s.rps is not None]
        best = max(mine, key=lambda s: s.rps or 0.0) if mine else None
        headline = f"{best.key.name} {fmt.number(best.rps)}/s" if best else fmt.ABSENT
        rows.append(Row((Value(run.label, links=(Link(run.name, run.link("")),)), text(run.scenario),
                         text(fmt.when(run.started_at)), text(ended(run)), text(run.stop or fmt.ABSENT),
                         text(headline))))
    cols = (Column("run"), Column("scenario"), Column("started"), Column("ended"), Column("stop"),
            Column("highest ok rate", title="the highest peak of successful requests/s; not a like-for-like ranking"))
    return Table(cols, tuple(rows), caption="The runs")


def matched(ctx: Context, key: object) -> dict[object, dict[str, groups.Point]]:
    out: dict[object, dict[str, groups.Point]] = {}
    for p in ctx.points:
        out.setdefault(key(p), {})[p.key.run] = p  # type: ignore[operator]
    return out


def _peaks_table(ctx: Context) -> Table:
    base = ctx.runs[0].label
    by_run: dict[tuple[str, str, bool | None, str], dict[str, groups.Series]] = {}
    for s in ctx.series:
        by_run.setdefault((s.key.tool, s.key.variant, s.key.keepalive, s.key.protocol), {})[s.key.run] = s
    rows = []
    for (_, _, keepalive, _), found in by_run.items():
        values = [text(next(iter(found.values())).key.name), text(fmt.yes_no(keepalive))]
        for run in ctx.runs:
            peak = found.get(run.label)
            best = peak.best if peak else None
            where = f" (c {fmt.number(peak.concurrency)})" if peak and peak.rps is not None else ""
            values.append(num(fmt.number(peak.rps if peak else None) + where, peak.rps if peak else None))
            if run.label != base:
                old = found[base].best if base in found else None
                values.append(_delta(best, old, same_place=bool(best and old and best.concurrency == old.concurrency)))
        rows.append(Row(tuple(values)))
    return Table(_run_columns(ctx, ["tool", "keep-alive"], "peak ok req/s"), tuple(rows),
                 caption="Peak successful throughput per tool and keep-alive setting")


def cell_key(p: groups.Point) -> tuple[str, str, bool | None, str, int | None]:
    return p.key.tool, p.key.variant, p.key.keepalive, p.key.protocol, p.concurrency


def _cells_table(ctx: Context) -> Table:
    """Cells present in at least two runs, matched by tool, variant, keep-alive, protocol and concurrency."""
    base = ctx.runs[0].label
    rows = []
    for (_, _, keepalive, _, c), pts in matched(ctx, cell_key).items():  # type: ignore[misc]
        if len(pts) < 2:
            continue
        values = [text(next(iter(pts.values())).key.name), text(fmt.yes_no(keepalive)), num(fmt.number(c), c)]
        for run in ctx.runs:
            rate = pts[run.label].rate if run.label in pts else None
            values.append(num(_with_noise(rate), rate.value if rate else None))
            if run.label != base:
                values.append(_delta(pts.get(run.label), pts.get(base), same_place=_same_stop(ctx, base, run.label)))
        rows.append(Row(tuple(values)))
    return Table(_run_columns(ctx, ["tool", "keep-alive", "concurrency"], "ok req/s"), tuple(rows),
                 caption="The same cell in several runs (median successful req/s, with its noise)")


def _with_noise(rate: stats.Estimate | None) -> str:
    if rate is None:
        return fmt.ABSENT
    return fmt.number(rate.value) + (f" ±{rate.noise_pct:.0f} %" if rate.noise_pct is not None else "")


def _run_columns(ctx: Context, first: list[str], metric: str) -> tuple[Column, ...]:
    cols = [Column(name, numeric=name == "concurrency") for name in first]
    for i, run in enumerate(ctx.runs):
        cols.append(Column(f"{metric}: {run.label}", True))
        if i:
            cols.append(Column(f"Δ {run.label}", True, title=f"change from {ctx.runs[0].label}; ! beyond the noise "
                               "of both runs"))
    return tuple(cols)


def _same_stop(ctx: Context, a: str, b: str) -> bool:
    stops = {run.label: run.stop for run in ctx.runs}
    return stops.get(a) == stops.get(b)


def _delta(new: groups.Point | None, old: groups.Point | None, same_place: bool) -> Value:
    a, b = (new.rate if new else None), (old.rate if old else None)
    shown = fmt.change(a.value if a else None, b.value if b else None)
    value = (a.value - b.value) / b.value * 100.0 if a and b and b.value else None
    beyond = bool(a and b and same_place and stats.differs(a, b))
    return num(shown if same_place or value is None else f"{shown} (not like for like)", value,
               flag=BEYOND if beyond else "")


def _changes(ctx: Context, base: RunView, run: RunView) -> tuple[list[str], int]:
    """The cells of both runs that changed beyond the noise of both, and how many were matched."""
    beyond, shared = [], 0
    for (_, _, keepalive, _, c), pts in matched(ctx, cell_key).items():  # type: ignore[misc]
        old, new = pts.get(base.label), pts.get(run.label)
        if not (old and new and old.rate and new.rate):
            continue
        shared += 1
        if stats.differs(new.rate, old.rate):
            change = fmt.change(new.rate.value, old.rate.value)
            beyond.append(f"{new.key.name} at c {fmt.number(c)}, keep-alive {fmt.yes_no(keepalive)} "
                          f"{change} (noise {_noise(old.rate)} and {_noise(new.rate)})")
    return beyond, shared


def _noise(rate: stats.Estimate) -> str:
    return f"±{rate.noise_pct:.0f} %" if rate.noise_pct is not None else "not measured"


def _conclusions(ctx: Context) -> list[str]:
    """One combined conclusion per run against the first: which cells changed beyond the
    noise of both runs, and whether the two verdicts rank any tools in opposite orders."""
    base = ctx.runs[0]
    comps = ctx.comparisons
    out = []
    for run in ctx.runs[1:]:
        if base.stop != run.stop:
            out.append(f"“{base.label}” and “{run.label}” stopped their cells differently "
                       f"({base.stop or 'unknown'} against {run.stop or 'unknown'}): their cells are not like for "
                       "like, so no change is called.")
            continue
        beyond, matched = _changes(ctx, base, run)
        if not matched:
            out.append(f"“{base.label}” and “{run.label}” share no finished cell to compare.")
            continue
        shown = "; ".join(beyond[:6]) + (f"; and {len(beyond) - 6} more" if len(beyond) > 6 else "")
        rest = matched - len(beyond)
        changed = (f"{len(beyond)} of {matched} cells in both runs changed beyond the noise of both: {shown}"
                   + (f"; the other {rest} {'is' if rest == 1 else 'are'} within the noise" if rest else "")
                   if beyond else
                   "the one cell in both runs is within the noise of both" if matched == 1 else
                   f"all {matched} cells in both runs are within the noise of both")
        clash = likewise.contradictions([c for c in comps if c.run == base.label],
                                        [c for c in comps if c.run == run.label])
        verdicts = (f"the verdicts rank tools in opposite orders in {len(clash)} like-for-like comparisons "
                    f"({'; '.join(clash[:3])})" if clash else
                    "no like-for-like comparison ranks two tools in opposite orders")
        out.append(f"From “{base.label}” to “{run.label}”: {changed}; {verdicts}.")
    return out
