"""Processes that die with toolbench, however toolbench ends.

Every target and tool gets a session of its own, so that its whole tree is one process
group, and PR_SET_PDEATHSIG: the kernel kills it when the thread that started it ends,
kill -9 included. The other members of a group (nginx's workers, forked by their master)
get no such signal, so a watchdog process is told of every group and kills what is left
of them when its pipe from toolbench closes, which the kernel does however toolbench ended.
Each start is also written to the run folder (pid, process group, create time), so that
`--resume` stops what a killed run left even when the watchdog was killed too; a process
whose create time differs is another one that got a reused pid, and is never touched. A run
folder may come from anyone, so its ledger proves nothing by itself: a group is killed only
while the leader it names is still there, is the process recorded, and still leads it.
"""
from __future__ import annotations

import contextlib
import contextvars
import ctypes
import functools
import json
import os
import signal
import subprocess
import sys
import threading
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator

import psutil

from toolbench.errors import Notice
from toolbench.record import runfiles

LEDGER = "processes.jsonl"
# The run's lifeline while a target starts: every server process launched meanwhile is adopted
# by it, however deep in the server catalogue it is started.
_CURRENT: contextvars.ContextVar["Lifeline | None"] = contextvars.ContextVar("lifeline", default=None)
PR_SET_PDEATHSIG = 1
CREATE_TIME_SLACK_S = 0.01  # psutil derives it from clock ticks; the same process reads the same

# Reads "add|drop PGID STARTTICKS" lines; at end of input (toolbench is gone) kills every group
# still listed whose leader is either gone (its workers may live on) or still the same process.
_WATCHDOG = r"""
import os, signal, sys
groups = {}
for line in sys.stdin:
    op, pgid, ticks = line.split()
    if op == "add":
        groups[int(pgid)] = ticks
    else:
        groups.pop(int(pgid), None)
for pgid, ticks in groups.items():
    try:
        with open(f"/proc/{pgid}/stat") as stat:
            now = stat.read().rsplit(")", 1)[1].split()[19]
    except OSError:
        now = ticks
    if now == ticks:
        try:
            os.killpg(pgid, signal.SIGKILL)
        except OSError:
            pass
"""


@functools.cache
def _prctl() -> Any:
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def die_with_parent() -> Callable[[], None]:
    """A preexec_fn for subprocess: the child is killed when the calling thread ends. It must
    be called, and the child started, from a thread that lives as long as the child should
    (toolbench starts everything from its main thread)."""
    prctl = _prctl()
    parent = os.getpid()

    def preexec() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
        if os.getppid() != parent:  # toolbench died before the signal was armed
            os._exit(1)

    return preexec


class Lifeline:
    """The watchdog and the ledger of one run. `adopt` a process right after starting it,
    `release` it once it is reaped."""

    def __init__(self, ledger: Path) -> None:
        self.ledger = ledger
        # Appended to without following a link: the ledger of a resumed run is in a folder from anyone.
        fd = runfiles.open_file(ledger.parent, ledger.name, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        self._log = os.fdopen(fd, "a", encoding="utf-8")
        try:
            self._watchdog = subprocess.Popen([sys.executable, "-I", "-S", "-c", _WATCHDOG], cwd="/",
                                              stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                              stderr=subprocess.DEVNULL, start_new_session=True, text=True)
        except BaseException:
            self._log.close()
            raise
        self._groups: dict[int, tuple[int, float]] = {}  # pid -> (pgid, create time)
        self._lock = threading.Lock()  # the generators of a scaled-out cell start their tools from threads
        self._watchdog_created = _create_time(self._watchdog.pid)
        try:
            self._write({"event": "started", "role": "watchdog", "pid": self._watchdog.pid,
                         "pgid": self._watchdog.pid, "create_time": self._watchdog_created})
        except BaseException:
            self.close()
            raise

    def adopt(self, pid: int, role: str) -> None:
        """Raises OSError when it cannot be recorded (a full disk): the caller then stops the process."""
        try:
            pgid, created = os.getpgid(pid), _create_time(pid)
        except (OSError, psutil.Error):
            return  # already reaped: nothing left to watch
        self._groups[pid] = (pgid, created)
        self._tell(f"add {pgid} {_start_ticks(pid)}")
        self._write({"event": "started", "role": role, "pid": pid, "pgid": pgid, "create_time": created})

    def release(self, pid: int) -> None:
        found = self._groups.pop(pid, None)
        if found is None:
            return
        self._tell(f"drop {found[0]} 0")
        with contextlib.suppress(OSError):  # the ledger is checked against create times anyway
            self._write({"event": "stopped", "pid": pid, "create_time": found[1]})

    def close(self) -> None:
        """Ends the watchdog: whatever is still adopted is killed by it, as on a crash."""
        with contextlib.suppress(OSError):
            assert self._watchdog.stdin is not None
            self._watchdog.stdin.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self._watchdog.wait(timeout=10.0)
        with contextlib.suppress(OSError, psutil.Error):
            self._write({"event": "stopped", "pid": self._watchdog.pid, "create_time": self._watchdog_created})
        with contextlib.suppress(OSError):
            self._log.close()

    def __enter__(self) -> "Lifeline":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _tell(self, line: str) -> None:
        with self._lock, contextlib.suppress(OSError):  # a dead watchdog leaves PDEATHSIG and the ledger
            assert self._watchdog.stdin is not None
            self._watchdog.stdin.write(line + "\n")
            self._watchdog.stdin.flush()

    def _write(self, entry: dict[str, Any]) -> None:
        # Flushed, not synced: what must survive is toolbench's death, not the machine's.
        with self._lock:
            self._log.write(json.dumps(entry, sort_keys=True) + "\n")
            self._log.flush()


@contextlib.contextmanager
def watching(lifeline: "Lifeline | None") -> Iterator[None]:
    """Within this block, `current()` is `lifeline`."""
    token = _CURRENT.set(lifeline)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> "Lifeline | None":
    return _CURRENT.get()


def stop_leftovers(ledger: Path) -> list[str]:
    """Kills what a run that ended abruptly left running, as its ledger lists it: a process only
    when its create time is the one recorded, and the other members of its group only while it
    still leads that group (those created after it). A group whose recorded leader is gone, or
    is another process now, is left alone, and a notice says so: a crafted ledger line must not
    make toolbench kill what it did not start. Returns what was stopped, in words."""
    unfinished = _unfinished(ledger)
    if not unfinished:
        return []
    groups = _processes_by_group()
    stopped: list[str] = []
    for entry in unfinished:
        victims, spared = _group_of(entry, groups)
        for proc in victims:
            with contextlib.suppress(psutil.Error):
                proc.kill()
        psutil.wait_procs(victims, timeout=5.0)
        if victims:
            stopped.append(f"{entry.get('role', 'a process')} (pid {', '.join(str(p.pid) for p in victims)})")
        if spared:
            warnings.warn(Notice(spared), stacklevel=2)
    return stopped


def _unfinished(ledger: Path) -> list[dict[str, Any]]:
    live: dict[tuple[int, float], dict[str, Any]] = {}
    if not os.path.lexists(ledger):
        return []
    with runfiles.reader(ledger.parent, ledger.name) as fh:
        text = fh.read().decode("utf-8", errors="replace")
    for line in text.splitlines():
        try:
            entry = json.loads(line)
            key = (int(entry["pid"]), float(entry["create_time"]))
            if key[0] <= 0 or int(entry.get("pgid", key[0])) <= 0:
                continue  # 0 and below name no one process (to kill(2), whole groups)
        except (ValueError, KeyError, TypeError, AttributeError, OverflowError):
            continue  # a line cut by the crash, or not a ledger line at all
        if entry.get("event") == "started":
            live[key] = entry
        else:
            live.pop(key, None)
    return list(live.values())


def _processes_by_group() -> dict[int, list[psutil.Process]]:
    """Every running process by its group; zombies are dead already, waiting to be reaped
    by whoever inherited them."""
    groups: dict[int, list[psutil.Process]] = {}
    for proc in psutil.process_iter():
        with contextlib.suppress(OSError, psutil.Error):
            if proc.status() != psutil.STATUS_ZOMBIE:
                groups.setdefault(os.getpgid(proc.pid), []).append(proc)
    return groups


def _group_of(entry: dict[str, Any], groups: dict[int, list[psutil.Process]]) -> tuple[list[psutil.Process], str]:
    """What of an entry's group is provably the run's (to kill), and what is left alone, said in
    a line ("" when nothing is)."""
    pid, created = int(entry["pid"]), float(entry["create_time"])
    pgid = int(entry.get("pgid", pid))
    leader, why = _recorded(pid, created)
    if leader is not None and pgid == pid and _group(pid) == pgid:
        # The leader itself only if it still runs (a zombie is not in `groups`): its pid, held
        # even so, cannot have been reused, so its group is still the one the run started.
        found = []
        for proc in groups.get(pgid, []):
            with contextlib.suppress(psutil.Error):
                if proc.pid == pid or proc.create_time() >= created - CREATE_TIME_SLACK_S:
                    found.append(proc)
        return found, ""
    mine = [proc for proc in groups.get(_group(pid) or 0, []) if leader is not None and proc.pid == pid]
    if leader is not None:
        why = f"no longer leads process group {pgid}"
    others = [p.pid for p in groups.get(pgid, []) if p.pid != pid]
    if not others:
        return mine, ""
    role = entry.get("role", "a process")
    return mine, (
        f"left alone: {role} (pid {', '.join(map(str, others))}) in process group {pgid}: the leader the run "
        f"recorded (pid {pid}) {why}, so nothing proves they are the run's; stop them yourself if they are")


def _recorded(pid: int, created: float) -> tuple[psutil.Process | None, str]:
    """The process `pid` when it is the one the ledger recorded (its create time), else why not."""
    try:
        proc = psutil.Process(pid)
        began = proc.create_time()
    except (psutil.Error, OSError, ValueError, OverflowError):
        return None, "is gone"
    if abs(began - created) > CREATE_TIME_SLACK_S:
        return None, "is another process now (its pid was reused)"
    return proc, ""


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except (OSError, OverflowError):
        return None


def _create_time(pid: int) -> float:
    return float(psutil.Process(pid).create_time())


def _start_ticks(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            return stat.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return "0"
