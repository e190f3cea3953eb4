"""Cells disturbed by other work on the machine (Status.DISTURBED, toolbench.run.quiet).

Their figures are kept and shown wherever a cell is listed (the results table, marked), and left
out of everything that compares or summarises: the verdict, the rankings and tiers, the choice,
the charts' lines (which read only the cells that finished ok, groups.Point.ok). Where they are
left out, this module says so: the verdict's sentence, a mark on a ranked figure that lost
repetitions, a note under each chart, and the throughput chart draws them apart."""
from __future__ import annotations

import dataclasses
from typing import Iterable

from toolbench.record import stats
from toolbench.record.schema import RunResult, Status
from toolbench.report import charts, fmt
from toolbench.report.context import Context
from toolbench.report.groups import Point
from toolbench.report.view import Section

LISTED = 4  # cells named in a sentence; the results table has them all
# Drawn apart from every series: black crosses without a line (charts.PALETTE[6], charts.MARKERS[6]).
MARK_STYLE = charts.Style(6, "none", hollow=False)
MARK_LABEL = "disturbed (left out)"
THROUGHPUT = "throughput"  # the section whose chart draws the disturbed cells (report.perf)
# Sections whose every chart is one cell's own, which says itself when that cell was disturbed.
PER_CELL_CHARTS = frozenset({THROUGHPUT, "fidelity"})


def of(results: Iterable[RunResult]) -> list[RunResult]:
    return [r for r in results if r.outcome.status is Status.DISTURBED]


def named(results: list[RunResult]) -> str:
    shown = ", ".join(r.identity.cell_id for r in results[:LISTED])
    return shown + (f" and {len(results) - LISTED} more" if len(results) > LISTED else "")


def left_out(results: Iterable[RunResult]) -> str:
    """The verdict's sentence; "" when no cell was disturbed."""
    found = of(results)
    if not found:
        return ""
    n = len(found)
    were = "cell disturbed by other work on the machine was" if n == 1 else \
        "cells disturbed by other work on the machine were"
    return (f"{n} {were} left out: {named(found)} (each one's figures and why are in the results; "
            "`toolbench run --retry-disturbed N` runs such cells again once the machine is quiet).")


def rate_flag(point: Point) -> str:
    """A ranked figure that is the median of fewer repetitions than ran: say why."""
    n = len(of(point.results))
    return f"{n} disturbed left out" if n else ""


def with_chart_notes(sections: list[Section], ctx: Context) -> list[Section]:
    """Every chart reads only the cells that finished ok: its caption says which were left out
    (the throughput chart draws them apart, and says so itself)."""
    found = of(r for _, r in ctx.results)
    if not found:
        return sections
    note = (f" {len(found)} {'cell' if len(found) == 1 else 'cells'} disturbed by other work on the machine "
            f"{'is' if len(found) == 1 else 'are'} left out of this chart: {named(found)}.")
    return [dataclasses.replace(s, figures=tuple(dataclasses.replace(f, caption=f.caption + note)
                                                 for f in s.figures)) if s.figures and s.id not in PER_CELL_CHARTS else s
            for s in sections]


def throughput_marks(ctx: Context) -> list[charts.Line]:
    """The disturbed cells' own successful rates, as crosses apart from the lines."""
    found = [(float(r.identity.concurrency), rate, r) for _, r in ctx.results
             if r.outcome.status is Status.DISTURBED and r.identity.concurrency is not None
             and (rate := stats.throughput(r)) is not None]
    if not found:
        return []
    return [charts.Line(MARK_LABEL, [x for x, _, _ in found], [y for _, y, _ in found], MARK_STYLE,
                        tips=tuple(f"{r.identity.cell_id}: {fmt.number(y)}/s, disturbed: {r.outcome.error or ''}"
                                   for _, y, r in found))]
