"""A scenario's matrix, expanded into cells; each cell either runnable or
planned as unsupported with the tool's reason."""
from __future__ import annotations

import dataclasses
import itertools
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolbench.contract import ramp, registry
from toolbench.contract.adapter import PROTOCOL_NAMES, Adapter, Support
from toolbench.contract.cell import Cell
from toolbench.errors import ScenarioError
from toolbench.run import workload_plan
from toolbench.scenario.read import Scenario
from toolbench.scenario.request import RequestSpec


@dataclass(frozen=True)
class PlannedCell:
    cell: Cell
    support: Support
    # What the cell's result says of how it ran, known before it runs: each workload feature its
    # tool approximates (toolbench.run.workload_plan.refusal_and_notes).
    notes: tuple[str, ...] = ()


def expand(scenario: Scenario, seed: int | None = None) -> list[PlannedCell]:
    """Repetitions are the outer loop, then targets, each target's cells together (one start of
    it serves them, toolbench.run.serving.batches): so drift over time, and what one start of a
    server happens to give, hit every target alike and become noise the repetitions measure (with
    all of a target's repetitions in one start, they measured that start's noise only:
    docs/measurement.md). With a `seed`, the targets of each repetition, and each target's cells,
    run in an order drawn from it, a new one per repetition (`shuffled`, toolbench.run.runner
    draws and records the seed): no cell always follows the same one, so what a cell inherits
    from the one before it becomes noise too, not a bias of one cell.

    A matrix entry is a tool, or a variant declared under `tools:` with `use: <tool>`,
    which runs that tool with its own options on top of the tool's."""
    known = registry.adapters()
    resolved = {name: _resolve(scenario, i, name, known) for i, name in enumerate(scenario.matrix.tool)}
    warmups = {name: _warmup_s(scenario, name, adapter.name) for name, (adapter, _) in resolved.items()}
    _check_tools_section(scenario, known)
    _check_tool_paths(scenario, known)
    # A workload's refusal and notes depend on the tool alone: worked out once per tool.
    expressed = {name: workload_plan.refusal_and_notes(adapter, scenario.workload)
                 if scenario.workload is not None else (None, ()) for name, (adapter, _) in resolved.items()}
    m = scenario.matrix
    planned = []
    several = len(scenario.targets) > 1
    for rep, target in _targets_by_repetition(m.target or tuple(scenario.targets), scenario.repeat, seed):
        combos = list(itertools.product(m.concurrency, m.keepalive, m.rate, m.tool, m.protocol))
        if seed is not None:
            # A string seed is hashed the same way on every Python: the order is reproducible from the manifest.
            random.Random(f"{seed}:{target}:{rep}").shuffle(combos)
        for concurrency, keepalive, rate, name, protocol in combos:
            adapter, options = resolved[name]
            cell = Cell(scenario=scenario.name, tool=adapter.name, concurrency=concurrency, keepalive=keepalive,
                        repetition=rep, request=_request(scenario, target), stop=scenario.stop,
                        timeout_s=scenario.cell_timeout_s(), rate_rps=rate, options=options,
                        variant=name if name != adapter.name else None, target=target, target_in_id=several,
                        warmup_s=warmups[name], protocol=protocol, workload=scenario.workload)
            refused, notes = expressed[name]
            planned.append(PlannedCell(cell, _support(adapter, cell, scenario, refused), notes))
    return planned


def _targets_by_repetition(targets: tuple[str, ...], repeat: int, seed: int | None) -> list[tuple[int, str]]:
    """(repetition, target) in the order they run: each repetition every target, in an order of
    its own when shuffled."""
    order = []
    for rep in range(1, repeat + 1):
        these = list(targets)
        if seed is not None:
            random.Random(f"{seed}:targets:{rep}").shuffle(these)
        order += [(rep, target) for target in these]
    return order


def _request(scenario: Scenario, target: str) -> RequestSpec:
    """The scenario's request, at the target's own path when it gives one (`targets.X.path`)."""
    path = scenario.targets[target].path
    return scenario.request if path is None else dataclasses.replace(scenario.request, path=path)


def _support(adapter: Adapter, cell: Cell, scenario: Scenario, workload_refused: str | None) -> Support:
    """The protocol first (the target's, then the tool's), then the workload (`workload_refused`:
    why the tool cannot express it, or None), then what the tool itself says."""
    spec = scenario.targets[cell.target]
    if cell.protocol not in spec.protocols:
        return Support(False, f"the target {spec.display} does not serve {PROTOCOL_NAMES[cell.protocol]}")
    if cell.protocol != "http1" and spec.bundled and not scenario.target_host.is_local:
        return Support(False, f"{PROTOCOL_NAMES[cell.protocol]}: toolbench serves it from a bundled target on "
                              "this machine only, not yet on hosts.target")
    speaks = adapter.protocol_support(cell.protocol)
    if not speaks.ok:
        return speaks
    return Support(False, workload_refused) if workload_refused else adapter.supports(cell)


def _resolve(scenario: Scenario, index: int, name: str, known: dict[str, Adapter]) -> tuple[Adapter, dict[str, Any]]:
    given = scenario.tools.get(name)
    tool = given.use if given is not None and given.use else name
    if tool not in known:
        where = scenario.locations.get(f"matrix.tool[{index}]") or scenario.locations.get("matrix.tool", scenario.source)
        why = registry.broken().get(tool)
        detail = f"its adapter is broken: {why}" if why else f"unknown tool (known: {', '.join(known)})"
        raise ScenarioError(f"{where}: matrix.tool[{index}]: {tool!r}: {detail}")
    adapter = known[tool]
    options = _options(scenario, tool, adapter) if name != tool else {}
    return adapter, options | _options(scenario, name, adapter)


def _warmup_s(scenario: Scenario, name: str, tool: str) -> float:
    """A variant's own `warmup`, else its tool's, else the scenario's."""
    for given in (scenario.tools.get(name), scenario.tools.get(tool)):
        if given is not None and given.warmup_s is not None:
            return given.warmup_s
    return scenario.warmup_s


MAX_OPTION = 10**9


def _options(scenario: Scenario, name: str, adapter: Adapter) -> dict[str, Any]:
    given = scenario.tools.get(name)
    if given is None:
        return {}
    resolved = dict(given.values)
    for key, value in given.values.items():
        where = given.locations[key]
        if key not in adapter.option_types:
            allowed = ", ".join(adapter.option_types) or "none"
            raise ScenarioError(f"{where}: tools.{name}.{key}: unknown option (expected: {allowed})")
        want = adapter.option_types[key]
        if want is Path:
            resolved[key] = _scenario_file(scenario, f"{where}: tools.{name}.{key}", value)
            continue
        if not isinstance(value, want) or (want is int and isinstance(value, bool)):
            raise ScenarioError(f"{where}: tools.{name}.{key}: expected {want.__name__}, got {value!r}")
        if want is int and not 0 <= value <= MAX_OPTION:  # a count, a port or seconds: past this a typo
            raise ScenarioError(f"{where}: tools.{name}.{key}: expected an integer from 0 to {MAX_OPTION}, "
                                f"got {value!r}")
        choices = adapter.option_choices.get(key)
        if choices is not None and value not in choices:
            raise ScenarioError(f"{where}: tools.{name}.{key}: expected one of {', '.join(map(str, choices))}, "
                                f"got {value!r}")
    return resolved


def _scenario_file(scenario: Scenario, where: str, value: Any) -> str:
    """An option naming a file (a locustfile): relative to the scenario's folder and inside it."""
    if not isinstance(value, str) or not value:
        raise ScenarioError(f"{where}: expected a file name relative to the scenario, got {value!r}")
    folder = Path(scenario.source).resolve().parent
    path = (folder / value).resolve()
    if not path.is_relative_to(folder):
        raise ScenarioError(f"{where}: {value!r} is outside the scenario's folder {folder}")
    if not path.is_file():
        raise ScenarioError(f"{where}: {value!r}: no such file beside the scenario")
    return str(path)


def _check_tools_section(scenario: Scenario, known: dict[str, Adapter]) -> None:
    """Every entry under `tools:` is checked, used or not, so that typos never hide."""
    for name, given in scenario.tools.items():
        tool = given.use or name
        if tool not in known:
            what = f"`use: {tool}` names no" if given.use else "unknown tool; a variant needs `use:` naming a"
            raise ScenarioError(f"{given.locations['']}: tools.{name}: {what} known tool ({', '.join(known)})")
        _options(scenario, name, known[tool])


def _check_tool_paths(scenario: Scenario, known: dict[str, Adapter]) -> None:
    """A path under `hosts.generator.tools` (or any of `hosts.generators`) is for a program some adapter runs."""
    programs = sorted({adapter.program for adapter in known.values() if not adapter.read_only})  # k6: never run
    for i, generator in enumerate(scenario.generators):
        where = "hosts.generator" if scenario.generators_key == "hosts.generator" else f"hosts.generators[{i}]"
        for program in (p for p in generator.host.tools if p not in programs):
            key = f"{where}.tools.{program}"
            raise ScenarioError(f"{scenario.locations.get(key, scenario.source)}: {key}: no tool runs a program "
                                f"of that name (known: {', '.join(programs)})")


def ramp_warnings(cells: list[PlannedCell]) -> list[str]:
    """One line per runnable cell whose asked duration is under ramp.RAMP_MULTIPLE times its tool's
    ramp, for `toolbench validate`. A stop after N requests has no duration to check here;
    the runner checks the measured one."""
    said = []
    for planned in cells:
        cell, asked_s = planned.cell, planned.cell.stop.duration_s
        if not planned.support.ok or asked_s is None:
            continue
        ramp_s = registry.get(cell.tool).ramp_s(cell)
        if ramp.short_of_ramp(asked_s, ramp_s):
            said.append(f"{cell.id}: {ramp.ramp_note(cell.label, asked_s, ramp_s, asked=True)}")
    return said

