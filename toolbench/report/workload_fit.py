"""Can it express your workload (issue 32): per tool of the run, each feature the stored workload asks
for, honoured, approximated (with how) or unsupported (with why), as each tool's adapter declares it
(toolbench.contract.workload.support_for: the same declarations the plan used). A table in the
"Which tool for which purpose" section, or a section of its own where that one is not shown, in any
report whose scenario has a workload. The tools are the run's cells' tools, variants as their tool
(options do not change what a tool can express); a tool whose adapter is not installed where the
report is made is said to be unknown here."""
from __future__ import annotations

import dataclasses

from toolbench.contract import registry
from toolbench.contract.workload import FeatureSupport, Level, support_for
from toolbench.report.context import Context
from toolbench.report.view import Column, Row, Section, Table, text
from toolbench.report.workload_source import of_run
from toolbench.scenario.workload import FEATURE_TEXT, FEATURES, Workload

TITLE = "Can it express your workload"
INTRO = ("Each feature the workload asks for, per tool, as the tool's adapter declares it: honoured, approximated "
         "(the note under the row says how) or unsupported (and why). A cell whose tool cannot express a "
         "feature toolbench sends was planned unsupported, not run.")


@dataclasses.dataclass(frozen=True)
class ToolFit:
    label: str
    tool: str
    features: dict[str, FeatureSupport] | None  # None: no adapter of that name here


def fits(ctx: Context) -> tuple[Workload | None, list[ToolFit]]:
    """The first run's workload (a report compares runs of one scenario) and each tool's fit to it."""
    workload = next((w for run in ctx.runs if (w := of_run(run)) is not None), None)
    if workload is None:
        return None, []
    known = registry.adapters()
    tools = dict.fromkeys((r.identity.label, r.identity.tool) for _, r in ctx.results)
    return workload, [ToolFit(label, tool, support_for(known[tool].workload_features, tool, workload)
                              if tool in known else None) for label, tool in tools]


def table(workload: Workload, found: list[ToolFit]) -> Table:
    features = [f for f in FEATURES if f in workload.features()]
    cols = (Column("tool"), *[Column(f.replace("_", " "), title=FEATURE_TEXT[f]) for f in features])
    rows = []
    for fit in found:
        if fit.features is None:
            rows.append(Row((text(fit.label), *[text("unknown") for _ in features]),
                            note=f"no adapter named {fit.tool} where this report was made"))
            continue
        said = [f"{FEATURE_TEXT[f]}: {s.level.value}: {s.how}" for f, s in fit.features.items()
                if s.level is not Level.HONOURED and s.how]
        rows.append(Row((text(fit.label), *[text(fit.features[f].level.value) for f in features]),
                        note="; ".join(said)))
    return Table(tuple(cols), tuple(rows), caption=TITLE, sortable=False, css="workload-fit")


def summary(found: list[ToolFit]) -> str:
    """One sentence: who honours all of it, who approximates, who cannot."""
    groups: dict[str, list[str]] = {"all": [], "approximated": [], "unsupported": []}
    for fit in found:
        if fit.features is None:
            continue
        levels = {s.level for s in fit.features.values()}
        kind = ("unsupported" if Level.UNSUPPORTED in levels else
                "approximated" if Level.APPROXIMATED in levels else "all")
        groups[kind].append(fit.label)
    said = [f"{', '.join(groups['all'])} honour{'s' if len(groups['all']) == 1 else ''} every feature of the workload"
            if groups["all"] else "No tool honours every feature of the workload",
            f"{', '.join(groups['approximated'])} approximate{'s' if len(groups['approximated']) == 1 else ''} some"
            if groups["approximated"] else "",
            f"{', '.join(groups['unsupported'])} cannot express some of it"
            if groups["unsupported"] else ""]
    return f"{TITLE}? " + "; ".join(s for s in said if s) + "."


def with_choice(ctx: Context, choice: Section | None) -> list[Section]:
    """The choice section with the table and its sentence added; the table as a section of its own
    when there is no choice section but the run has a workload; the choice section alone otherwise."""
    workload, found = fits(ctx)
    if workload is None or not found:
        return [choice] if choice is not None else []
    if choice is None:
        return [Section("workload-fit", TITLE, intro=f"{INTRO} {summary(found)}", tables=(table(workload, found),))]
    return [dataclasses.replace(choice, intro=f"{choice.intro} {summary(found)}".strip(),
                                tables=choice.tables + (table(workload, found),))]
