"""Several runs side by side (one scenario on two dates, or two scenarios), with the
differences against the first run given."""
from __future__ import annotations

from collections import Counter

from toolbench.report import fmt, groups
from toolbench.report.context import Context
from toolbench.report.view import Column, Link, Row, Section, Table, Value, num, text
from toolbench.schema import Status


def labels(runs: list[tuple[str, dict[str, object]]]) -> list[str]:
    """Short, distinct names for runs: the scenario when they differ, else the date, else the folder."""
    def scenario(m: dict[str, object]) -> str:
        sc = m.get("scenario")
        return str(sc.get("name")) if isinstance(sc, dict) and sc.get("name") else ""

    def date(m: dict[str, object]) -> str:
        return fmt.when(str(m.get("started_at") or "")).removesuffix(" UTC")

    for make in (lambda n, m: scenario(m), lambda n, m: date(m), lambda n, m: f"{scenario(m)} {date(m)}".strip(),
                 lambda n, m: n):
        names = [make(name, manifest) for name, manifest in runs]
        if all(names) and len(set(names)) == len(names):
            return names
    return [f"{i + 1}: {name}" for i, (name, _) in enumerate(runs)]


def compare_section(ctx: Context) -> Section:
    base = ctx.runs[0]
    tables = (_runs_table(ctx), _peaks_table(ctx), _cells_table(ctx))
    points = _biggest_changes(ctx)
    intro = (f"{len(ctx.runs)} runs side by side. Changes are relative to the first, “{base.label}”: "
             "+ means more than there.")
    return Section("compare", "Differences between runs", intro=intro,
                   tables=tuple(t for t in tables if t.rows), points=tuple(points))


def _runs_table(ctx: Context) -> Table:
    rows = []
    for run in ctx.runs:
        statuses = Counter(r.outcome.status for r in run.results)
        best = groups.leader([p for p in ctx.peaks if p.key.run == run.label])
        headline = f"{best.key.name} {fmt.number(best.rps)}/s" if best else fmt.ABSENT
        rows.append(Row((Value(run.label, links=(Link(run.name, run.link("")),)), text(run.scenario),
                         text(fmt.when(run.started_at)), text(str(run.manifest.get("status") or "")),
                         num(f"{statuses[Status.OK]} of {len(run.results)}", statuses[Status.OK]),
                         text(headline))))
    cols = (Column("run"), Column("scenario"), Column("started"), Column("status"), Column("cells ok", True),
            Column("highest rate"))
    return Table(cols, tuple(rows), caption="The runs")


def _by_run(ctx: Context) -> dict[tuple[str, str, bool | None], dict[str, groups.Peak]]:
    out: dict[tuple[str, str, bool | None], dict[str, groups.Peak]] = {}
    for p in ctx.peaks:
        out.setdefault((p.key.tool, p.key.variant, p.key.keepalive), {})[p.key.run] = p
    return out


def _peaks_table(ctx: Context) -> Table:
    base = ctx.runs[0].label
    rows = []
    for (tool, variant, keepalive), peaks in _by_run(ctx).items():
        values = [text(f"{tool} {variant}".strip()), text(fmt.yes_no(keepalive))]
        for run in ctx.runs:
            p = peaks.get(run.label)
            rps = p.rps if p else None
            where = f" (c {fmt.number(p.concurrency)})" if p and p.rps is not None else ""
            values.append(num(fmt.number(rps) + where, rps))
            if run.label != base:
                values.append(_delta(rps, peaks[base].rps if base in peaks else None))
        rows.append(Row(tuple(values)))
    return Table(_run_columns(ctx, ["tool", "keep-alive"], "peak req/s"), tuple(rows),
                 caption="Peak throughput per tool and keep-alive setting")


def _cells_table(ctx: Context) -> Table:
    """Cells present in at least two runs, matched by tool, keep-alive and concurrency."""
    matched: dict[tuple[str, str, bool | None, int | None], dict[str, groups.Point]] = {}
    for p in ctx.points:
        matched.setdefault((p.key.tool, p.key.variant, p.key.keepalive, p.concurrency), {})[p.key.run] = p
    base = ctx.runs[0].label
    rows = []
    for (tool, variant, keepalive, c), pts in matched.items():
        if len(pts) < 2:
            continue
        values = [text(f"{tool} {variant}".strip()), text(fmt.yes_no(keepalive)), num(fmt.number(c), c)]
        for run in ctx.runs:
            rps = pts[run.label].rps if run.label in pts else None
            values.append(num(fmt.number(rps), rps))
            if run.label != base:
                values.append(_delta(rps, pts[base].rps if base in pts else None))
        rows.append(Row(tuple(values)))
    return Table(_run_columns(ctx, ["tool", "keep-alive", "concurrency"], "req/s"), tuple(rows),
                 caption="The same cell in several runs (median req/s)")


def _run_columns(ctx: Context, first: list[str], metric: str) -> tuple[Column, ...]:
    cols = [Column(name, numeric=name == "concurrency") for name in first]
    for i, run in enumerate(ctx.runs):
        cols.append(Column(f"{metric}: {run.label}", True))
        if i:
            cols.append(Column(f"Δ {run.label}", True, title=f"change from {ctx.runs[0].label}"))
    return tuple(cols)


def _delta(new: float | None, old: float | None) -> Value:
    shown = fmt.change(new, old)
    value = (new - old) / old * 100.0 if new is not None and old else None
    flag = "large change" if value is not None and abs(value) >= 10.0 else ""
    return num(shown, value, flag=flag)


def _biggest_changes(ctx: Context) -> list[str]:
    base = ctx.runs[0].label
    out = []
    for run in ctx.runs[1:]:
        changes = []
        for (tool, variant, keepalive), peaks in _by_run(ctx).items():
            old, new = peaks.get(base), peaks.get(run.label)
            if old and new and old.rps and new.rps is not None:
                changes.append(((new.rps - old.rps) / old.rps * 100.0, f"{tool} {variant}".strip(), keepalive))
        if changes:
            delta, tool, keepalive = max(changes, key=lambda c: abs(c[0]))
            out.append(f"From “{base}” to “{run.label}”, the largest change in peak throughput was {tool} with "
                       f"keep-alive {fmt.yes_no(keepalive)}: {fmt.change(100.0 + delta, 100.0)}.")
        else:
            out.append(f"“{base}” and “{run.label}” share no tool and keep-alive setting to compare.")
    return out

