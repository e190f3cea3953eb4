"""`toolbench system check`: what makes this machine noisy for a measurement, each thing with
found / wanted / why. Read from /proc and /sys of this machine only; a thing this machine does
not show (no cpufreq in a VM, no topology) is "not visible" (ok None), never an error.

Of what pyperf's `system show` looks at, the CPU frequency (governor, boost) applies; ASLR, the
perf sampling rate, isolcpus/rcu_nocbs and the power cable do not move a load test's figures
enough to be worth a line, and IRQ affinity matters only to a NIC's interrupts, which loopback
traffic does not raise. What pyperf does not look at but a load test feels is here too: other
processes' CPU, the recent load, the hypervisor's steal, swap and transparent huge pages.

Each finding is decided by a pure function of what was read, so that layouts this machine does
not have (cpufreq, SMT siblings) are tested on their recorded text."""
from __future__ import annotations

import contextlib
import datetime
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from toolbench.hosts.placement import parse_cpus
from toolbench.record.machine import SystemCheck, SystemFinding
from toolbench.scenario.method import MethodSpec, cpu_list

CPU_SYS = Path("/sys/devices/system/cpu")
THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")
BUSIEST = 3  # the foreign processes named in the finding


@dataclass(frozen=True)
class Busy:
    """A foreign process and its CPU over the sample, as a share of one core."""

    name: str
    pid: int
    cpu_pct: float


def check(host_label: str = "local", sample_s: float = 1.0, target_cpus: list[int] | None = None,
          generator_cpus: list[int] | None = None, *, foreign_cpu_pct: float = MethodSpec.foreign_cpu_pct,
          steal_pct: float = MethodSpec.steal_pct) -> SystemCheck:
    """This machine, sampled for `sample_s`. The limits default to the ones a cell is
    `disturbed` at, so that a machine this check calls quiet is one a run calls quiet too."""
    busy, steal_ticks, elapsed_s = _sample(sample_s)
    online = os.cpu_count() or 1
    findings = [
        foreign_finding(busy, foreign_cpu_pct),
        load_finding(os.getloadavg()[0], online),
        governor_finding(_governors()),
        boost_finding(_read(CPU_SYS / "cpufreq" / "boost"), _read(CPU_SYS / "intel_pstate" / "no_turbo")),
        smt_finding(_siblings(), target_cpus, generator_cpus),
        steal_finding(steal_ticks, elapsed_s, os.sysconf("SC_CLK_TCK"), steal_pct),
        swap_finding(_read(Path("/proc/meminfo"))),
        thp_finding(_read(THP_ENABLED)),
    ]
    at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    return SystemCheck(checked_at=at, host=host_label, findings=findings)


# what was read -> a finding ----------------------------------------------------------------
def foreign_finding(busy: list[Busy], limit_pct: float) -> SystemFinding:
    total = sum(b.cpu_pct for b in busy)
    named = [b for b in sorted(busy, key=lambda b: -b.cpu_pct)[:BUSIEST] if b.cpu_pct >= 0.5]
    names = ", ".join(f"{b.name} pid {b.pid} {b.cpu_pct:.0f} %" for b in named)
    return SystemFinding(
        name="foreign_cpu", found=f"{total:.0f} % of one core" + (f" ({names})" if names else ""),
        wanted=f"< {limit_pct:g} % of one core", ok=total < limit_pct,
        why="other processes' CPU (not toolbench's, not kernel threads) competes with the target and "
            "the generator for the CPUs they measure on; a cell with this much is `disturbed`")


def load_finding(load1: float, cpus: int) -> SystemFinding:
    bar = max(0.5, cpus / 4)
    return SystemFinding(
        name="load", found=f"{load1:.2f} (1-minute average, {cpus} CPUs)", wanted=f"< {bar:g}", ok=load1 < bar,
        why="runnable tasks averaged over the last minute: above a quarter of the CPUs (at least half "
            "of one), other work ran or just ended; it lags, so foreign_cpu is the present, this the past")


def governor_finding(governors: dict[int, str]) -> SystemFinding:
    why = ("a governor other than performance moves the clock with the load, so a cell's figure "
           "depends on how busy the CPU was just before")
    if not governors:
        return SystemFinding(name="governor", found=None, wanted="performance", why=why, ok=None,
                             note="no cpufreq in /sys (typical of a VM: the host sets the frequency)")
    by_value: dict[str, list[int]] = {}
    for cpu, value in sorted(governors.items()):
        by_value.setdefault(value, []).append(cpu)
    found = "; ".join(f"{value} on CPU {cpu_list(tuple(cpus))}" for value, cpus in by_value.items())
    return SystemFinding(name="governor", found=found, wanted="performance", why=why,
                         ok=set(by_value) == {"performance"})


def boost_finding(boost: str | None, no_turbo: str | None) -> SystemFinding:
    """`boost`: cpufreq/boost (1 on); `no_turbo`: intel_pstate/no_turbo (1 off)."""
    why = "boost raises the clock while the chip is cool and drops it as it heats: the same cell measures faster first"
    if boost in ("0", "1"):
        on, source = boost == "1", f"cpufreq/boost {boost}"
    elif no_turbo in ("0", "1"):
        on, source = no_turbo == "0", f"intel_pstate/no_turbo {no_turbo}"
    else:
        return SystemFinding(name="boost", found=None, wanted="off", why=why, ok=None,
                             note="neither cpufreq/boost nor intel_pstate/no_turbo here")
    return SystemFinding(name="boost", found=f"{'on' if on else 'off'} ({source})", wanted="off", why=why, ok=not on)


def smt_finding(siblings: dict[int, list[int]], target: list[int] | None,
                generator: list[int] | None) -> SystemFinding:
    """`siblings`: each CPU's thread_siblings_list (itself included)."""
    why = "two hardware threads of one core share its execution units: a target and a generator on them slow each other"
    wanted = "the target's and the generator's CPUs on separate cores"
    if not target or not generator:
        return SystemFinding(name="smt", found=None, wanted=wanted, why=why, ok=None,
                             note="no placement to compare (the target's and the generator's CPUs not given)")
    if not all(cpu in siblings for cpu in target):
        return SystemFinding(name="smt", found=None, wanted=wanted, why=why, ok=None,
                             note="no CPU topology in /sys to compare with")
    shared = sorted({(t, g) for t in target for g in siblings[t] if g in generator})
    found = (", ".join(f"CPU {t} (target) and {g} (generator) on one core" for t, g in shared) if shared else
             f"separate cores (target {cpu_list(tuple(target))}, generator {cpu_list(tuple(generator))})")
    return SystemFinding(name="smt", found=found, wanted=wanted, why=why, ok=not shared)


def steal_finding(ticks: int | None, elapsed_s: float, hz: int, limit_pct: float) -> SystemFinding:
    why = ("time the hypervisor gave this VM's CPUs to other guests: the target and the generator "
           "were not running; the bar is the one a cell is `disturbed` at (the kernel counts in "
           f"{1000 // hz} ms ticks, so over 1 s one tick is {100 / hz:g} %)")
    wanted = f"< {limit_pct:g} % of one core"
    if ticks is None or elapsed_s <= 0:
        return SystemFinding(name="steal", found=None, wanted=wanted, why=why, ok=None,
                             note="/proc/stat has no steal column here")
    pct = ticks / hz / elapsed_s * 100
    return SystemFinding(name="steal", found=f"{pct:.1f} % of one core over {elapsed_s:.1f} s", wanted=wanted,
                         why=why, ok=pct < limit_pct)


def swap_finding(meminfo: str | None) -> SystemFinding:
    why = "a page swapped out and touched again during a cell stalls it on the disk"
    fields = dict(re.findall(r"^(\w+):\s+(\d+) kB", meminfo or "", re.M))
    if "SwapTotal" not in fields or "SwapFree" not in fields:
        return SystemFinding(name="swap", found=None, wanted="none in use", why=why, ok=None,
                             note="/proc/meminfo says nothing of swap")
    total_kb, used_kb = int(fields["SwapTotal"]), int(fields["SwapTotal"]) - int(fields["SwapFree"])
    found = "no swap" if not total_kb else f"{used_kb / 1024:.0f} MiB of {total_kb / 1024:.0f} MiB in use"
    return SystemFinding(name="swap", found=found, wanted="none in use", why=why, ok=used_kb <= 0)


def thp_finding(enabled: str | None) -> SystemFinding:
    why = ("with `always`, khugepaged compacts every process's memory into huge pages in the "
           "background and a page fault may stall on compaction: pauses that are not the load's")
    mode = thp_mode(enabled)
    if mode is None:
        return SystemFinding(name="thp", found=None, wanted="madvise or never", why=why, ok=None,
                             note=f"no {THP_ENABLED} here")
    return SystemFinding(name="thp", found=mode, wanted="madvise or never", why=why, ok=mode in ("madvise", "never"))


def thp_mode(enabled: str | None) -> str | None:
    """"always [madvise] never" -> "madvise"."""
    match = re.search(r"\[(\w+)\]", enabled or "")
    return match.group(1) if match else None


# reading this machine --------------------------------------------------------------------
def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _governors() -> dict[int, str]:
    found: dict[int, str] = {}
    for path in CPU_SYS.glob("cpu[0-9]*/cpufreq/scaling_governor"):
        value = _read(path)
        if value is not None and value.strip():
            found[int(path.parent.parent.name[3:])] = value.strip()
    return found


def _siblings() -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for path in CPU_SYS.glob("cpu[0-9]*/topology/thread_siblings_list"):
        text = _read(path)
        with contextlib.suppress(ValueError):  # an unreadable list: that CPU's topology is not visible
            found[int(path.parent.parent.name[3:])] = list(parse_cpus(text or ""))
    return found


def _steal_ticks() -> int | None:
    """The aggregate steal of /proc/stat (its 8th column), in ticks."""
    line = (_read(Path("/proc/stat")) or "").partition("\n")[0].split()
    return int(line[8]) if len(line) > 8 and line[0] == "cpu" and line[8].isdigit() else None


def _sample(sample_s: float) -> tuple[list[Busy], int | None, float]:
    """Foreign processes' CPU (psutil's cpu_times, user + system, over the sample) and the
    steal ticks. Foreign: not this process nor its descendants, not a kernel thread (kthreadd,
    pid 2, and its children: they serve everyone's I/O). A process that starts during the sample
    counts whole; one that ends during it is missed."""
    steal0, before, start = _steal_ticks(), _cpu_by_process(), time.monotonic()
    time.sleep(sample_s)
    after, elapsed_s, steal1 = _cpu_by_process(), time.monotonic() - start, _steal_ticks()
    busy = []
    for key, (name, cpu_s) in after.items():
        delta = cpu_s - before[key][1] if key in before else cpu_s
        if delta > 0:
            busy.append(Busy(name=name, pid=key[0], cpu_pct=delta / elapsed_s * 100))
    ticks = steal1 - steal0 if steal0 is not None and steal1 is not None else None
    return busy, ticks, elapsed_s


def _cpu_by_process() -> dict[tuple[int, float], tuple[str, float]]:
    """(pid, start time) -> (name, user + system seconds), for the foreign processes."""
    me = psutil.Process()
    own = {me.pid} | {child.pid for child in me.children(recursive=True)}
    found: dict[tuple[int, float], tuple[str, float]] = {}
    for proc in psutil.process_iter(["ppid", "name", "cpu_times", "create_time"]):
        info = proc.info
        if proc.pid in own or proc.pid in (0, 2) or info["ppid"] == 2 or info["cpu_times"] is None:
            continue
        times = info["cpu_times"]
        found[(proc.pid, info["create_time"] or 0.0)] = (info["name"] or "?", times.user + times.system)
    return found
