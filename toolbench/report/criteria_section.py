"""The criteria section: each criterion's verdict per cell, as `toolbench run` stored it in
the run folder (criteria.json), so that a report re-rendered later shows the same."""
from __future__ import annotations

from collections import Counter

from toolbench.report.context import Context, RunView
from toolbench.report.view import Column, Row, Section, Table, Value, text
from toolbench.scenario import criteria
from toolbench.scenario.criteria import Evaluation, Verdict

FLAGS = {Verdict.FAILED: "not met", Verdict.UNKNOWN: "unknown"}


def criteria_section(ctx: Context) -> Section | None:
    """None when no run of the report has criteria: the section is left out."""
    stored = [(run, criteria.load(run.path)) for run in ctx.runs if run.path is not None]
    found = [(run, evaluations) for run, evaluations in stored if evaluations]
    if not found:
        return None
    rows = tuple(_row(ctx, run, e) for run, evaluations in found for e in evaluations)
    cols = ([Column("run")] if ctx.several else []) + [
        Column("criterion"), Column("applies to", title="the scenario's selector; empty: every cell"),
        Column("cell", title="the cell, or the cell coordinates where tools are compared"), Column("verdict"),
        Column("values", title="both sides of the comparison and each figure read")]
    tally = Counter(e.verdict for _, evaluations in found for e in evaluations)
    intro = ("Each criterion of the scenario, evaluated on every cell it applies to, one repetition at a time. "
             "A figure that is absent (not reported, not measured) makes a criterion unknown, which is not a pass. "
             + ", ".join(f"{tally[v]} {v.value}" for v in Verdict if tally[v]) + ".")
    return Section("criteria", "Criteria", intro=intro, tables=(Table(cols, rows, css="criteria"),))


def _row(ctx: Context, run: RunView, e: Evaluation) -> Row:
    values = ([text(run.label)] if ctx.several else []) + [
        text(e.criterion), text(e.selector, "every cell"), text(e.subject),
        Value(e.verdict.value, flag=FLAGS.get(e.verdict, "")), text(e.detail)]
    return Row(tuple(values), bad=e.verdict is not Verdict.PASSED)
