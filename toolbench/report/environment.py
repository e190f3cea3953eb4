"""Where the runs ran: hosts, CPU, memory, kernel, tool versions, and the
prerequisites as found against what the scenario wanted."""
from __future__ import annotations

from collections import Counter
from typing import Any

from toolbench.report import fmt
from toolbench.report.context import Context, RunView
from toolbench.report.view import Column, Row, Section, Table, Value, text
from toolbench.schema import Status

NOT_CHECKED = "not checked"


def facts(run: RunView) -> list[tuple[str, str]]:
    """The environment of one run, as (name, value) pairs in reading order."""
    env = run.section("environment")
    out = [("scenario", run.scenario), ("started", fmt.when(run.started_at)),
           ("ended", fmt.when(_str(run.manifest.get("ended_at")))), ("status", ended(run)),
           ("stop", run.stop)]
    out += _host_facts("host", env)
    for role, host in sorted(run.section("hosts").items()):
        if isinstance(host, dict):  # remote generator or target hosts, by role
            out += _host_facts(str(role), host)
    target = run.section("target")
    if target:
        out.append(("target", " ".join(v for v in (_str(target.get("label")), _str(target.get("version"))) if v)))
        out.append(("target URL", _str(target.get("url"))))
    tools = run.section("tools")
    out += [(f"tool: {name}", _str(version) or "not found") for name, version in sorted(tools.items())]
    return [(k, v or fmt.ABSENT) for k, v in out]


def ended(run: RunView) -> str:
    """How the run ended, as the manifest says, with what its results hold, so that the two
    never tell different stories ("complete" over a table of failed cells)."""
    status = _str(run.manifest.get("status")) or "status not recorded"
    if not run.results:
        return f"{status}: no cell recorded"
    counts = Counter(r.outcome.status for r in run.results)
    ran = len(run.results) - counts[Status.UNSUPPORTED] - counts[Status.TOOL_MISSING]
    if ran and not counts[Status.OK]:
        return f"{status}: no cell finished ok ({ran} ran)"
    others = ", ".join(f"{n} {s.value.replace('_', ' ')}" for s, n in sorted(counts.items(), key=lambda kv: kv[0].value)
                       if s is not Status.OK)
    return f"{status}: {counts[Status.OK]} of {len(run.results)} cells ok" + (f" ({others})" if others else "")


def _host_facts(role: str, env: dict[str, Any]) -> list[tuple[str, str]]:
    if not env:
        return [(role, fmt.ABSENT)]
    cpu = " × ".join(v for v in (_str(env.get("cpu_count")), _str(env.get("cpu_model"))) if v)
    return [(role, _str(env.get("hostname")) + (f" ({env['host']})" if env.get("host") else "")),
            (f"{role} CPU", cpu), (f"{role} memory", fmt.size(_number(env.get("memory_bytes")))),
            (f"{role} kernel", _str(env.get("kernel"))), (f"{role} OS", _str(env.get("os"))),
            (f"{role} Python", _str(env.get("python")))]


def _str(value: Any) -> str:
    return "" if value is None else str(value)


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


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


def prerequisite_findings(run: RunView) -> list[dict[str, Any]] | None:
    """The findings as stored: a list, or the runner's record holding them under "findings"."""
    stored = run.manifest.get("prerequisites")
    if isinstance(stored, dict):
        stored = stored.get("findings")
    return [f for f in stored if isinstance(f, dict)] if isinstance(stored, list) else None


def _prerequisites(run: RunView, several: bool) -> Table | None:
    findings = prerequisite_findings(run)
    if findings is None:
        return None
    rows = []
    for item in findings:
        ok = item.get("ok")
        state = NOT_CHECKED if ok is None else ("ok" if ok else "NOT MET")
        if ok is False and item.get("required") is False:
            state = "not met (advice)"
        name = _str(item.get("name") or item.get("key"))
        kind = _str(item.get("kind"))
        rows.append(Row((text(f"{kind}: {name}" if kind and kind not in name else name),
                         text(_str(item.get("found"))), text(_str(item.get("wanted"))),
                         Value(state, flag="not met" if ok is False else ""), text(_str(item.get("note")), "")),
                        bad=ok is False and item.get("required") is not False))
    caption = "Prerequisites" + (f" — {run.label}" if several else "")
    if isinstance(run.manifest.get("prerequisites"), dict) and run.manifest["prerequisites"].get("went_on"):
        caption += " (the run went on with a required prerequisite unmet)"
    cols = (Column("setting"), Column("found"), Column("wanted"), Column("ok"), Column("note"))
    if not rows:
        rows.append(Row((text("none wanted by the scenario"), text(""), text(""), text(""), text("", ""))))
    return Table(cols, tuple(rows), caption=caption, sortable=False)
