"""The data the report templates receive, built from stored runs only.

Templates get plain, already formatted values: absent metrics arrive as the
absent mark, never as 0, and every link is a relative path."""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from toolbench import store
from toolbench.report import charts, fmt
from toolbench.schema import RunResult, Status


@dataclass(frozen=True)
class RunView:
    name: str
    href: str  # the run folder, relative to the report
    manifest: dict[str, Any]
    results: list[RunResult]

    @classmethod
    def load(cls, run: store.RunDir, href: str) -> "RunView":
        return cls(name=run.path.name, href=href, manifest=run.manifest(), results=run.results())


@dataclass(frozen=True)
class Link:
    role: str
    href: str


@dataclass(frozen=True)
class Row:
    run: str
    cell: str
    tool: str
    version: str
    concurrency: str
    keepalive: str
    repetition: int
    status: str
    ok: bool
    error: str
    requests: str
    failed: str
    rps: str
    rps_sort: float
    mean_ms: str
    p50_ms: str
    p99_ms: str
    max_ms: str
    links: list[Link] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class EnvironmentView:
    run: str
    scenario: str
    started_at: str
    status: str
    facts: list[tuple[str, str]]
    tools: list[tuple[str, str]]


@dataclass(frozen=True)
class ReportData:
    title: str
    runs: list[str]
    environments: list[EnvironmentView]
    rows: list[Row]
    throughput_svg: str | None
    counts: dict[str, int]


def build(runs: list[RunView]) -> ReportData:
    rows = [_row(run, r) for run in runs for r in run.results]
    statuses: dict[str, int] = defaultdict(int)
    for run in runs:
        for r in run.results:
            statuses[r.outcome.status.value] += 1
    names = sorted({run.manifest.get("scenario", {}).get("name", run.name) for run in runs})
    return ReportData(
        title=" vs ".join(names),
        runs=[run.name for run in runs],
        environments=[_environment(run) for run in runs],
        rows=rows,
        throughput_svg=_throughput_chart(runs),
        counts=dict(statuses),
    )


def _row(run: RunView, r: RunResult) -> Row:
    res = r.latency.resolution_ms
    rps = r.rates.rps if r.rates.rps is not None else r.rates.rps_derived
    base = run.href.rstrip("/")
    return Row(
        run=run.name, cell=r.identity.cell_id, tool=r.identity.tool, version=r.identity.tool_version or fmt.ABSENT,
        concurrency=fmt.number(r.identity.concurrency), keepalive=_yes_no(r.identity.keepalive),
        repetition=r.identity.repetition, status=r.outcome.status.value, ok=r.outcome.status is Status.OK,
        error=r.outcome.error or "", requests=fmt.number(r.counts.requests_total),
        failed=fmt.number(r.counts.requests_failed), rps=fmt.number(rps), rps_sort=rps or 0.0,
        mean_ms=fmt.number(r.latency.mean_ms, res), p50_ms=fmt.number(r.latency.percentiles.p50_ms, res),
        p99_ms=fmt.number(r.latency.percentiles.p99_ms, res), max_ms=fmt.number(r.latency.max_ms, res),
        links=[Link(a.role, f"{base}/{a.path}") for a in r.outcome.artifacts],
        notes=list(r.notes),
    )


def _yes_no(value: bool | None) -> str:
    return fmt.ABSENT if value is None else ("on" if value else "off")


def _environment(run: RunView) -> EnvironmentView:
    m = run.manifest
    env = m.get("environment", {})
    facts = [("host", env.get("hostname")), ("CPU", f"{env.get('cpu_count')} × {env.get('cpu_model')}"),
             ("memory", fmt.size(env.get("memory_bytes"))), ("kernel", env.get("kernel")), ("OS", env.get("os")),
             ("Python", env.get("python"))]
    target = m.get("target") or {}
    if target:
        facts.append(("target", f"{target.get('label')} {target.get('version') or ''} at {target.get('url')}"))
    tools = [(name, version or "not found") for name, version in sorted((m.get("tools") or {}).items())]
    return EnvironmentView(run=run.name, scenario=m.get("scenario", {}).get("name", ""),
                           started_at=m.get("started_at", ""), status=m.get("status", ""),
                           facts=[(k, str(v) if v is not None else fmt.ABSENT) for k, v in facts], tools=tools)


def _throughput_chart(runs: list[RunView]) -> str | None:
    """One line per tool (and run, when several): keep-alive on solid, off dashed.
    Repetitions of a point are shown by their median."""
    points: dict[tuple[str, bool], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    for run in runs:
        for r in run.results:
            rps = r.rates.rps if r.rates.rps is not None else r.rates.rps_derived
            if r.outcome.status is not Status.OK or rps is None or r.identity.concurrency is None:
                continue
            label = r.identity.tool if len(runs) == 1 else f"{r.identity.tool} ({run.name})"
            points[(label, bool(r.identity.keepalive))][r.identity.concurrency].append(rps)
    if not points:
        return None
    lines = []
    for (label, keepalive), by_c in sorted(points.items()):
        xs = sorted(by_c)
        ys = [sorted(by_c[x])[len(by_c[x]) // 2] for x in xs]
        lines.append(charts.Line(f"{label}, keep-alive {'on' if keepalive else 'off'}", xs, ys, dashed=not keepalive))
    return charts.line_chart(lines, "concurrency", "requests/s", "Throughput vs concurrency",
                             log_x=max(max(line.xs) for line in lines) >= 100)
