"""`toolbench system tune` and `system reset`: set what `system check` wants where this machine
lets us (root, a writable /sys), and put back exactly what was changed.

Like pyperf's `system tune`: every CPU's cpufreq governor to performance (before boost: a
governor change resets intel_pstate's no_turbo) and boost/turbo off. Unlike it, transparent huge
pages too: `always` becomes `madvise`, not `never`, so that a program that asks for huge pages
(a JVM with -XX:+UseTransparentHugePages) still gets them while nothing else is compacted behind
its back; `madvise` and `never` are left alone. pyperf's reset writes fixed values back; this one
restores what was there, from a state file written as each change is made.

The state file is read back as root, so it is untrusted: reset writes only to the knobs tune
knows (ALLOWED), and only short plain words."""
from __future__ import annotations

import errno
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from toolbench.errors import HostError
from toolbench.hosts.system import thp_mode

APPLIED, ALREADY, NOT_SETTABLE, NOT_VISIBLE = "applied", "already so", "not settable", "not visible"
RESTORED, NOT_RESTORED, GONE = "restored", "not restored", "gone"
STATE_VERSION = 1
MAX_STATE_BYTES = 1 << 16
GOVERNOR = "sys/devices/system/cpu/cpu{}/cpufreq/scaling_governor"
BOOST = "sys/devices/system/cpu/cpufreq/boost"
NO_TURBO = "sys/devices/system/cpu/intel_pstate/no_turbo"
THP = "sys/kernel/mm/transparent_hugepage/enabled"
BOOT_ID = "proc/sys/kernel/random/boot_id"
ALLOWED = re.compile(r"sys/devices/system/cpu/cpu\d{1,4}/cpufreq/scaling_governor|"
                     + "|".join(re.escape(p) for p in (BOOST, NO_TURBO, THP)))
VALUE = re.compile(r"[a-z0-9_]{1,32}")


class SystemTuneError(HostError):
    """The state file cannot be trusted or written: nothing was restored from it."""


@dataclass(frozen=True)
class TuneStep:
    """One knob: what it was, what tune (or reset) wanted, and what happened."""

    name: str  # "governor cpu0", "boost", "no_turbo", "thp"
    path: str  # under the root: "sys/kernel/mm/transparent_hugepage/enabled"
    before: str | None  # None: not visible here
    wanted: str | None
    outcome: str  # APPLIED, ALREADY, NOT_SETTABLE, NOT_VISIBLE; reset: RESTORED, ALREADY, NOT_RESTORED, GONE
    reason: str = ""  # why not settable, or not visible


def state_file() -> Path:
    """$XDG_STATE_HOME/toolbench/system-tune.json, else ~/.local/state/...: a relative
    $XDG_STATE_HOME is invalid by the spec and ignored, as toolsdir does for the data home."""
    state = os.environ.get("XDG_STATE_HOME", "")
    base = Path(state) if os.path.isabs(state) else Path.home() / ".local" / "state"
    return base / "toolbench" / "system-tune.json"


def tune(state_path: Path, *, root: Path = Path("/")) -> list[TuneStep]:
    """Each knob set to what `system check` wants, where it can be; the value each change
    replaced is in `state_path` before the next knob is touched. A second tune keeps the first's
    values, so that reset still goes back to the machine as it was before either."""
    saved: dict[str, str] = {}
    if state_path.exists():
        saved, boot = _load(state_path)
        if boot != _boot_id(root):  # a tune before a restart: those values are gone with it
            saved = {}
    steps: list[TuneStep] = []
    for name, path, wanted in _knobs(root):
        step = _set(root, name, path, wanted)
        if step.outcome == APPLIED and path not in saved:
            assert step.before is not None
            saved[path] = step.before
            _save(state_path, root, saved)
        steps.append(step)
    return steps


def reset(state_path: Path, *, root: Path = Path("/")) -> list[TuneStep] | None:
    """What tune changed, put back; None: no state file, nothing to undo. The file is removed
    once everything is back; what could not be put back stays in it, for another try."""
    if not state_path.exists():
        return None
    saved, boot = _load(state_path)
    if boot != _boot_id(root):
        state_path.unlink()
        return [TuneStep(_name(p), p, None, v, GONE, "the machine restarted since tune: its settings are its boot's "
                         "again") for p, v in saved.items()]
    steps = [_set(root, _name(path), path, before, restoring=True) for path, before in saved.items()]
    left = {s.path: saved[s.path] for s in steps if s.outcome == NOT_RESTORED}
    if left:
        _save(state_path, root, left)
    else:
        state_path.unlink()
    return steps


def _knobs(root: Path) -> list[tuple[str, str, str | None]]:
    """(name, path, wanted) in the order they are set; wanted None: decided from the value."""
    cpus = sorted(int(p.parent.parent.name[3:]) for p in (root / "sys/devices/system/cpu").glob(
        "cpu[0-9]*/cpufreq/scaling_governor"))
    knobs: list[tuple[str, str, str | None]] = [(f"governor cpu{cpu}", GOVERNOR.format(cpu), "performance")
                                                for cpu in cpus]
    if not cpus:
        knobs.append(("governor", GOVERNOR.format("*"), "performance"))
    if (root / NO_TURBO).exists():
        knobs.append(("no_turbo", NO_TURBO, "1"))
    else:
        knobs.append(("boost", BOOST, "0"))
    knobs.append(("thp", THP, None))
    return knobs


def _name(path: str) -> str:
    if path.endswith("scaling_governor"):
        return f"governor {path.split('/')[4]}"
    return {BOOST: "boost", NO_TURBO: "no_turbo", THP: "thp"}.get(path, path)


def _set(root: Path, name: str, path: str, wanted: str | None, restoring: bool = False) -> TuneStep:
    file = root / path
    before = _value(file, path)
    if before is None:
        return TuneStep(name, path, None, wanted, NOT_VISIBLE, f"no /{path} here")
    if wanted is None:  # THP: only `always` is changed
        wanted = "madvise" if before == "always" else before
    if before == wanted:
        return TuneStep(name, path, before, wanted, ALREADY)
    failed = NOT_RESTORED if restoring else NOT_SETTABLE
    refused = _refused(file, path, wanted)
    if refused:
        return TuneStep(name, path, before, wanted, failed, refused)
    try:
        file.write_text(wanted + "\n")
    except OSError as exc:
        return TuneStep(name, path, before, wanted, failed, _why_not(exc))
    now = _value(file, path)
    if now != wanted:  # some sysfs files take a write and keep their value
        return TuneStep(name, path, before, wanted, failed, f"the kernel kept {now!r}")
    return TuneStep(name, path, before, wanted, RESTORED if restoring else APPLIED)


def _value(file: Path, path: str) -> str | None:
    try:
        text = file.read_text()
    except OSError:
        return None
    return thp_mode(text) if path == THP else text.strip()


def _refused(file: Path, path: str, wanted: str) -> str:
    """Why the kernel would refuse `wanted` without trying: a governor it does not offer."""
    if not path.endswith("scaling_governor"):
        return ""
    offered = (file.parent / "scaling_available_governors")
    try:
        names = offered.read_text().split()
    except OSError:
        return ""
    return "" if wanted in names else f"{wanted} is not among this CPU's governors ({' '.join(names)})"


def _why_not(exc: OSError) -> str:
    if exc.errno == errno.EROFS:
        return "read-only file system (a container's /sys?)"
    if exc.errno in (errno.EACCES, errno.EPERM) and os.geteuid() != 0:
        return "needs root (sudo toolbench system tune)"
    return exc.strerror or str(exc)


def _boot_id(root: Path) -> str | None:
    try:
        return (root / BOOT_ID).read_text().strip() or None
    except OSError:
        return None


def _load(state_path: Path) -> tuple[dict[str, str], str | None]:
    """The state file's changes, each checked (a path tune knows, a plain word), and the boot
    they were made in."""
    try:
        with state_path.open("rb") as file:
            data = json.loads(file.read(MAX_STATE_BYTES))
    except (OSError, ValueError) as exc:
        raise SystemTuneError(f"{state_path}: not a state file of `toolbench system tune` ({exc})") from None
    if not isinstance(data, dict) or data.get("version") != STATE_VERSION or not isinstance(data.get("changed"), dict):
        raise SystemTuneError(f"{state_path}: not a state file of `toolbench system tune` (version {STATE_VERSION})")
    if data.get("boot_id") is not None and not isinstance(data["boot_id"], str):
        raise SystemTuneError(f"{state_path}: boot_id: expected a string")
    changed: dict[str, str] = {}
    for path, before in data["changed"].items():
        if not ALLOWED.fullmatch(path) or not isinstance(before, str) or not VALUE.fullmatch(before):
            raise SystemTuneError(f"{state_path}: {path!r}: not a knob `system tune` sets, or not a plain value; "
                                  "nothing was restored")
        changed[path] = before
    return changed, data.get("boot_id")


def _save(state_path: Path, root: Path, changed: dict[str, str]) -> None:
    """Written whole to a fresh file beside it, then renamed over it: never half a state."""
    data = {"version": STATE_VERSION, "boot_id": _boot_id(root), "changed": changed}
    fresh = state_path.with_name(f".{state_path.name}.{os.getpid()}")
    try:
        state_path.parent.mkdir(parents=True, exist_ok=True)
        fresh.unlink(missing_ok=True)
        fd = os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "w") as out:
            json.dump(data, out, indent=2)
        os.replace(fresh, state_path)
    except OSError as exc:
        fresh.unlink(missing_ok=True)
        raise SystemTuneError(f"{state_path}: cannot write the state of `system tune`: {exc}") from None
