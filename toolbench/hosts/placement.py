"""Who runs on which CPUs: a scenario's `placement:` (toolbench.scenario.method.PlacementSpec)
resolved against the CPUs each host lets toolbench use, the pin a local process is started
with, and the affinity the kernel gave a process, read back for the record.

`split` halves the CPUs of a machine that runs both the target and the generator, keeping a
physical core's SMT siblings on one side: two sides on siblings would share that core's execution
units and caches, the very contention the split is there to remove. The target gets the first
half. Sides on machines of their own keep every CPU there. toolbench's own process (the runner,
its probe and monitor threads) goes with the generator unless told otherwise: what it takes then
comes off the load generator's share, never off the target's serving, whose figures the
comparisons read. The cgroup side of a placement is toolbench.hosts.cpuset; applying it to a run
is toolbench.hosts.placed."""
from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator, Mapping

import psutil

from toolbench.contract.host import Host
from toolbench.errors import HostError, ScenarioError
from toolbench.record.machine import PlacedProcess
from toolbench.scenario.method import PlacementSpec, cpu_list

SYS_CPU = Path("/sys/devices/system/cpu")
_ALLOWED = "Cpus_allowed_list:"
# The remote shell's own allowed CPUs (as sched_getaffinity gives them here), then each CPU's
# SMT siblings as `N LIST`.
_READ_CPUS = ("sed -n 's/^Cpus_allowed_list:[[:space:]]*//p' /proc/self/status; "
              "for f in /sys/devices/system/cpu/cpu[0-9]*/topology/thread_siblings_list; do "
              '[ -r "$f" ] || continue; c=${f#/sys/devices/system/cpu/cpu}; echo "${c%%/*} $(cat "$f")"; done; true')
# The live members of the process groups given as arguments: `pid<TAB>name<TAB>cpus` each.
_READ_GROUPS = ('groups=" $* "; for f in /proc/[0-9]*/stat; do read -r line < "$f" 2>/dev/null || continue; '
                'set -f; set -- ${line##*") "}; set +f; [ "$1" != Z ] || continue; '
                'case "$groups" in *" $3 "*) ;; *) continue;; esac; d=${f%/stat}; '
                'printf "%s\\t%s\\t%s\\n" "${d#/proc/}" "$(sed -n "s/^Name:[[:space:]]*//p" "$d/status")" '
                '"$(sed -n "s/^Cpus_allowed_list:[[:space:]]*//p" "$d/status")"; done; true')


NOT_PLACED = "not placed: the scheduler put every process where it chose"


class PlacementError(ScenarioError):
    """A `placement:` this run's hosts cannot give: a CPU that is not there."""


@dataclass(frozen=True)
class HostCpus:
    """The CPUs toolbench may use on a host, grouped by physical core."""

    label: str
    cpus: tuple[int, ...]
    cores: tuple[tuple[int, ...], ...]  # the allowed CPUs, SMT siblings together, in order
    local: bool = True


@dataclass(frozen=True)
class Resolved:
    """Each side's CPUs for this run; None: not placed, every CPU of its host."""

    asked: str
    target: tuple[int, ...] | None = None
    generator: tuple[int, ...] | None = None
    toolbench: tuple[int, ...] | None = None
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Pin:
    """Where a process started on this machine goes: its CPUs, and the cgroup it joins (the path
    of that group's cgroup.procs), so that whatever it forks stays there too."""

    cpus: tuple[int, ...]
    cgroup_procs: str | None = None

    def apply(self) -> None:
        """In the child, between fork and exec (a preexec_fn): the group first, since joining a
        cpuset resets the affinity to the set's, then the affinity. Only system calls, nothing
        that takes a lock another thread of the parent may have held at the fork."""
        if self.cgroup_procs is not None:
            try:
                fd = os.open(self.cgroup_procs, os.O_WRONLY)
                try:
                    os.write(fd, str(os.getpid()).encode())
                finally:
                    os.close(fd)
            except OSError:
                pass  # the affinity still holds; the record reads back what the kernel gave
        os.sched_setaffinity(0, self.cpus)


def parse_cpus(text: str) -> tuple[int, ...]:
    """A kernel CPU list ("0-3,8", "5"): the CPUs, sorted. ValueError on anything else."""
    cpus: set[int] = set()
    for part in text.strip().split(","):
        low, dash, high = part.strip().partition("-")
        if not low.isdigit() or (dash and not high.isdigit()) or int(high or low) < int(low):
            raise ValueError(f"not a CPU list: {text.strip()!r}")
        cpus.update(range(int(low), int(high or low) + 1))
    return tuple(sorted(cpus))


def cores_of(cpus: Iterable[int], siblings: Mapping[int, str]) -> tuple[tuple[int, ...], ...]:
    """The allowed CPUs grouped by physical core, from each CPU's thread_siblings_list (a CPU
    whose list is missing or unreadable is a core of its own). Pure, for recorded layouts."""
    allowed = sorted(set(cpus))
    seen: set[int] = set()
    groups = []
    for cpu in allowed:
        if cpu in seen:
            continue
        try:
            together = set(parse_cpus(siblings[cpu])) if cpu in siblings else {cpu}
        except ValueError:
            together = {cpu}
        group = tuple(sorted(((together & set(allowed)) - seen) | {cpu}))
        seen.update(group)
        groups.append(group)
    return tuple(groups)


def halves(cores: tuple[tuple[int, ...], ...]) -> tuple[tuple[int, ...], tuple[int, ...], str | None] | None:
    """The target's and the generator's CPUs of a split, whole cores each, the target first (the
    smaller half when the count is odd: the generator usually needs more), and a note when the
    only way to split is across one core's siblings. None: a single CPU, nothing to split."""
    if len(cores) == 1:
        (core,) = cores
        if len(core) < 2:
            return None
        half = len(core) // 2
        return core[:half], core[half:], (f"one physical core (CPUs {cpu_list(core)}): the target and the "
                                          "generator are on SMT siblings of it")
    half = len(cores) // 2
    return tuple(c for core in cores[:half] for c in core), tuple(c for core in cores[half:] for c in core), None


def read_local() -> HostCpus:
    """This process's allowed CPUs (what a split halves) and their siblings."""
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    siblings = {}
    for cpu in cpus:
        with contextlib.suppress(OSError):
            siblings[cpu] = (SYS_CPU / f"cpu{cpu}" / "topology" / "thread_siblings_list").read_text()
    return HostCpus("local", cpus, cores_of(cpus, siblings))


def read_remote(host: Host) -> HostCpus:
    """The allowed CPUs of a login on `host` and their siblings."""
    captured = host.capture(["sh", "-c", _READ_CPUS])
    try:
        return parse_remote(host.label, captured.stdout)
    except ValueError as exc:
        raise HostError(f"{host.label}: cannot read its CPUs for the placement: {exc}") from None


def parse_remote(label: str, text: str) -> HostCpus:
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        raise ValueError("no Cpus_allowed_list in /proc/self/status")
    cpus = parse_cpus(lines[0])
    siblings = {int(cpu): rest for cpu, _, rest in (line.strip().partition(" ") for line in lines[1:])
                if cpu.isdigit()}
    return HostCpus(label, cpus, cores_of(cpus, siblings), local=False)


def resolve(spec: PlacementSpec, target: HostCpus | None, generator: HostCpus, here: HostCpus, *,
            same_machine: bool, where: Mapping[str, str] | None = None) -> Resolved:
    """The CPUs of each side. `target` None: toolbench starts no target (a URL), so it is not
    placed; `same_machine`: the target and the generator run on one host; `here` is the machine
    toolbench runs on; `where` gives file:line of `placement.<side>` for the errors."""
    if spec.mode == "none":
        return Resolved("none", notes=(NOT_PLACED,))
    if spec.mode == "explicit":
        return _explicit(spec, target, generator, here, where or {})
    notes: list[str] = []
    sides: tuple[tuple[int, ...] | None, tuple[int, ...] | None] = (None, None)
    if target is None:
        notes.append("toolbench starts no target here: the generator keeps every CPU")
    elif not same_machine:
        notes.append(f"the target ({target.label}) and the generator ({generator.label}) run on different "
                     "machines: each keeps every CPU of its own")
    elif (split := halves(generator.cores)) is None:
        notes.append(f"{generator.label} lets toolbench use one CPU only: nothing to split")
    else:
        sides = split[0], split[1]
        notes += [split[2]] if split[2] else []
    toolbench = sides[1] if generator.local else None
    return Resolved("split", sides[0], sides[1], toolbench, tuple(notes))


def _explicit(spec: PlacementSpec, target: HostCpus | None, generator: HostCpus, here: HostCpus,
              where: Mapping[str, str]) -> Resolved:
    notes = []
    for side, host in (("target", target), ("generator", generator), ("toolbench", here)):
        cpus = getattr(spec, side)
        if cpus is None or host is None:
            continue
        missing = [cpu for cpu in cpus if cpu not in host.cpus]
        if missing:
            key = f"placement.{side}"
            at = f"{where[key]}: " if key in where else ""
            raise PlacementError(f"{at}{key}: CPU {cpu_list(tuple(missing))} is not on {host.label} "
                                 f"(it has {cpu_list(host.cpus)})")
    if spec.target is not None and target is None:
        notes.append("placement.target: toolbench starts no target here, so none was placed")
    toolbench = spec.toolbench if spec.toolbench is not None else (spec.generator if generator.local else None)
    return Resolved(spec.label, spec.target if target is not None else None, spec.generator, toolbench, tuple(notes))


def affinity_of(pid: int) -> list[int] | None:
    """The CPUs the kernel lets process `pid` run on (/proc/<pid>/status); None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(_ALLOWED):
            try:
                return list(parse_cpus(line[len(_ALLOWED):]))
            except ValueError:
                return None
    return None


def local_processes(leaders: Iterable[int], role: str) -> list[PlacedProcess]:
    """Each leader and every process under it, with the CPUs the kernel gave it."""
    found = []
    for leader in leaders:
        try:
            top = psutil.Process(leader)
            family = [top, *top.children(recursive=True)]
        except psutil.Error:
            continue
        for proc in family:
            cpus = affinity_of(proc.pid)
            with contextlib.suppress(psutil.Error):
                if cpus is not None:
                    found.append(PlacedProcess(role, proc.pid, proc.name(), cpus))
    return found


def remote_processes(host: Host, groups: Iterable[int], role: str) -> list[PlacedProcess]:
    """The live members of process groups on `host`, with the CPUs the kernel there gave them."""
    wanted = [str(g) for g in groups if g > 1]
    if not wanted:
        return []
    found = []
    for line in host.capture(["sh", "-c", _READ_GROUPS, "sh", *wanted]).stdout.splitlines():
        pid, _, rest = line.partition("\t")
        name, _, cpus = rest.partition("\t")
        with contextlib.suppress(ValueError):
            found.append(PlacedProcess(role, int(pid), name, list(parse_cpus(cpus)), host=host.label))
    return found


# The CPUs this process had before pinned_self() moved it: what it may use on this machine.
_UNPINNED: list[set[int]] = []


def own_cpus() -> set[int]:
    """The CPUs this process may use here, as before toolbench pinned its own threads: the
    machine's facts are the machine's, not those of toolbench's side of the placement."""
    return set(_UNPINNED[0]) if _UNPINNED else os.sched_getaffinity(0)


def _threads() -> list[int]:
    try:
        return [int(tid) for tid in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


@contextlib.contextmanager
def pinned_self(cpus: tuple[int, ...] | None) -> Iterator[None]:
    """Every thread of this process on `cpus` until the block ends, then each back on what it had
    (a thread started meanwhile inherits the pin from its starter, and gets the main thread's
    earlier set back). An affinity is per thread on Linux: pinning only the caller would leave
    the threads already running where they were."""
    if cpus is None:
        yield
        return
    main = os.sched_getaffinity(0)
    saved = {}
    _UNPINNED.append(main)
    try:
        for tid in _threads():
            with contextlib.suppress(OSError):
                saved[tid] = os.sched_getaffinity(tid)
                os.sched_setaffinity(tid, cpus)
        yield
    finally:
        for tid in _threads():
            with contextlib.suppress(OSError):
                os.sched_setaffinity(tid, saved.get(tid, main))
        _UNPINNED.pop()
