"""Where the runs ran: hosts, CPU, memory, kernel, tool versions, and the
prerequisites as found against what the scenario wanted."""
from __future__ import annotations

from collections import Counter
from typing import Any

from toolbench.record.manifest import Environment, Finding
from toolbench.record.schema import Status
from toolbench.report import fmt
from toolbench.report.context import Context, RunView
from toolbench.report.view import Column, Row, Section, Table, Value, text

NOT_CHECKED = "not checked"


def facts(run: RunView) -> list[tuple[str, str]]:
    """The environment of one run, as (name, value) pairs in reading order."""
    m = run.manifest
    out = [("scenario", run.scenario), ("started", fmt.when(run.started_at)),
           ("ended", fmt.when(m.ended_at)), ("status", ended(run)), ("stop", run.stop)]
    out += _host_facts("host", m.environment)
    for target in m.targets:
        role = "target" if len(m.targets) == 1 else f"target {target.label}"
        out.append((role, " ".join(v for v in (target.label, _str(target.version)) if v)))
        out.append((f"{role} URL", _str(target.url)))
    out += [(f"tool: {t.tool}", _str(t.version) or "not found") for t in sorted(m.tools, key=lambda t: t.tool)]
    return [(k, v or fmt.ABSENT) for k, v in out]


def ended(run: RunView) -> str:
    """How the run ended, as the manifest says, with what its results hold, so that the two
    never tell different stories ("complete" over a table of failed cells)."""
    status = run.manifest.status.value
    if not run.results:
        return f"{status}: no cell recorded"
    counts = Counter(r.outcome.status for r in run.results)
    ran = len(run.results) - counts[Status.UNSUPPORTED] - counts[Status.TOOL_MISSING]
    if ran and not counts[Status.OK]:
        return f"{status}: no cell finished ok ({ran} ran)"
    others = ", ".join(f"{n} {s.value.replace('_', ' ')}" for s, n in sorted(counts.items(), key=lambda kv: kv[0].value)
                       if s is not Status.OK)
    return f"{status}: {counts[Status.OK]} of {len(run.results)} cells ok" + (f" ({others})" if others else "")


def _host_facts(role: str, env: Environment) -> list[tuple[str, str]]:
    cpu = " × ".join(v for v in (_str(env.cpu_count), _str(env.cpu_model)) if v)
    return [(role, _str(env.hostname) + (f" ({env.host})" if env.host else "")),
            (f"{role} CPU", cpu), (f"{role} memory", fmt.size(env.memory_bytes)),
            (f"{role} kernel", _str(env.kernel)), (f"{role} OS", _str(env.os)),
            (f"{role} Python", _str(env.python))]


def _str(value: Any) -> str:
    return "" if value is None else str(value)


def environment_section(ctx: Context) -> Section:
    per_run = [facts(run) for run in ctx.runs]
    keys: list[str] = []
    for pairs in per_run:
        keys += [k for k, _ in pairs if k not in keys]
    rows = []
    for key in keys:
        values = [dict(pairs).get(key, fmt.ABSENT) for pairs in per_run]
        differs = ctx.several and len(set(values)) > 1
        rows.append(Row((text(key),) + tuple(Value(v, flag="differs" if differs else "") for v in values)))
    heads = (Column(""),) + tuple(Column(run.label or "value") for run in ctx.runs)
    tables = [Table(heads, tuple(rows), caption="Environment", sortable=False)]
    tables += [t for run in ctx.runs if (t := _prerequisites(run, ctx.several)) is not None]
    points = tuple(f"{run.label or run.name}: prerequisites {NOT_CHECKED}." for run in ctx.runs
                   if prerequisite_findings(run) is None)
    intro = "Side by side; a row marked “differs” is not the same in every run." if ctx.several else ""
    return Section("environment", "Environment and prerequisites", intro=intro, tables=tuple(tables), points=points,
                   side_by_side=True)


def prerequisite_findings(run: RunView) -> list[Finding] | None:
    """The findings as stored; None when the run did not check them."""
    checked = run.manifest.prerequisites
    return None if checked is None else checked.findings


def _prerequisites(run: RunView, several: bool) -> Table | None:
    findings = prerequisite_findings(run)
    if findings is None:
        return None
    rows = []
    for item in findings:
        ok = item.ok
        state = NOT_CHECKED if ok is None else ("ok" if ok else "NOT MET")
        if ok is False and not item.required:
            state = "not met (advice)"
        name, kind = item.key, item.kind
        rows.append(Row((text(f"{kind}: {name}" if kind and kind not in name else name),
                         text(_str(item.found)), text(_str(item.wanted)),
                         Value(state, flag="not met" if ok is False else ""), text(item.note, "")),
                        bad=ok is False and item.required))
    caption = "Prerequisites" + (f" — {run.label}" if several else "")
    if run.manifest.prerequisites is not None and run.manifest.prerequisites.went_on:
        caption += " (the run went on with a required prerequisite unmet)"
    cols = (Column("setting"), Column("found"), Column("wanted"), Column("ok"), Column("note"))
    if not rows:
        rows.append(Row((text("none wanted by the scenario"), text(""), text(""), text(""), text("", ""))))
    return Table(cols, tuple(rows), caption=caption, sortable=False)
