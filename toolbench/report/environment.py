"""Where the runs ran: hosts, CPU, memory, kernel, tool versions, who ran on which CPUs (the
placement), and the prerequisites as found against what the scenario wanted."""
from __future__ import annotations

from collections import Counter
from typing import Any

from toolbench.record.machine import Placement
from toolbench.record.manifest import Component, Environment, Finding
from toolbench.record.schema import Status
from toolbench.report import fmt
from toolbench.report.context import Context, RunView
from toolbench.report.view import Column, Row, Section, Table, Value, text
from toolbench.scenario.method import cpu_list

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
        if target.components:  # what the target was made of, as found when it started
            out.append((f"{role} components", components_phrase(target.components)))
    out += [(f"tool: {t.tool}", _str(t.version) or "not found") for t in sorted(m.tools, key=lambda t: t.tool)]
    out += placement_facts(m.machine.placement if m.machine is not None else None)
    return [(k, v or fmt.ABSENT) for k, v in out]


def components_phrase(components: list[Component]) -> str:
    """"nginx 1.22.1, uWSGI 2.0.31, Flask 3.1.3, Werkzeug 3.1.9, Python 3.11.7"."""
    return ", ".join(f"{c.name} {c.version}" for c in components)


def placement_facts(placement: Placement | None) -> list[tuple[str, str]]:
    """The placement asked and what it became: each side's CPUs, cpuset or affinity only, and
    every process read back with the CPUs the kernel gave it, grouped (nginx ×3 on 0). None
    (a run recorded before toolbench placed anything): no rows, as for any fact not recorded."""
    if placement is None:
        return []
    how = "not placed" if placement.asked == "none" else "cpuset" if placement.cpuset else "affinity only"
    out = [("placement", f"{placement.asked} ({how})"), ("placed", placement_phrase(placement))]
    if placement.asked != "none":
        out += [(f"{side} CPUs", _cpus_on(cpus, host)) for side, cpus, host in (
            ("target", placement.target_cpus, placement.target_host),
            ("generator", placement.generator_cpus, placement.generator_host),
            ("toolbench", placement.toolbench_cpus, "local"))]
    groups: Counter[tuple[str, str, str, str]] = Counter(
        (p.role, p.name, cpu_list(tuple(p.cpus)) if p.cpus else "none", p.host) for p in placement.processes)
    said = [f"{name}{f' ×{n}' if n > 1 else ''} on {cpus}{'' if host == 'local' else f' of {host}'}"
            for (_, name, cpus, host), n in groups.items()]
    out.append(("processes and their CPUs", "; ".join(said)))
    out += [("placement notes", "; ".join(placement.notes))] if placement.notes else []
    return out


def placement_phrase(placement: Placement | None) -> str:
    """Where the target and the generator ran, in one phrase for the sentence that says how
    quiet the machine was: "the target on CPU 0, the generator on CPU 1 (toolbench with the
    generator)"."""
    if placement is None:
        return "where the target and the generator ran was not recorded"
    if placement.asked == "none":
        if placement.target_host == placement.generator_host:
            return "unplaced: the target and the generator shared every CPU"
        return "unplaced: the target and the generator each on every CPU of its own machine"
    sides = [f"the {side} " + ("not started by toolbench" if host == NOT_STARTED else f"on {_cpus_on(cpus, host)}")
             for side, cpus, host in (("target", placement.target_cpus, placement.target_host),
                                      ("generator", placement.generator_cpus, placement.generator_host))]
    return f"{sides[0]}, {sides[1]} ({_toolbench_where(placement)})"


NOT_STARTED = "not started by toolbench"  # toolbench.hosts.placed.NOT_STARTED, as the record says it


def _cpus_on(cpus: list[int] | None, host: str) -> str:
    where = "" if host == "local" else f" of {host}"
    if cpus is None:
        return f"every CPU{where}"
    return f"CPU{'s' if len(cpus) > 1 else ''} {cpu_list(tuple(cpus))}{where}"


def _toolbench_where(p: Placement) -> str:
    if p.toolbench_cpus is None:
        return "toolbench unplaced"
    if p.generator_host == "local" and p.toolbench_cpus == p.generator_cpus:
        return "toolbench with the generator"
    if p.target_host == "local" and p.toolbench_cpus == p.target_cpus:
        return "toolbench with the target"
    return f"toolbench on {_cpus_on(p.toolbench_cpus, 'local')}"


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
