"""Can it express your workload (issue 32): per tool of the run, each feature the stored workload asks
for, honoured, approximated (with how) or unsupported (with why), as each tool's adapter declared it
when the run was planned (the manifest's `tools[].workload`). A table in the "Which tool for which
purpose" section, or a section of its own where that one is not shown, in any report whose scenario
has a workload; in a report of choose-a-tool (`compare: purposes`), every feature a workload may ask
for. A run from before toolbench recorded it is shown as the adapters here declare it, and says so.
The tools are the run's cells' tools, variants as their tool (options do not change what a tool can
express); a tool with neither a record nor an adapter here is said to be unknown."""
from __future__ import annotations

import dataclasses

from toolbench.contract import registry
from toolbench.contract.workload import FeatureSupport, Level, support_of
from toolbench.report.context import Context
from toolbench.report.view import Column, Row, Section, Table, text
from toolbench.report.workload_source import of_run
from toolbench.scenario.workload import FEATURE_TEXT, FEATURES

TITLE = "Can it express your workload"
INTRO = ("Each feature the workload asks for, per tool, as the tool's adapter declares it: honoured, approximated "
         "(the note under the row says how) or unsupported (and why). A cell whose tool cannot express a "
         "feature toolbench sends was planned unsupported, not run.")


@dataclasses.dataclass(frozen=True)
class ToolFit:
    label: str
    tool: str
    features: dict[str, FeatureSupport] | None  # None: no record and no adapter of that name here
    recorded: bool = True  # as the run recorded it; False: as the adapters here declare it


def fits(ctx: Context) -> tuple[frozenset[str], list[ToolFit]]:
    """The features to show (the first run's workload's, or every one for a run that asks which tool
    fits which purpose; none: no table) and each tool's fit, as the run recorded it."""
    run = ctx.runs[0] if ctx.runs else None
    workload = next((w for r in ctx.runs if (w := of_run(r)) is not None), None)
    if run is None or (workload is None and run.manifest.scenario.compare != "purposes"):
        return frozenset(), []
    features = workload.features() if workload is not None else frozenset(FEATURES)
    records = {t.tool: t.workload for t in run.manifest.tools if t.workload}
    if workload is None and not records:
        return frozenset(), []  # a choose-a-tool run from before toolbench recorded it
    known = registry.adapters()
    tools = dict.fromkeys((r.identity.label, r.identity.tool) for _, r in ctx.results)
    return features, [_fit(label, tool, records.get(tool), known, features) for label, tool in tools]


def _fit(label: str, tool: str, record: dict | None, known: dict, features: frozenset[str]) -> ToolFit:
    if record:
        return ToolFit(label, tool, {f: FeatureSupport(Level(r.level), r.how) for f, r in record.items() if f in features})
    if tool not in known:
        return ToolFit(label, tool, None)
    return ToolFit(label, tool, support_of(known[tool].workload_features, tool, features), recorded=False)


def table(features_asked: frozenset[str], found: list[ToolFit]) -> Table:
    features = [f for f in FEATURES if f in features_asked]
    cols = (Column("tool"), *[Column(f.replace("_", " "), title=FEATURE_TEXT[f]) for f in features])
    rows = []
    for fit in found:
        if fit.features is None:
            rows.append(Row((text(fit.label), *[text("unknown") for _ in features]),
                            note=f"the run did not record it, and no adapter named {fit.tool} is here"))
            continue
        said = [f"{FEATURE_TEXT[f]}: {s.level.value}: {s.how}" for f, s in fit.features.items()
                if s.level is not Level.HONOURED and s.how]
        if not fit.recorded:
            said.insert(0, "the run did not record it: as this toolbench's adapter declares it")
        rows.append(Row((text(fit.label), *[text(fit.features.get(f, FeatureSupport(Level.UNSUPPORTED)).level.value)
                                            for f in features]),
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
    features, found = fits(ctx)
    if not features or not found:
        return [choice] if choice is not None else []
    if choice is None:
        return [Section("workload-fit", TITLE, intro=f"{INTRO} {summary(found)}", tables=(table(features, found),))]
    return [dataclasses.replace(choice, intro=f"{choice.intro} {summary(found)}".strip(),
                                tables=choice.tables + (table(features, found),))]
