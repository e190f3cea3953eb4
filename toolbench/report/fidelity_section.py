"""Fidelity to the workload (issue 32): per cell, how closely what reached the target (its own access
log: RunResult.target_requests) matched what the workload asked, judged as toolbench.report.fidelity
states: the mix, the tool's counts against the target's, the pace the think time allows, the stages
(a chart per cell: requests/s over time against the asked shape), and the failed checks per request.
One sentence per cell; then the tools planned unsupported, with why, and those approximated, with
how. Shown only for runs whose scenario has a workload."""
from __future__ import annotations

from toolbench.record.schema import RunResult, Status
from toolbench.report import anchors, charts, fmt
from toolbench.report.context import Context, RunView
from toolbench.report.fidelity import (HOLD_TOLERANCE_PCT, MAX_SHIFT_S, MIX_TOLERANCE_PP, PACE_TOLERANCE_PCT,
                                       RAMP_MEAN_MIN_S, RAMP_TOLERANCE_PCT, CellFit,
                                       NameFit, Shape, cell_fit)
from toolbench.report.groups import NOT_RUN
from toolbench.report.view import Column, Figure, Link, Row, Section, Table, Value, num, text
from toolbench.report.workload_source import of_run
from toolbench.scenario.workload import Workload

INTRO = ("What reached the target, from its own access log (nginx's, per method, path and second; toolbench's "
         "probe's requests left out), against what the workload asked. The mix: each request's share of the "
         "requests logged for the workload's paths against the asked share (a sequence: equal; a mix: weight over "
         f"the weights' sum), within the larger of {MIX_TOLERANCE_PP:g} points and what the cell itself explains: "
         "one request per user in flight at the stop (100 × users / logged points), and for a random mix 3 "
         "standard errors of the draw (300 × √(p(1−p)/logged) points). The counts: the tool's own count per "
         "name against the target's, which may differ by the requests in flight at the stop, at most one per "
         "user. The pace: the requests each user sent per second (logged requests over the asked user-seconds) "
         f"against what the think time allows, 1 / (think mean + the tool's mean latency), within "
         f"{PACE_TOLERANCE_PCT:g} %. The stages: requests/s per second against the asked users scaled by the "
         f"achieved rate per user, shifted by the whole seconds (at most {MAX_SHIFT_S}) the tool took to start; a "
         f"ramp must rise or fall (a ramp down of {RAMP_MEAN_MIN_S} s or more falling, against the level held before it, within {RAMP_TOLERANCE_PCT:g} % of as asked), a hold stay within "
         f"{HOLD_TOLERANCE_PCT:g} % of its level. A dash: not measured.")
WORDS = {True: "yes", False: "no", None: fmt.ABSENT}


def fidelity_section(ctx: Context) -> Section | None:
    """None when no run of the report has a workload."""
    runs = [(run, w) for run in ctx.runs if (w := of_run(run)) is not None]
    if not runs:
        return None
    fits: list[tuple[RunView, CellFit]] = []
    unread: list[str] = []
    for run, workload in runs:
        for r in run.results:
            if r.outcome.status in NOT_RUN:
                continue
            fit = cell_fit(workload, r)
            if fit is None:
                unread.append(f"{_who(r)}: the target's access log was not read for this cell (a target toolbench "
                              "did not start here, or a run made before it was kept): no fidelity to judge.")
            else:
                fits.append((run, fit))
    tables = (_names_table(ctx, fits), _cells_table(ctx, fits)) if fits else ()
    figures = tuple(_figure(ctx, run, fit) for run, fit in fits if fit.shape is not None)
    points = tuple(sentence(fit) for _, fit in fits) + tuple(unread) + tuple(_plan_points(ctx, runs))
    return Section("fidelity", "Fidelity to the workload", intro=INTRO, tables=tables, figures=figures,
                   points=points, absent="" if fits else "No cell of the workload ran with the target's log read.")


def _who(r: RunResult) -> str:
    return f"{r.identity.label} ({r.identity.cell_id})"


def _link(run: RunView, r: RunResult) -> Value:
    return Value("", links=(Link(r.identity.cell_id, "#" + anchors.cell(run.label, r.identity.cell_id)),))


def _names_table(ctx: Context, fits: list[tuple[RunView, CellFit]]) -> Table:
    cols = ([Column("run")] if ctx.several else []) + [
        Column("tool"), Column("cell"), Column("request"), Column("asked %", True), Column("logged %", True),
        Column("Δ points", True, "logged share minus asked share"),
        Column("within", title="the difference within the tolerance (next column)"),
        Column("tolerance", True, "points: the larger of the fixed tolerance and what the cell explains"),
        Column("tool counted", True), Column("target logged", True),
        Column("Δ count", True, "the tool's count minus the target's; in flight at the stop: at most the users"),
        Column("failed checks", True, "as the tool counted them for this name")]
    rows = []
    for run, fit in fits:
        for n in fit.names:
            rows.append(Row(tuple(([text(run.label)] if ctx.several else []) + [
                text(fit.result.identity.label), _link(run, fit.result), text(n.name),
                num(f"{n.asked_pct:.1f}", n.asked_pct), _pct(n.logged_pct), _signed(n.diff_pp),
                text(WORDS[n.share_ok]), _pct(n.tolerance_pp),
                num(fmt.number(n.counted), n.counted), num(fmt.number(n.logged), n.logged),
                num(_count(n.count_diff), n.count_diff),
                num(fmt.number(n.failed_checks), n.failed_checks)]), bad=n.share_ok is False))
    return Table(tuple(cols), tuple(rows), caption="The mix and the counts, per request")


def _count(diff: int | None) -> str:
    return fmt.ABSENT if diff is None else (f"{diff:+,d}" if diff else "0")


def _pct(value: float | None) -> Value:
    return num(fmt.ABSENT if value is None else f"{value:.1f}", value)


def _signed(value: float | None) -> Value:
    return num(fmt.ABSENT if value is None else f"{value:+.1f}", value)


def _cells_table(ctx: Context, fits: list[tuple[RunView, CellFit]]) -> Table:
    cols = ([Column("run")] if ctx.several else []) + [
        Column("tool"), Column("cell"), Column("users", True),
        Column("logged", True, "requests to the workload's paths"),
        Column("mix within", title="every request's share within its tolerance"),
        Column("counts within", title="every name's count within the users of the target's"),
        Column("req/s per user", True, "achieved: logged requests over the asked user-seconds"),
        Column("think allows", True, "1 / (think mean + mean latency)"), Column("pace within"),
        Column("stages followed")]
    rows = []
    for run, fit in fits:
        pace = fit.pace
        rows.append(Row(tuple(([text(run.label)] if ctx.several else []) + [
            text(fit.result.identity.label), _link(run, fit.result), num(fmt.number(fit.users), fit.users),
            num(fmt.number(fit.logged), fit.logged), text(WORDS[fit.mix_ok]), text(WORDS[fit.counts_ok]),
            num(fmt.number(pace.achieved) if pace else fmt.ABSENT, pace.achieved if pace else None, derived=True),
            num(fmt.number(pace.allowed) if pace else fmt.ABSENT, pace.allowed if pace else None, derived=True),
            text(WORDS[pace.within if pace else None]), text(_stages_word(fit.shape))]),
            bad=fit.mix_ok is False or fit.counts_ok is False))
    return Table(tuple(cols), tuple(rows), caption="Per cell")


def _stages_word(shape: Shape | None) -> str:
    if shape is None:
        return fmt.ABSENT
    judged = [s.followed for s in shape.stages if s.followed is not None]
    return WORDS[all(judged) if judged else None]


def _figure(ctx: Context, run: RunView, fit: CellFit) -> Figure:
    shape = fit.shape
    assert shape is not None
    r = fit.result
    xs = [float(t) for t in range(len(shape.series))]
    style = ctx.style(next(p.key for p in ctx.points if any(x is r for x in p.results)))
    lines = [charts.Line(f"{r.identity.label}: logged requests/s", xs, [float(y) for y in shape.series], style,
                         tips=tuple(f"second {t}: {y:,} requests" for t, y in enumerate(shape.series))),
             charts.Line("asked stages, scaled", xs, shape.expected, charts.Style(style.index, ":", hollow=True))]
    axes = charts.Axes("seconds from the cell's start", "requests/s", y_from_zero=True, x_integer=True)
    said = stages_said(shape)
    alt = f"Requests per second the target logged for {_who(r)}, against the asked stages scaled: {said}."
    svg = charts.line_chart(anchors.cell("fidelity-" + run.label, r.identity.cell_id), lines, axes, alt)
    caption = (f"{_who(r)}: requests/s the target logged (solid) and the asked users scaled by the achieved rate per "
               f"user (dotted), shifted {shape.shift_s} s. {said[:1].upper()}{said[1:]}.")
    if r.outcome.status is Status.DISTURBED:  # its pace may be the machine's; what it sent is still its own
        caption += " Other work on the machine disturbed this cell: its rate may be the machine's, not the tool's."
    return Figure(svg, caption, alt, title=f"Stages: {r.identity.label}, {r.identity.cell_id}")


def stages_said(shape: Shape) -> str:
    """Whether it ramped up, held and ramped down, in the stages' order."""
    said = []
    for s in shape.stages:
        done = {"ramp up": "ramped up", "hold": "held", "ramp down": "ramped down"}[s.kind]
        if s.followed is None:
            said.append(f"stage {s.number} ({s.kind}) too short to tell")
        elif s.followed:
            said.append(done)
        else:
            seen = fmt.number(s.observed) if s.observed is not None else fmt.ABSENT
            said.append(f"did not {s.kind} in stage {s.number} ({seen}/s against {fmt.number(s.expected)}/s asked)")
    return ", ".join(said)


def sentence(fit: CellFit) -> str:
    """One cell's fidelity in one sentence."""
    r = fit.result
    parts = [_mix_said(fit), _counts_said(fit)]
    if fit.pace is not None:
        p = fit.pace
        verdict = "as it allows" if p.within else ("faster: pauses were shorter or skipped"
                                                   if p.achieved > p.allowed else "slower: something held it back")
        parts.append(f"{fmt.number(p.achieved)} requests per user per second against the {fmt.number(p.allowed)} "
                     f"the think time allows ({verdict})")
    if fit.shape is not None:
        parts.append(stages_said(fit.shape))
    checks = [n for n in fit.names if n.failed_checks]
    parts.append("failed checks: " + ", ".join(f"{n.name} {fmt.number(n.failed_checks)}" for n in checks)
                 if checks else ("no failed check" if any(n.failed_checks == 0 for n in fit.names)
                                 else "failed checks not counted per name"))
    return f"{_who(r)}: " + "; ".join(p for p in parts if p) + "."


def _mix_said(fit: CellFit) -> str:
    judged = [n for n in fit.names if n.diff_pp is not None]
    if not judged:
        return "the mix not judged (no request of its paths logged)"
    worst = max(judged, key=lambda n: abs(n.diff_pp or 0.0) - (n.tolerance_pp or 0.0))
    where = f"{worst.name} {worst.diff_pp:+.1f} points against ±{worst.tolerance_pp:.1f}"
    return (f"the mix within tolerance (furthest: {where})" if fit.mix_ok
            else f"the mix off (furthest: {where})")


def _counts_said(fit: CellFit) -> str:
    diffs: list[NameFit] = [n for n in fit.names if n.count_diff is not None]
    if not diffs:
        return "no count per name from the tool to hold against the target's"
    worst = max(diffs, key=lambda n: abs(n.count_diff or 0))
    within = f"within the {fit.users} in flight" if fit.counts_ok else f"beyond the {fit.users} in flight"
    return f"its counts {within} (furthest: {worst.name} {_count(worst.count_diff)})"


def _plan_points(ctx: Context, runs: list[tuple[RunView, Workload]]) -> list[str]:
    """The tools the plan refused, with why, and those it ran with approximations, with how; once each."""
    refused: dict[str, str] = {}
    approximated: dict[str, list[str]] = {}
    for run, _ in runs:
        for r in run.results:
            if r.outcome.status is Status.UNSUPPORTED:
                refused.setdefault(r.identity.label, r.outcome.error or "unsupported")
            for note in r.notes:
                if ": approximated: " in note and note not in approximated.get(r.identity.label, []):
                    approximated.setdefault(r.identity.label, []).append(note)
    said = [f"Planned unsupported: {tool}: {why}." for tool, why in sorted(refused.items())]
    said += [f"Approximated by {tool}: {'; '.join(notes)}." for tool, notes in sorted(approximated.items())]
    return said
