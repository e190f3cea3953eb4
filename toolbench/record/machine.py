"""The machine a run was measured on, as the manifest records it: the method (the order of the
cells, its seed, the settle and the disturbance limits), where the target's, the generator's and
toolbench's own processes ran (the placement asked and each process's affinity as the kernel
gave it), what `toolbench system check` found before the run, and the calibration taken before
the first cell and after the last. What one cell saw of the machine is `observed.CellMachine`."""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Method:
    order: str  # "shuffled": each repetition's cells in a random order from `seed`; "as-written"
    seed: int | None  # None: the order is the file's
    repetitions: int
    settle_max_s: float  # the longest wait before a cell for the previous one's connections to close
    foreign_cpu_pct: float | None  # a cell with more foreign CPU than this (% of one core) is disturbed
    steal_pct: float | None  # ... or with this much stolen by the hypervisor; None: not judged
    target_warmup_s: float | None = None  # the unmeasured load on each target before its first cell


@dataclass(frozen=True)
class PlacedProcess:
    """One process and the CPUs it was allowed, read from the kernel once it ran."""

    role: str  # "target", "tool", "toolbench"
    pid: int
    name: str
    cpus: list[int]
    host: str = "local"


@dataclass(frozen=True)
class Placement:
    """The placement asked (`placement:` in the scenario) and what it became on each host.
    A side's CPUs None: not placed, every CPU its host has."""

    asked: str  # none | split | the explicit lists
    target_cpus: list[int] | None = None
    generator_cpus: list[int] | None = None
    toolbench_cpus: list[int] | None = None
    target_host: str = "local"
    generator_host: str = "local"
    cpuset: str | None = None  # the cgroup cpuset the sides were put in; None: affinity only
    processes: list[PlacedProcess] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be placed, and why


@dataclass(frozen=True)
class SystemFinding:
    """One thing that makes a machine noisy, as `toolbench system check` found it."""

    name: str  # "load", "foreign_cpu", "governor", "boost", "smt", "steal", "swap", "thp", ...
    found: str | None  # None: not visible on this machine (no cpufreq in a VM, say)
    wanted: str | None
    why: str
    ok: bool | None  # None: not visible, so neither
    note: str | None = None  # why it is not visible here (ok None), or what else was seen


@dataclass(frozen=True)
class SystemCheck:
    checked_at: str
    host: str
    findings: list[SystemFinding] = field(default_factory=list)

    @property
    def noisy(self) -> list[SystemFinding]:
        return [f for f in self.findings if f.ok is False]


@dataclass(frozen=True)
class Reference:
    """The calibration's fixed reference: a CPU-bound loop timed several times on the
    generator's CPUs, so that a machine that slowed down (or sped up) during the run shows."""

    at: str  # ISO 8601, UTC
    hashed_mb_per_s: float  # the median of the samples: SHA-256 throughput, MB (10^6 bytes) per second
    spread_pct: float  # half the interquartile range of the samples over their median
    samples: int
    cpus: list[int] | None = None  # where it ran; None: every CPU


@dataclass(frozen=True)
class Calibration:
    before: Reference | None = None
    after: Reference | None = None

    @property
    def drift_pct(self) -> float | None:
        """After over before, as a change in percent; None without both."""
        if self.before is None or self.after is None or not self.before.hashed_mb_per_s:
            return None
        return (self.after.hashed_mb_per_s / self.before.hashed_mb_per_s - 1) * 100

    @property
    def drifted(self) -> bool:
        """The machine's speed moved beyond the reference's own noise (the larger of the two spreads)."""
        drift = self.drift_pct
        if drift is None or self.before is None or self.after is None:
            return False
        return abs(drift) > max(self.before.spread_pct, self.after.spread_pct, 1.0)


@dataclass(frozen=True)
class MachineRecord:
    method: Method
    placement: Placement | None = None
    system: SystemCheck | None = None  # None: the check was not run (`--no-system-check`)
    calibration: Calibration | None = None  # None: `calibrate: false`
