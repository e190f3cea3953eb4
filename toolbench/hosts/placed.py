"""A run's placement applied: the scenario's `placement:` resolved against its hosts
(toolbench.hosts.placement), a cpuset per side placed on this machine (toolbench.hosts.cpuset),
the generator's host handed back pinned (a local tool joins its side's group and affinity as it
starts; a remote one runs under `taskset`), the target's pin for the servers toolbench starts,
toolbench's own threads pinned while the cells run, and what the kernel gave each process read
back for the manifest (record.machine.Placement)."""
from __future__ import annotations

import contextlib
import os
from typing import Iterator, Sequence

from toolbench.contract.host import Host
from toolbench.hosts import cpuset
from toolbench.hosts.local import LocalHost
from toolbench.hosts.placement import (NOT_PLACED, Pin, Resolved, affinity_of, local_processes, pinned_self, read_local,
                                       read_remote, remote_processes, resolve)
from toolbench.hosts.ssh import SSHHost
from toolbench.record.machine import PlacedProcess, Placement
from toolbench.scenario.read import Scenario

NOT_STARTED = "not started by toolbench"  # the target's host in the record when it is a URL


class RunPlacement:
    """What one run's placement became; see the module's docstring."""

    def __init__(self, resolved: Resolved, target_host: Host | None, target_label: str, generator_label: str,
                 sets: cpuset.Cpusets | None, notes: Sequence[str]) -> None:
        self.resolved = resolved
        self._far = target_host  # the target's host when it is not this machine
        self._target_label = target_label
        self._generator_label = generator_label
        self._sets = sets
        self.notes = [*resolved.notes, *notes]
        self._targets: dict[str, list[PlacedProcess]] = {}
        self._own: list[PlacedProcess] = []
        self._pinned: contextlib.ExitStack | None = None

    @property
    def target_pin(self) -> Pin | None:
        """How the servers started on this machine are placed; None: not placed."""
        if self.resolved.target is None or self._far is not None:
            return None
        return Pin(self.resolved.target, self._sets.procs("target") if self._sets else None)

    @property
    def target_cpus(self) -> tuple[int, ...] | None:
        """The CPUs of the servers started on the target's host (`taskset` there)."""
        return self.resolved.target

    @property
    def generator_cpu_count(self) -> int | None:
        """How many CPUs the tool may use, for the tools that size themselves by it."""
        return len(self.resolved.generator) if self.resolved.generator is not None else None

    def generator(self, host: Host) -> Host:
        """`host`, its tools started on the generator's CPUs."""
        cpus = self.resolved.generator
        if cpus is None:
            return host
        if isinstance(host, LocalHost):
            return host.with_pin(Pin(cpus, self._sets.procs("generator") if self._sets else None))
        if isinstance(host, SSHHost):
            return host.with_cpus(cpus)
        self.notes.append(f"the generator {host.label} is not a host toolbench can place: its tools are not placed")
        return host

    def pin_own(self) -> None:
        """toolbench's own threads on their CPUs from now on (for the cells, and the calibration
        around them), until restore_own(), which the end of `placed()` makes sure of."""
        if self._pinned is None:
            self._pinned = contextlib.ExitStack()
            self._pinned.enter_context(pinned_self(self.resolved.toolbench))
        cpus = affinity_of(os.getpid())
        self._own = [PlacedProcess("toolbench", os.getpid(), "toolbench", cpus)] if cpus is not None else []

    def restore_own(self) -> None:
        """Every thread of this process back on the CPUs it had before pin_own()."""
        if self._pinned is not None:
            self._pinned.close()
            self._pinned = None

    def saw_target(self, name: str, pids: Sequence[int]) -> None:
        """Reads the CPUs of every process of a target just started (its leaders `pids`)."""
        if self._far is not None:
            self._targets[name] = remote_processes(self._far, pids, "target")
        else:
            self._targets[name] = local_processes(pids, "target")

    def record(self) -> Placement:
        r = self.resolved
        listed = [p for procs in self._targets.values() for p in procs] + self._own
        return Placement(asked=r.asked, target_cpus=_list(r.target), generator_cpus=_list(r.generator),
                         toolbench_cpus=_list(r.toolbench),
                         target_host=self._target_label,
                         generator_host=self._generator_label,
                         cpuset=str(self._sets.run_group) if self._sets else None, processes=listed,
                         notes=list(self.notes))


def _list(cpus: tuple[int, ...] | None) -> list[int] | None:
    return list(cpus) if cpus is not None else None


@contextlib.contextmanager
def placed(scenario: Scenario, generator: Host, far: Host | None, *, starts_targets: bool,
           scaled_out: bool = False) -> Iterator[RunPlacement]:
    """The placement of a run whose tools run on `generator`, and whose targets toolbench starts
    (`starts_targets`) on `far` over SSH, or here when `far` is None. Its cpusets are removed
    when the block ends."""
    spec = scenario.placement
    target_label = far.label if far is not None else "local" if starts_targets else NOT_STARTED
    if spec.mode == "none" or scaled_out:
        why = "several generators: nothing placed" if scaled_out and spec.mode != "none" else NOT_PLACED
        yield RunPlacement(Resolved(spec.label, notes=(why,)), far, target_label, generator.label, None, [])
        return
    notes: list[str] = []
    here = read_local()
    gen = read_remote(generator) if generator.remote else here
    target = (read_remote(far) if far is not None else here) if starts_targets else None
    same = scenario.target_host.address == scenario.generator.address
    resolved = resolve(spec, target, gen, here, same_machine=same, where=scenario.locations)
    local: dict[str, tuple[int, ...]] = {}  # the sides placed on this machine, each in a cpuset
    if resolved.target is not None and far is None:
        local["target"] = resolved.target
    if resolved.generator is not None and isinstance(generator, LocalHost):
        local["generator"] = resolved.generator
    sets, said = cpuset.make(local) if local else (None, "")
    if local and sets is None:
        notes.append(f"affinity only: {said}")
    if (far is not None and resolved.target is not None) or (generator.remote and resolved.generator is not None):
        notes.append("on a host over SSH: taskset only (no cpuset); toolbench's sampler there is not placed")
    placement = RunPlacement(resolved, far, target_label, generator.label, sets, notes)
    try:
        yield placement
    finally:
        placement.restore_own()
        if sets is not None:
            cpuset.remove(sets)  # a group left (a process still leaving) goes with the next run's stale ones
