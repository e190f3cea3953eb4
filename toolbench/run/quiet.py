"""Whether the machine that ran a cell's tool was quiet while it ran.

Over exactly the tool's run (not its warm-up, not the probe's baseline), the CPU of every process
outside the cell: not the tool (the kernel's rusage of it and the children it waited for), the
target's processes started here, toolbench's own process and the children it reaped (its `ss`
calls), or kernel threads (children of kthreadd, pid 2: they carry the cell's own network work).
Each process counts with the children it reaped in the window (its children's times, less what a
child seen at the start had spent before it), so a short-lived program counts once its parent
waited for it: a build's compilers through make, a job through cron, an orphan through init.
That CPU is foreign: work another program did on the machine the cell was measured on. The time a
hypervisor stole from this machine's CPUs is measured beside it.

The machine's total less the known processes is recorded too, not judged. It was the foreign
figure until 2026-12-03, and it holds kernel work done in no task's time: the interrupts an idle
CPU takes and its exits from idle, which grow with the cell's own wake-ups (measured on this
project's VM: 0.9 to 1.3 s over a 10 s cell of ab with keep-alive at 34,000 to 47,000 requests/s,
about 2 µs a request, against 0.2 s at 2,000 to 5,000/s, with nothing else running), so a fast
tool's own traffic read as 8 to 12 % of a core of foreign work. The total is the CPUs' wall time
less their idle, iowait and stolen time (with NOHZ idle, /proc/stat's idle is exact, while user,
system, irq and softirq are ticks sampled at 250 Hz that overcount a CPU waking in short bursts);
irq and softirq are left out of it where CONFIG_IRQ_TIME_ACCOUNTING leaves them out of the tasks'
times. Under heavy steal the processes' own times come out above it (14.35 s against 11.98 s in a
cell at 39 % steal): the two clocks differ, which is why the record keeps both.

Each process's times are ticks of USER_HZ (10 ms): the figure recorded is what is left beyond that
resolution (RESOLUTION_TICKS), never below 0.
"""
from __future__ import annotations

import functools
import gzip
import os
import time
import urllib.parse
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import psutil

from toolbench.hosts import placement
from toolbench.record.observed import CellMachine, ForeignProcess
from toolbench.run.settle import Inherited
from toolbench.servers.process import RunningTarget

KTHREADD = 2  # the parent of every kernel thread
MAX_FOREIGN = 5  # the busiest foreign processes named in a cell's record
# Ticks of 1/USER_HZ the foreign CPU may be off by: each process's times are cut to a tick at both
# scans, a few processes outside the cell (an agent, a shell) each adding its rounding.
RESOLUTION_TICKS = 10
_LOOPBACK = ("localhost", "::1")


@dataclass(frozen=True)
class StatTimes:
    """The machine's CPU time so far, summed over its CPUs, from /proc/stat's "cpu" line."""

    busy_s: float  # user + nice + system (guest time is inside user and nice): ticks
    steal_s: float
    irq_s: float = 0.0  # irq + softirq: in the total only where tasks' times hold them (the module's docstring)
    idle_s: float | None = None  # idle + iowait, exact under NOHZ idle; None: not given
    cpus: int = 0  # the CPUs counted (its cpuN lines)


def stat_times(text: str, hz: int) -> StatTimes:
    """The aggregate line of /proc/stat's text, in seconds (the fields count 1/hz ticks)."""
    found = None
    cpus = 0
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "cpu":
            ticks = [int(v) for v in fields[1:]]
            steal = ticks[7] if len(ticks) > 7 else 0
            irq = sum(ticks[5:7])
            idle = (ticks[3] + ticks[4]) / hz if len(ticks) > 4 else None
            found = ((ticks[0] + ticks[1] + ticks[2]) / hz, steal / hz, irq / hz, idle)
        elif fields and fields[0].startswith("cpu") and fields[0][3:].isdigit():
            cpus += 1
    if found is None:
        raise ValueError("no aggregate cpu line in /proc/stat")
    return StatTimes(*found, cpus=cpus)


def total_s(start: StatTimes, end: StatTimes, wall_s: float, irq_in_tasks: bool) -> float:
    """The CPU time the machine's tasks ran between two reads `wall_s` apart (the module's
    docstring): the CPUs' time less idle and steal; the busy ticks where idle is not given."""
    irq = end.irq_s - start.irq_s
    if start.idle_s is None or end.idle_s is None or not start.cpus or start.cpus != end.cpus:
        return end.busy_s - start.busy_s + (irq if irq_in_tasks else 0.0)
    steal = max(end.steal_s - start.steal_s, 0.0)
    return end.cpus * wall_s - (end.idle_s - start.idle_s) - steal - (0.0 if irq_in_tasks else irq)


@dataclass(frozen=True)
class Proc:
    name: str
    ppid: int
    cpu_s: float  # user + system, its own (not its reaped children's)
    created: float  # psutil's create_time: a pid reused by another process differs
    children_s: float = 0.0  # user + system of the children it waited for


@dataclass(frozen=True)
class Snapshot:
    at: float  # time.monotonic()
    stat: StatTimes
    own_cpu_s: float  # this process, every thread, not its children
    procs: Mapping[int, Proc] = field(default_factory=dict)
    # The children this process reaped: its `ss` calls, and the tool once waited for (whose CPU
    # the tool's own figure already holds).
    reaped_cpu_s: float = 0.0


def hz() -> int:
    return os.sysconf("SC_CLK_TCK")


@functools.lru_cache(maxsize=1)
def irq_in_tasks() -> bool:
    """Whether this kernel charges irq and softirq time to the task they interrupted (built
    without CONFIG_IRQ_TIME_ACCOUNTING), read from its configuration; False when not readable."""
    for path in (Path("/proc/config.gz"), Path(f"/boot/config-{os.uname().release}")):
        try:
            raw = path.read_bytes()
            text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8", "replace")
        except (OSError, EOFError, zlib.error, gzip.BadGzipFile):
            continue
        return config_charges_irq_to_tasks(text)
    return False


def config_charges_irq_to_tasks(config: str) -> bool:
    """A kernel configuration's text: IRQ time accounting said to be off (and no other way of
    accounting it precisely)."""
    lines = set(config.splitlines())
    precise = {"CONFIG_IRQ_TIME_ACCOUNTING=y", "CONFIG_VIRT_CPU_ACCOUNTING_NATIVE=y"}
    return "# CONFIG_IRQ_TIME_ACCOUNTING is not set" in lines and not precise & lines


def snapshot(scan_first: bool) -> Snapshot:
    """The counters now. The process scan takes a few ms of this process's CPU: done before
    the counters at a window's start and after them at its end, it stays outside the window."""
    procs = _scan() if scan_first else None
    own = os.times()
    stat = stat_times(Path("/proc/stat").read_text(), hz())
    at = time.monotonic()
    return Snapshot(at, stat, own.user + own.system, procs if procs is not None else _scan(),
                    own.children_user + own.children_system)


def _scan() -> dict[int, Proc]:
    found = {}
    for p in psutil.process_iter(["name", "ppid", "cpu_times", "create_time"]):
        info = p.info
        times = info.get("cpu_times")
        if times is None or info.get("ppid") is None:
            continue  # gone, or not ours to read
        found[p.pid] = Proc(str(info.get("name") or "?"), int(info["ppid"]), times.user + times.system,
                            float(info.get("create_time") or 0.0), times.children_user + times.children_system)
    return found


def descendants(roots: Iterable[int], procs: Mapping[int, Proc]) -> set[int]:
    """The roots and every process below them, from the parents the scan read."""
    children: dict[int, list[int]] = {}
    for pid, proc in procs.items():
        children.setdefault(proc.ppid, []).append(pid)
    found: set[int] = set()
    todo = [r for r in roots if r]
    while todo:
        pid = todo.pop()
        if pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


@dataclass(frozen=True)
class Figures:
    wall_s: float
    foreign_cpu_pct: float
    steal_pct: float
    foreign: list[ForeignProcess]  # the busiest, at most MAX_FOREIGN
    known_s: float | None = None  # the tool, the target, toolbench, kernel threads; None: the tool's CPU unknown
    total_s: float = 0.0  # what the machine's tasks ran, every CPU (total_s())
    seen_s: float = 0.0  # every process seen outside the known trees, with the children it reaped


def figures(start: Snapshot, end: Snapshot, tool_cpu_s: float | None, tool_pid: int | None,
            target_roots: Iterable[int], tick_s: float, irq_in_tasks: bool = False) -> Figures:
    """The window's foreign CPU and steal, each as a share of one core over its wall time: the
    processes seen outside the known trees, with the children they reaped in the window, less
    the counters' resolution and never below 0. The machine's total and the known are kept
    beside it (the module's docstring)."""
    wall = max(end.at - start.at, 1e-9)
    roots, tools = list(target_roots), [tool_pid] if tool_pid else []
    target = descendants(roots, start.procs) | descendants(roots, end.procs)
    tool = descendants(tools, start.procs) | descendants(tools, end.procs)
    kernel = {pid for pid, p in end.procs.items() if pid == KTHREADD or p.ppid == KTHREADD}
    spent = _deltas(start.procs, end.procs)
    known_elsewhere = sum(v for pid, v in spent.items() if pid in target or pid in kernel)
    others = sorted(((pid, v) for pid, v in spent.items()
                     if v > 0 and pid != os.getpid() and pid not in target | tool | kernel), key=lambda item: -item[1])
    foreign = [ForeignProcess(pid, end.procs[pid].name, round(v / wall * 100, 1)) for pid, v in others[:MAX_FOREIGN]]
    seen_s = sum(v for _, v in others)
    total = total_s(start.stat, end.stat, wall, irq_in_tasks)
    steal_pct = round(max(end.stat.steal_s - start.stat.steal_s, 0.0) / wall * 100, 1)
    known = None
    if tool_cpu_s is not None:
        # Children reaped in the window beyond the tool (toolbench's `ss` calls, gone before the
        # scan) are toolbench's own work; the tool, if reaped in it, is in tool_cpu_s already.
        reaped = max(end.reaped_cpu_s - start.reaped_cpu_s - tool_cpu_s, 0.0)
        known = tool_cpu_s + known_elsewhere + (end.own_cpu_s - start.own_cpu_s) + reaped
    left = max(seen_s - RESOLUTION_TICKS * tick_s, 0.0)
    return Figures(wall, round(left / wall * 100, 1), steal_pct, foreign, known, total, seen_s)


def _deltas(before: Mapping[int, Proc], after: Mapping[int, Proc]) -> dict[int, float]:
    """Each process's CPU over the window, its own and its reaped children's: the whole of it
    for one started meanwhile (its pid unseen before, or seen as another process). A child seen
    at the start and gone at the end had spent some of its CPU before the window: that part is
    taken off its parent's reaped time. A process that ended inside the window is seen through
    the parent that waited for it."""
    before_window: dict[int, float] = {}  # by parent: its children's CPU before the window, gone since
    for pid, was in before.items():
        if not _same(was, after.get(pid)):
            before_window[was.ppid] = before_window.get(was.ppid, 0.0) + was.cpu_s + was.children_s
    out = {}
    for pid, proc in after.items():
        was = before.get(pid)
        if was is not None and _same(was, proc):
            own = proc.cpu_s - was.cpu_s
            reaped = proc.children_s - was.children_s - before_window.get(pid, 0.0)
        else:
            own, reaped = proc.cpu_s, proc.children_s
        out[pid] = max(own, 0.0) + max(reaped, 0.0)
    return out


def _same(was: Proc, now: Proc | None) -> bool:
    """The same process at both scans: its pid not reused by another (created apart)."""
    return now is not None and abs(now.created - was.created) < 0.05


def target_roots(target: RunningTarget) -> list[int]:
    """The processes of a target on this machine: those toolbench started (their groups'
    leaders), or for a target it did not start whose URL is on loopback, what listens on its port.
    A target on another machine has none here."""
    if target.sampler is not None:
        return []
    started = [p for p in (target.pid, *target.pids) if p]
    if started:
        return list(dict.fromkeys(started))
    host = urllib.parse.urlsplit(target.base_url).hostname or ""
    port = target.port
    if port is None or not (host in _LOOPBACK or host.startswith("127.")):
        return []
    try:
        return sorted({c.pid for c in psutil.net_connections("tcp")
                       if c.pid and c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port})
    except (psutil.Error, OSError):
        return []


class Watch:
    """The machine around one run of a tool here: start() before the tool starts, started(pid)
    once it runs, stop() as soon as it ended; then figures(tool_cpu_s)."""

    def __init__(self, target: RunningTarget) -> None:
        self._target = target
        self._roots: list[int] = []
        self._start: Snapshot | None = None
        self._end: Snapshot | None = None
        self.tool_pid: int | None = None
        self.tool_cpus: list[int] | None = None

    def start(self) -> None:
        self._roots = target_roots(self._target)
        self._start = snapshot(scan_first=True)

    def started(self, pid: int) -> None:
        self.tool_pid = pid
        self.tool_cpus = placement.affinity_of(pid)

    def stop(self) -> None:
        if self._start is not None and self._end is None:
            self._end = snapshot(scan_first=False)

    def figures(self, tool_cpu_s: float | None) -> Figures | None:
        if self._start is None or self._end is None:
            return None
        return figures(self._start, self._end, tool_cpu_s, self.tool_pid, self._roots, 1.0 / hz(), irq_in_tasks())


def disturbance(foreign_cpu_pct: float | None, steal_pct: float | None, foreign: list[ForeignProcess],
                foreign_limit_pct: float | None, steal_limit_pct: float | None) -> str | None:
    """Why a cell is disturbed, or None: foreign work or steal beyond the scenario's limits
    (MethodSpec.foreign_cpu_pct, steal_pct; a limit None is not judged). A figure not measured
    disturbs nothing."""
    reasons = []
    if foreign_cpu_pct is not None and foreign_limit_pct is not None and foreign_cpu_pct > foreign_limit_pct:
        named = ", ".join(f"{p.name} pid {p.pid} {p.cpu_pct:.0f} %" for p in foreign[:3])
        reasons.append(f"foreign work took {foreign_cpu_pct:.0f} % of one core" + (f" ({named})" if named else "")
                       + f", over the limit of {foreign_limit_pct:g} %")
    if steal_pct is not None and steal_limit_pct is not None and steal_pct > steal_limit_pct:
        reasons.append(f"the hypervisor stole {steal_pct:.0f} % of one core, over the limit of {steal_limit_pct:g} %")
    return "; ".join(reasons) or None


def cell_machine(found: Figures | None, inherited: Inherited | None, tool_cpus: list[int] | None,
                 disturbed_by: str | None) -> CellMachine:
    """A cell's record of the machine; a figure not measured (a remote generator) is None."""
    return CellMachine(
        foreign_cpu_pct=found.foreign_cpu_pct if found else None, steal_pct=found.steal_pct if found else None,
        foreign=list(found.foreign) if found else [],
        time_wait_at_start=inherited.time_wait_at_start if inherited else None,
        settle_s=inherited.settle_s if inherited else None, position=inherited.position if inherited else None,
        tool_cpus=tool_cpus, disturbed_by=disturbed_by,
        cpu_total_s=round(found.total_s, 3) if found else None,
        cpu_known_s=round(found.known_s, 3) if found and found.known_s is not None else None,
        cpu_seen_s=round(found.seen_s, 3) if found else None)


@dataclass(frozen=True)
class Waited:
    quiet: bool
    waited_s: float
    last: Figures | None  # the last sample


def wait_quiet(foreign_limit_pct: float | None, steal_limit_pct: float | None, bound_s: float = 60.0,
               sample_s: float = 1.0) -> Waited:
    """Samples the machine (nothing of the run's running: every target is stopped between the
    run's cells and its retries) until a sample of `sample_s` is under both limits, at most
    `bound_s`."""
    began = time.monotonic()
    last = None
    while True:
        start = snapshot(scan_first=True)
        time.sleep(sample_s)
        last = figures(start, snapshot(scan_first=False), 0.0, None, [], 1.0 / hz(), irq_in_tasks())
        if disturbance(last.foreign_cpu_pct, last.steal_pct, [], foreign_limit_pct, steal_limit_pct) is None:
            return Waited(True, time.monotonic() - began, last)
        if time.monotonic() - began + sample_s > bound_s:
            return Waited(False, time.monotonic() - began, last)
