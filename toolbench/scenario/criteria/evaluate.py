"""Criteria evaluated on a run's results.

Each criterion is evaluated on every result its selector matches, one repetition at a time
(a criterion must hold in each repetition, not on a median). A criterion whose figures all
name their tool (`engine.rps >= 0.95 * ab.rps`) is evaluated once per cell coordinates
(target, concurrency, keep-alive, rate, repetition), reading each tool's result there; a
tool's figure inside an ordinary criterion (`rps >= 0.9 * ab.rps`) is read at the result's
own coordinates. A figure that is absent makes the criterion *unknown* there, never passed.
Cells that did not run (unsupported, tool missing, interrupted) are not evaluated, nor those
disturbed by other work on the machine: their figures are not the tools'."""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass
from typing import Any, Iterable

from toolbench.record.schema import RunResult, Status
from toolbench.scenario.criteria import expr
from toolbench.scenario.criteria.figures import FIGURES, read
from toolbench.scenario.criteria.spec import Criterion, Selector

NOT_RUN = (Status.UNSUPPORTED, Status.TOOL_MISSING, Status.INTERRUPTED)
LEFT_OUT = NOT_RUN + (Status.DISTURBED,)


class Verdict(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    UNKNOWN = "unknown"  # a figure it needs is absent: not passed


@dataclass(frozen=True)
class Evaluation:
    criterion: str  # the expression as written
    where: str
    subject: str  # a cell id, or the cell coordinates of a tool-vs-tool criterion
    cells: tuple[str, ...]  # the cells whose figures it read
    verdict: Verdict
    detail: str  # the values compared, or why it is unknown
    selector: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"criterion": self.criterion, "where": self.where, "subject": self.subject, "cells": list(self.cells),
                "verdict": self.verdict.value, "detail": self.detail, "selector": self.selector}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Evaluation":
        return cls(criterion=str(data["criterion"]), where=str(data["where"]), subject=str(data["subject"]),
                   cells=tuple(str(c) for c in data.get("cells", [])), verdict=Verdict(data["verdict"]),
                   detail=str(data["detail"]), selector=str(data.get("selector", "")))


Coordinates = tuple[Any, ...]


def coordinates(r: RunResult) -> Coordinates:
    i = r.identity
    return (i.target_label, i.concurrency, i.keepalive, i.rate_rps, i.repetition, tuple(sorted(i.params.items())))


def describe(coords: Coordinates) -> str:
    target, concurrency, keepalive, rate, repetition, params = coords
    parts = [f"target {target}" if target else "", f"c{concurrency}" if concurrency is not None else "",
             {True: "keep-alive", False: "close"}.get(keepalive, ""), f"rate {rate:g}/s" if rate else "",
             *[f"{k}={v}" for k, v in params], f"rep{repetition}"]
    return " ".join(p for p in parts if p)


def evaluate(criteria: Iterable[Criterion], results: list[RunResult]) -> list[Evaluation]:
    ran = [r for r in results if r.outcome.status not in LEFT_OUT]
    groups: dict[Coordinates, dict[str, RunResult]] = {}
    for r in ran:
        groups.setdefault(coordinates(r), {})[r.identity.label] = r  # a later record of a cell wins
    found: list[Evaluation] = []
    for criterion in criteria:
        mine = _one(criterion, ran, groups)
        found += mine or [Evaluation(criterion.text, criterion.where, "no cell", (), Verdict.UNKNOWN,
                                     "no cell that ran matches it", criterion.selector.text())]
    return found


def _one(criterion: Criterion, ran: list[RunResult],
         groups: dict[Coordinates, dict[str, RunResult]]) -> list[Evaluation]:
    if criterion.tool_vs_tool:
        named = {ref.tool for ref in criterion.comparison.refs()}
        return [_evaluate(criterion, describe(coords), None, by_tool)
                for coords, by_tool in groups.items()
                if named & set(by_tool) and _selected(criterion.selector, next(iter(by_tool.values())))]
    latest = {r.identity.cell_id: r for r in ran}
    return [_evaluate(criterion, r.identity.cell_id, r, groups[coordinates(r)])
            for r in latest.values() if _selected(criterion.selector, r)]


def _selected(s: Selector, r: RunResult) -> bool:
    i = r.identity
    return ((not s.tool or i.label in s.tool) and (not s.target or i.target_label in s.target)
            and (not s.concurrency or i.concurrency in s.concurrency)
            and (not s.keepalive or i.keepalive in s.keepalive) and (not s.rate or i.rate_rps in s.rate))


def _evaluate(criterion: Criterion, subject: str, own: RunResult | None,
              by_tool: dict[str, RunResult]) -> Evaluation:
    values: dict[expr.Ref, float] = {}
    missing: list[str] = []
    cells: dict[str, None] = {}
    for ref in criterion.comparison.refs():
        result = own if ref.tool is None else by_tool.get(ref.tool)
        if result is None:
            missing.append(f"{ref.tool} has no result here")
            continue
        cells[result.identity.cell_id] = None
        got = read(ref.figure, result)
        if got is None or not math.isfinite(got):
            who = ("toolbench's monitor or probe did not measure it" if FIGURES[ref.figure].by_toolbench
                   else f"{result.identity.label} did not report it")
            missing.append(f"{ref.text} is absent ({who})")
        else:
            values[ref] = got
    made = (criterion.text, criterion.where, subject, tuple(cells))
    if missing:
        return Evaluation(*made, Verdict.UNKNOWN, "; ".join(dict.fromkeys(missing)), criterion.selector.text())
    try:
        ok, left, right = expr.holds(criterion.comparison, values)
    except ZeroDivisionError:
        return Evaluation(*made, Verdict.UNKNOWN, "a division by zero", criterion.selector.text())
    shown = ", ".join(dict.fromkeys(f"{ref.text} = {_number(v)}" for ref, v in values.items()))
    sides = f"{_number(left)} {criterion.comparison.op} {_number(right)}"
    detail = f"{sides} ({shown})" if shown else sides
    return Evaluation(*made, Verdict.PASSED if ok else Verdict.FAILED, detail, criterion.selector.text())


def _number(value: float) -> str:
    """Four significant digits, thousands grouped, never in exponent form below 10^15."""
    if abs(value) >= 1000 or value == int(value):
        return f"{value:,.0f}" if abs(value) < 1e15 else f"{value:.4g}"
    return f"{value:.4g}"
