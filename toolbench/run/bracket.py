"""What the runner does around the cells rather than in them: the seed of the run's order,
the method as the manifest records it, the calibration before the first cell and after the
last, and the warm-up of each target before its first cell. Each step is measured or recorded,
so that a report can say how the run was taken (docs/measurement.md)."""
from __future__ import annotations

import dataclasses
import os
import secrets
import warnings
from pathlib import Path

from toolbench.contract import registry
from toolbench.contract.adapter import Detection, Found
from toolbench.contract.host import Host
from toolbench.errors import Notice
from toolbench.hosts import system
from toolbench.record import store
from toolbench.record.machine import Calibration, MachineRecord, Method
from toolbench.run import calibrate, warmup
from toolbench.run.plan import PlannedCell
from toolbench.scenario.method import MAX_SEED, MethodSpec
from toolbench.scenario.read import Scenario
from toolbench.servers.process import RunningTarget


def seed_of(scenario: Scenario, resume: Path | None) -> int | None:
    """The seed of the cells' order: a resumed run's own (its plan must not change), the
    scenario's `seed`, or one drawn now; None when the scenario runs its cells as written."""
    if resume is not None:
        earlier = store.RunDir.open(resume).manifest().machine
        return earlier.method.seed if earlier is not None else None
    if scenario.method.order != "shuffled":
        return None
    return scenario.method.seed if scenario.method.seed is not None else secrets.randbelow(MAX_SEED + 1)


def method(scenario: Scenario, seed: int | None) -> Method:
    m = scenario.method
    return Method(order=m.order if seed is not None else "as-written", seed=seed, repetitions=scenario.repeat,
                  settle_max_s=m.settle_max_s, foreign_cpu_pct=m.foreign_cpu_pct, steal_pct=m.steal_pct,
                  target_warmup_s=m.target_warmup_s)


def calibrated(run_dir: store.RunDir, scenario: Scenario, when: str) -> None:
    """Times the reference now (`when`: "before" or "after") and adds it to the manifest."""
    machine = run_dir.manifest().machine
    if not scenario.method.calibrate or machine is None:
        return
    taken = calibrate.reference(sorted(os.sched_getaffinity(0)))
    calibration = machine.calibration or Calibration()
    calibration = dataclasses.replace(calibration, **{when: taken})
    run_dir.update_manifest(machine=dataclasses.replace(machine, calibration=calibration))


def record(scenario: Scenario, seed: int | None) -> MachineRecord:
    """The machine record a run starts with: its method; the placement, system check and
    calibration are added as they are made."""
    return MachineRecord(method=method(scenario, seed))


def warm_target(scenario: Scenario, cells: list[PlannedCell], running: RunningTarget, found: dict[str, Detection],
                host: Host, folder: Path) -> None:
    """The target's warm-up, with the first of its cells that runs; a warm-up that fails is
    said, and the cells run all the same (each has its own warm-up when the scenario asks). Its
    output goes to `folder`/warmup, `folder` being the target's own in the run."""
    if not scenario.method.target_warmup_s:
        return
    for planned in cells:
        tool_found = found.get(planned.cell.tool)
        if planned.support.ok and isinstance(tool_found, Found):
            cell = planned.cell.at(running.url_for(planned.cell.protocol), running.ca_file)
            why = warmup.warm_target(registry.get(cell.tool), tool_found, cell, folder, host,
                                     scenario.method.target_warmup_s)
            if why is not None:
                warnings.warn(Notice(f"the target's warm-up with {cell.label} did not run: {why}"), stacklevel=2)
            return


SYSTEM_SAMPLE_S = 0.2  # `toolbench system check` before a run: long enough to see a busy process


def system_checked(run_dir: store.RunDir, scenario: Scenario) -> None:
    """`toolbench system check` on this machine, before the first cell, into the manifest; a
    machine that is not quiet is said now (the run goes on: its cells are judged one by one)."""
    machine = run_dir.manifest().machine
    if machine is None:
        return
    placed = machine.placement
    d = MethodSpec()
    found = system.check("local", SYSTEM_SAMPLE_S, placed.target_cpus if placed else None,
                         placed.generator_cpus if placed else None,
                         foreign_cpu_pct=scenario.method.foreign_cpu_pct or d.foreign_cpu_pct,
                         steal_pct=scenario.method.steal_pct or d.steal_pct)
    run_dir.update_manifest(machine=dataclasses.replace(machine, system=found))
    # The load average is left to the record: it counts toolbench's own previous run for a minute.
    # A scenario that judges no cell (`disturbed: none`) is not told either.
    judged = scenario.method.foreign_cpu_pct is not None or scenario.method.steal_pct is not None
    noisy = [f for f in found.noisy if f.name != "load"] if judged else []
    if noisy:
        said = "; ".join(f"{f.name}: {f.found} (wanted {f.wanted})" for f in noisy)
        warnings.warn(Notice(f"this machine is not quiet: {said} (`toolbench system check` says why)"),
                      stacklevel=2)
