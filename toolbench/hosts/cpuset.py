"""cgroup cpusets for the sides of a run on this machine, where the kernel lets toolbench make
them: a group for the run under toolbench's own cpuset group, and a child per side (`target`,
`generator`) with its CPUs. A process joins its side's group before it runs its program
(toolbench.hosts.placement.Pin), so that whatever it forks is held to the same CPUs even if it
sets its own affinity (a cpuset bounds sched_setaffinity; an affinity alone can be widened).
cgroup v1's cpuset hierarchy first, then v2's cpuset controller; where neither can be used
(no controller, not root, a v2 group that holds processes) the placement is affinity only, and
`make` says why. Groups are removed at the end of the run, and groups an earlier toolbench left
behind (its process gone) when the next run makes its own."""
from __future__ import annotations

import contextlib
import itertools
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping

from toolbench.scenario.method import cpu_list

V1_ROOT = Path("/sys/fs/cgroup/cpuset")
V2_ROOT = Path("/sys/fs/cgroup")
SELF_CGROUP = Path("/proc/self/cgroup")
REMOVE_WAIT_S = 2.0  # a process killed at the run's end may take a moment to leave its group
_OURS = re.compile(r"^toolbench-(\d+)-\d+$")
_serial = itertools.count(1)


@dataclass(frozen=True)
class Cpusets:
    run_group: Path
    sides: dict[str, Path] = field(default_factory=dict)

    def procs(self, side: str) -> str | None:
        """The cgroup.procs file a process of `side` writes its pid into; None: no group for it."""
        group = self.sides.get(side)
        return str(group / "cgroup.procs") if group is not None else None


def own_group(text: str, controller: str | None) -> str | None:
    """This process's group from /proc/self/cgroup: the line of `controller` (v1), or the
    unified line `0::/path` (v2, `controller` None). Pure, for recorded files."""
    for line in text.splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        if controller is None and parts[0] == "0" and parts[1] == "":
            return parts[2]
        if controller is not None and controller in parts[1].split(","):
            return parts[2]
    return None


def make(sides: Mapping[str, tuple[int, ...]]) -> tuple[Cpusets | None, str]:
    """A group per side. Returns the groups and where they are, or None and why there are none."""
    if not sides:
        return None, "no side placed on this machine"
    try:
        text = SELF_CGROUP.read_text()
    except OSError as exc:
        return None, f"cannot read {SELF_CGROUP}: {exc.strerror}"
    v1 = own_group(text, "cpuset")
    if v1 is not None and (V1_ROOT / "cpuset.cpus").exists():
        return make_in(V1_ROOT / v1.lstrip("/"), sides, v2=False)
    v2 = own_group(text, None)
    if v2 is not None and (V2_ROOT / "cgroup.controllers").exists():
        return make_in(V2_ROOT / v2.lstrip("/"), sides, v2=True)
    return None, "no cgroup cpuset controller here"


def make_in(base: Path, sides: Mapping[str, tuple[int, ...]], v2: bool) -> tuple[Cpusets | None, str]:
    """The groups under `base`, a cgroup of the v1 cpuset hierarchy or (`v2`) of the unified one."""
    remove_stale(base)
    run = base / f"toolbench-{os.getpid()}-{next(_serial)}"
    made = Cpusets(run)
    try:
        if v2:
            if "cpuset" not in (base / "cgroup.controllers").read_text().split():
                return None, f"the cpuset controller is not enabled for {base}"
            _write(base / "cgroup.subtree_control", "+cpuset")  # refused (EBUSY) where base holds processes
        mems = "" if v2 else _mems(base)
        run.mkdir()
        everything = tuple(sorted({cpu for cpus in sides.values() for cpu in cpus}))
        _configure(run, everything, mems)
        if v2:
            _write(run / "cgroup.subtree_control", "+cpuset")
        for side, cpus in sides.items():
            (run / side).mkdir()
            made.sides[side] = run / side
            _configure(run / side, cpus, mems)
    except OSError as exc:
        remove(made)
        return None, f"cannot make a cpuset under {base}: {exc.strerror or exc}"
    return made, str(run)


def _mems(base: Path) -> str:
    for name in ("cpuset.effective_mems", "cpuset.mems"):
        with contextlib.suppress(OSError):
            value = (base / name).read_text().strip()
            if value:
                return value
    return "0"


def _configure(group: Path, cpus: tuple[int, ...], mems: str) -> None:
    # v1 refuses a task in a group whose cpus or mems are empty: both are written before any joins.
    _write(group / "cpuset.cpus", cpu_list(cpus))
    if mems:
        _write(group / "cpuset.mems", mems)


def _write(path: Path, value: str) -> None:
    fd = os.open(path, os.O_WRONLY)
    try:
        os.write(fd, value.encode())
    finally:
        os.close(fd)


def remove(sets: Cpusets) -> str | None:
    """Removes the groups (a group goes once its last process has left); what is left, said."""
    groups = [*sets.sides.values(), sets.run_group]
    deadline = time.monotonic() + REMOVE_WAIT_S
    left = groups
    while True:
        left = [g for g in left if g.exists() and not _rmdir(g)]
        if not left or time.monotonic() >= deadline:
            break
        time.sleep(0.05)
    return f"cpuset groups not removed (processes still in them): {', '.join(map(str, left))}" if left else None


def _rmdir(group: Path) -> bool:
    try:
        group.rmdir()
        return True
    except FileNotFoundError:
        return True
    except OSError:
        return False


def remove_stale(base: Path) -> None:
    """Groups of an earlier toolbench whose process is gone, left by a run that was killed."""
    with contextlib.suppress(OSError):
        for group in base.iterdir():
            owner = _OURS.match(group.name)
            if owner is None or not group.is_dir() or _alive(int(owner.group(1))):
                continue
            for child in (c for c in group.iterdir() if c.is_dir()):
                _rmdir(child)
            _rmdir(group)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
