"""A scenario's matrix, expanded into cells; each cell either runnable or
planned as unsupported with the tool's reason."""
from __future__ import annotations

import dataclasses
import itertools
from dataclasses import dataclass, field
from typing import Any

from toolbench import registry
from toolbench.adapter import Adapter, Support
from toolbench.errors import ScenarioError
from toolbench.scenario import RequestSpec, Scenario, StopSpec


@dataclass(frozen=True)
class Cell:
    scenario: str
    tool: str
    concurrency: int
    keepalive: bool
    repetition: int
    request: RequestSpec
    stop: StopSpec
    timeout_s: float
    rate_rps: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    url: str | None = None  # known once the target runs

    @property
    def id(self) -> str:
        rate = f"-rate{self.rate_rps:g}" if self.rate_rps is not None else ""
        conn = "ka" if self.keepalive else "close"
        return f"{self.tool}-c{self.concurrency}-{conn}{rate}-rep{self.repetition}"

    def at(self, base_url: str) -> "Cell":
        return dataclasses.replace(self, url=base_url.rstrip("/") + self.request.path)


@dataclass(frozen=True)
class PlannedCell:
    cell: Cell
    support: Support


def expand(scenario: Scenario) -> list[PlannedCell]:
    """Repetitions are the outer loop, so that drift over time hits every tool alike."""
    known = registry.adapters()
    for i, tool in enumerate(scenario.matrix.tool):
        if tool not in known:
            where = scenario.locations.get(f"matrix.tool[{i}]") or scenario.locations.get("matrix.tool", scenario.source)
            why = registry.broken().get(tool)
            detail = f"its adapter is broken: {why}" if why else f"unknown tool (known: {', '.join(known)})"
            raise ScenarioError(f"{where}: matrix.tool[{i}]: {tool!r}: {detail}")
    options = {tool: _options(scenario, known[tool]) for tool in scenario.matrix.tool}
    _reject_unused_tool_options(scenario, known)
    m = scenario.matrix
    planned = []
    for rep in range(1, scenario.repeat + 1):
        for concurrency, keepalive, rate, tool in itertools.product(m.concurrency, m.keepalive, m.rate, m.tool):
            cell = Cell(scenario=scenario.name, tool=tool, concurrency=concurrency, keepalive=keepalive,
                        repetition=rep, request=scenario.request, stop=scenario.stop,
                        timeout_s=scenario.cell_timeout_s(), rate_rps=rate, options=options[tool])
            planned.append(PlannedCell(cell, known[tool].supports(cell)))
    return planned


def _options(scenario: Scenario, adapter: Adapter) -> dict[str, Any]:
    given = scenario.tools.get(adapter.name)
    if given is None:
        return {}
    for key, value in given.values.items():
        where = given.locations[key]
        if key not in adapter.option_types:
            allowed = ", ".join(adapter.option_types) or "none"
            raise ScenarioError(f"{where}: tools.{adapter.name}.{key}: unknown option (expected: {allowed})")
        want = adapter.option_types[key]
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise ScenarioError(f"{where}: tools.{adapter.name}.{key}: expected {want.__name__}, got {value!r}")
    return dict(given.values)


def _reject_unused_tool_options(scenario: Scenario, known: dict[str, Adapter]) -> None:
    for tool, given in scenario.tools.items():
        if tool not in known:
            raise ScenarioError(f"{given.locations['']}: tools.{tool}: unknown tool (known: {', '.join(known)})")
        if tool not in scenario.matrix.tool:
            _options(scenario, known[tool])  # still checked, so typos never hide
