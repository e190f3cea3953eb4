"""The data the report templates receive, built from stored runs only.

Templates get plain, already formatted values: absent metrics arrive as the
absent mark, never as 0, and every link is a relative path. `snapshot()` turns
that data into plain JSON, which the tests compare against recorded snapshots."""
from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Any

from toolbench.report import by_target as targets
from toolbench.report import (choice, compare, cost, disturbed, environment, failed_requests, generators, handshakes,
                              latency, latency_time, latency_views, perf, ranking, results, truth, verdict)
from toolbench.report.context import Context, RunView
from toolbench.report.claims_section import claims_section
from toolbench.report.criteria_section import criteria_section
from toolbench.report.glance import AnswerFigure, Glance, glance
from toolbench.report.network import network_section
from toolbench.report.target_log import target_log_section
from toolbench.report import workload_fit
from toolbench.report.fidelity_section import fidelity_section
from toolbench.report.per_request import per_request_section
from toolbench.report.view import Column, Figure, Link, Row, Section, Value
from toolbench.scenario.claims import ClaimSet


@dataclass(frozen=True)
class RunLink:
    label: str
    name: str
    href: str


@dataclass(frozen=True)
class StatusCount:
    status: str
    cells: int


@dataclass(frozen=True)
class ReportData:
    title: str
    subtitle: str
    runs: tuple[RunLink, ...]
    statuses: tuple[StatusCount, ...]  # most frequent first
    glance: Glance  # the question, the headline and the answering figure: the top of the page
    verdicts: tuple[verdict.RunVerdict, ...]
    sections: tuple[Section, ...]
    links: tuple[Link, ...]  # the data behind the report: manifests and results, by relative path


def build(runs: list[RunView], claims: ClaimSet | None = None) -> ReportData:
    """`claims`: a scenario's, shown instead of those stored with the runs (`report --claims-from`)."""
    ctx = Context.of(runs)
    names = list(dict.fromkeys(run.scenario for run in runs))
    statuses = Counter(r.outcome.status.value.replace("_", " ") for _, r in ctx.results)
    sections = [
        environment.environment_section(ctx),
        *[s for s in (criteria_section(ctx),) if s is not None],
        *workload_fit.with_choice(ctx, choice.choice_section(ctx)),
        ranking.ranking_section(ctx),
        *[s for s in (targets.targets_section(ctx),) if s is not None],
        perf.peaks_section(ctx),
        perf.throughput_section(ctx),
        latency.percentiles_section(ctx),
        latency_views.distribution_section(ctx),
        *[s for s in (per_request_section(ctx), fidelity_section(ctx)) if s is not None],
        truth.truth_section(ctx),
        cost.cost_section(ctx),
        *[s for s in (handshakes.handshakes_section(ctx),) if s is not None],
        *[s for s in (generators.generators_section(ctx),) if s is not None],
        failed_requests.errors_section(ctx),
        *[s for s in (target_log_section(ctx),) if s is not None],
        *[s for s in (network_section(ctx),) if s is not None],
        perf.series_section(ctx),
        latency_time.over_time_section(ctx),
        results.results_section(ctx),
    ]
    sections = disturbed.with_chart_notes(sections, ctx)
    if ctx.several:
        sections.insert(0, compare.compare_section(ctx))
    links = tuple(Link(f"{run.label + ': ' if run.label else ''}{name}", run.link(name))
                  for run in runs for name in ("manifest.json", "results.jsonl")
                  if name == "manifest.json" or run.results)  # a run with no result has no results file
    top = glance(ctx, claims_section(ctx, claims))
    return ReportData(
        title=" vs ".join(names) if names else "toolbench report",
        subtitle=_subtitle(runs, top.question),
        runs=tuple(RunLink(run.label, run.name, run.link("")) for run in runs),
        statuses=tuple(StatusCount(status, n)
                       for status, n in sorted(statuses.items(), key=lambda kv: (-kv[1], kv[0]))),
        glance=top,
        verdicts=tuple(verdict.verdicts(ctx)),
        sections=tuple(sections),
        links=links,
    )


def _subtitle(runs: list[RunView], question: str) -> str:
    """What the runs set up, under the question: the descriptions, less the question they open with."""
    said = (d.removeprefix(question).strip() for d in dict.fromkeys(run.description for run in runs))
    return "; ".join(d for d in said if d)


def snapshot(data: ReportData) -> dict[str, Any]:
    """The report's data as compact JSON: a table row as its cells' texts, each with its marks
    (†: derived; [flag]; -> link), and each chart as its caption and description."""
    return _plain(data)


def _plain(value: Any) -> Any:
    if isinstance(value, Value):
        marks = ("†" if value.derived else "") + (f" [{value.flag}]" if value.flag else "")
        links = "".join(f" ->{link.text}:{link.href}" for link in value.links)
        return f"{value.text}{marks}{links}"
    if isinstance(value, Row) and not (value.bad or value.note or value.error):
        return [_plain(v) for v in value.values]
    if isinstance(value, Column):
        return value.label + ("#" if value.numeric else "")
    if isinstance(value, Figure):
        return {"caption": value.caption, "alt": value.alt, "svg": value.svg.startswith("<svg")}
    if isinstance(value, AnswerFigure):
        return {"title": value.title, "caption": value.caption, "alt": value.alt,
                "svgs": sum(svg.startswith("<svg") for svg in value.svgs)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)
                if not _default_empty(value, f)}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _default_empty(obj: Any, f: dataclasses.Field[Any]) -> bool:
    """Leaves out fields at an empty default, so snapshots stay readable."""
    value = getattr(obj, f.name)
    return value in ("", (), None, False) and f.default == value
