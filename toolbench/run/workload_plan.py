"""What each tool of a scenario can express of its workload, before anything runs: per tool, each
feature the workload asks for honoured, approximated (with how) or unsupported (with why), as the
adapter declares it (toolbench.contract.workload). The plan refuses a cell with any unsupported
feature, with one reason naming each, and carries a note per approximated one into the cell's
result; `toolbench validate` (and choose-a-tool) show the table."""
from __future__ import annotations

from dataclasses import dataclass

from toolbench.contract import registry
from toolbench.contract.adapter import Adapter
from toolbench.contract.workload import FeatureSupport, Level, support_for
from toolbench.scenario.read import Scenario
from toolbench.scenario.workload import FEATURE_TEXT, FEATURES, Workload

# What a tool reports, not what it sends: unsupported, it is a note, not a refusal.
REPORTING_ONLY = frozenset({"per_request"})
SHORT = {Level.HONOURED: "honoured", Level.APPROXIMATED: "approximated", Level.UNSUPPORTED: "unsupported"}


@dataclass(frozen=True)
class ToolSupport:
    """One tool (or variant) of the matrix, and each feature the workload asks of it."""

    label: str
    tool: str
    features: dict[str, FeatureSupport]
    declared: frozenset[str]  # the features its adapter declares; the others it has no translation of

    def reason(self) -> str | None:
        """Why a cell of this tool cannot run the workload, one clause per unsupported feature the
        adapter declared (`<tool> cannot express <it>: why`), one for all those it left out; None
        when it can."""
        said = [f"{self.tool} cannot express {FEATURE_TEXT[feature]}: {support.how}"
                for feature, support in self.features.items()
                if support.level is Level.UNSUPPORTED and feature in self.declared and feature not in REPORTING_ONLY]
        if untranslated := [f for f in self.untranslated() if f not in REPORTING_ONLY]:
            said.append(f"toolbench does not translate {_listed([FEATURE_TEXT[f] for f in untranslated])} "
                        f"for {self.tool}")
        return "; ".join(said) or None

    def untranslated(self) -> list[str]:
        return [feature for feature in self.features if feature not in self.declared]

    def notes(self) -> tuple[str, ...]:
        """One note per approximated feature, as the cell's result carries it."""
        approximated = [f"{FEATURE_TEXT[feature]}: approximated: {support.how}"
                        for feature, support in self.features.items() if support.level is Level.APPROXIMATED]
        absent = [f"no {FEATURE_TEXT[feature]}: {support.how or 'toolbench reads none from ' + self.tool}"
                  for feature, support in self.features.items()
                  if feature in REPORTING_ONLY and support.level is Level.UNSUPPORTED]
        return tuple(approximated + absent)


def _listed(texts: list[str]) -> str:
    return texts[0] if len(texts) == 1 else ", ".join(texts[:-1]) + " or " + texts[-1]


def of_adapter(adapter: Adapter, workload: Workload, label: str | None = None) -> ToolSupport:
    return ToolSupport(label or adapter.name, adapter.name,
                       support_for(adapter.workload_features, adapter.name, workload),
                       frozenset(adapter.workload_features))


def refusal_and_notes(adapter: Adapter, workload: Workload) -> tuple[str | None, tuple[str, ...]]:
    """For one cell: why it cannot run (None: it can), and the notes it carries when it runs."""
    found = of_adapter(adapter, workload)
    return found.reason(), found.notes()


def table(scenario: Scenario) -> list[ToolSupport]:
    """Each tool and variant of the matrix, in its order; empty without a workload. A variant is
    its tool: options do not change what a tool can express."""
    if scenario.workload is None:
        return []
    known = registry.adapters()
    rows = []
    for label in scenario.matrix.tool:
        given = scenario.tools.get(label)
        tool = given.use if given is not None and given.use else label
        if tool in known:  # an unknown one is the plan's error to raise
            rows.append(of_adapter(known[tool], scenario.workload, label))
    return rows


def table_lines(rows: list[ToolSupport]) -> list[str]:
    """The table as text: a row per tool, a column per feature asked, then each how and why."""
    if not rows:
        return []
    features = [f for f in FEATURES if f in rows[0].features]
    width = max(len(row.label) for row in rows) + 2
    cols = [max(len(f), len("approximated")) + 2 for f in features]
    lines = ["workload features (honoured / approximated / unsupported):",
             "  " + "tool".ljust(width) + "".join(f.ljust(w) for f, w in zip(features, cols)).rstrip()]
    for row in rows:
        cells = "".join(SHORT[row.features[f].level].ljust(w) for f, w in zip(features, cols))
        lines.append("  " + row.label.ljust(width) + cells.rstrip())
    for row in rows:
        for feature, support in row.features.items():
            if support.level is not Level.HONOURED and feature in row.declared:
                lines.append(f"  {row.label}: {FEATURE_TEXT[feature]}: {SHORT[support.level]}: {support.how}")
        if untranslated := row.untranslated():
            lines.append(f"  {row.label}: unsupported: toolbench does not translate "
                         f"{_listed([FEATURE_TEXT[f] for f in untranslated])} for {row.tool}")
    return lines


def as_json(rows: list[ToolSupport]) -> dict[str, dict[str, dict[str, str | None]]]:
    """The table for `validate --json`: tool -> feature -> {level, how}."""
    return {row.label: {feature: {"level": support.level.value, "how": support.how or None}
                        for feature, support in row.features.items()} for row in rows}
