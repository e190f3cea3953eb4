"""A server's processes: each stack started in a session of its own, so that its whole
process group (master, workers, their threads' helpers) stops with one signal, and
stopping is checked: no process of the group may be left."""
from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import subprocess
import time
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Protocol

from toolbench.errors import TargetError
from toolbench.hosts import lifeline
from toolbench.hosts.local import inherited_limits, placed_child
from toolbench.hosts.placement import Pin

if TYPE_CHECKING:
    from toolbench.servers.cost import ServerReport

KILL_WAIT_S = 5.0
# Where the servers started within `placing()` go: the target's side of the placement.
_PIN: contextvars.ContextVar[Pin | None] = contextvars.ContextVar("toolbench_target_pin", default=None)
# The ulimits the servers started within `limiting()` get: the scenario's `prerequisites.ulimit`,
# as the tools get them (a thread per connection needs `nproc`, study 003).
_LIMITS: contextvars.ContextVar[Mapping[str, int]] = contextvars.ContextVar("toolbench_target_limits", default={})


@dataclass(frozen=True)
class RunningTarget:
    base_url: str
    label: str
    pid: int | None = None  # the server's main process (the front one), when toolbench started it
    version: str | None = None  # e.g. "gunicorn 23.0.0"; "nginx 1.22.1 + uWSGI 2.0.31" for a pair
    pids: tuple[int, ...] = ()  # every process group toolbench started for it: sample them all
    # Where it runs on another machine: how to sample it there (given the interval and the
    # series' file here), and that machine's cores. None: it runs here, sampled by a
    # ServerMonitor over `pids`.
    sampler: Callable[[float, Path], "Sampler"] | None = None
    cores: int | None = None  # here too when it was placed: how many CPUs it was given
    # Its base URL for each protocol it serves besides plain HTTP/1.1 at `base_url`
    # (toolbench.scenario.read.PROTOCOLS), and the certificate it serves over TLS (PEM, in the
    # run folder) when toolbench made it.
    urls: Mapping[str, str] = field(default_factory=dict)
    ca_file: str | None = None
    # The log of its TLS connections' handshakes on this machine (toolbench.servers.tls_log), when
    # it serves TLS and keeps one; None: a cell's handshakes are not known.
    handshake_log: str | None = None
    # Its own error logs on this machine (nginx's error.log, uWSGI's and gunicorn's stderr), read per
    # cell by toolbench.servers.target_log; empty: none read.
    logs: tuple[str, ...] = ()
    # What it is made of: (name, version) of each program and library its stack runs, as found when
    # it started (nginx, uWSGI, gunicorn, gevent, Flask, Werkzeug, Python); empty: not known.
    components: tuple[tuple[str, str], ...] = ()
    # The log of every request its nginx serves on this machine, kept for a workload's cells
    # (toolbench.servers.access_log); None: not kept.
    access_log: str | None = None

    def url_for(self, protocol: str) -> str:
        """Where a cell in `protocol` sends; a target with one URL (a command, a URL) serves on it
        what its scheme says."""
        if protocol in self.urls:
            return self.urls[protocol]
        if self.base_url.startswith("https://") == (protocol in ("https", "h2")):
            return self.base_url
        raise TargetError(f"{self.label}: does not serve {protocol}")

    @property
    def port(self) -> int | None:
        try:
            return urllib.parse.urlsplit(self.base_url).port
        except ValueError:
            return None


class Sampler(Protocol):
    """What samples a server while a cell runs (toolbench.servers.cost.ServerMonitor here)."""

    def start(self) -> None: ...

    def stop(self) -> "ServerReport": ...


@dataclass(frozen=True)
class Recipe:
    """One server process as a stack runs it, on this machine or another: the folders and
    files it needs in its folder (paths relative to it), and its command line, whose paths
    are already those of the machine it runs on."""

    name: str  # its output goes to <name>.stdout.txt and <name>.stderr.txt
    argv: tuple[str, ...]
    files: dict[str, str | bytes] = field(default_factory=dict)
    folders: tuple[str, ...] = ()
    stop_signal: int = signal.SIGTERM

    def write(self, folder: Path) -> None:
        """Its folders and files, in `folder` on this machine."""
        for name in self.folders:
            (folder / name).mkdir(parents=True, exist_ok=True)
        for name, content in self.files.items():
            path = folder / name
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content)


@contextlib.contextmanager
def placing(pin: Pin | None) -> Iterator[None]:
    """Every server process started within the block goes on `pin`'s CPUs and cpuset (as the
    lifeline is found by `lifeline.current()`: no stack builder has to pass it along)."""
    token = _PIN.set(pin)
    try:
        yield
    finally:
        _PIN.reset(token)


@contextlib.contextmanager
def limiting(wanted: Mapping[str, int]) -> Iterator[None]:
    """Every server process started within the block gets these ulimits raised (never lowered;
    toolbench.hosts.local.inherited_limits), as a target on another machine does."""
    token = _LIMITS.set(dict(wanted))
    try:
        yield
    finally:
        _LIMITS.reset(token)


@contextlib.contextmanager
def launched_recipe(recipe: Recipe, workdir: Path, grace_s: float = 3.0) -> Iterator[subprocess.Popen[bytes]]:
    """A recipe run on this machine, in `workdir`."""
    workdir.mkdir(parents=True, exist_ok=True)
    recipe.write(workdir)
    with launched(list(recipe.argv), workdir, recipe.name, recipe.stop_signal, grace_s) as proc:
        yield proc


@contextlib.contextmanager
def launched(argv: list[str], workdir: Path, label: str, stop_signal: int = signal.SIGTERM,
             grace_s: float = 3.0) -> Iterator[subprocess.Popen[bytes]]:
    """Runs `argv` in its own session, output in `<label>.stdout.txt` and `.stderr.txt`; on
    leaving, `stop_signal` to the group, SIGKILL after `grace_s`, and every process gone."""
    workdir.mkdir(parents=True, exist_ok=True)
    out = open(workdir / f"{label}.stdout.txt", "wb")
    err = open(workdir / f"{label}.stderr.txt", "wb")
    try:
        # Killed by the kernel should toolbench die without stopping it (see toolbench.hosts.lifeline);
        # on the target's CPUs when placed, from before its program runs.
        with inherited_limits(_LIMITS.get()):
            proc = subprocess.Popen(argv, cwd=workdir, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                    start_new_session=True, preexec_fn=placed_child(_PIN.get()))
    except (OSError, subprocess.SubprocessError) as exc:
        out.close()
        err.close()
        pin = _PIN.get()
        why = exc.strerror if isinstance(exc, OSError) else f"not placed on CPUs {pin.cpus if pin else ()}"
        raise TargetError(f"{label}: cannot start {argv[0]}: {why}") from None
    life = lifeline.current()
    try:
        if life is not None:
            life.adopt(proc.pid, f"target {label}")
        yield proc
    finally:
        left = stop_group(proc, stop_signal, grace_s)
        if life is not None:
            life.release(proc.pid)
        out.close()
        err.close()
    if left:
        raise TargetError(f"{label}: processes {left} of its group outlived SIGKILL")


def stop_group(proc: subprocess.Popen[bytes], stop_signal: int, grace_s: float) -> list[int]:
    """Signals the group whose leader is `proc` until none of it is left; returns what is left."""
    for sig, wait_s in ((stop_signal, grace_s), (signal.SIGKILL, KILL_WAIT_S)):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        if _wait_empty(proc, wait_s):
            return []
    return group_members(proc.pid)


def _wait_empty(proc: subprocess.Popen[bytes], wait_s: float) -> bool:
    deadline = time.monotonic() + wait_s
    while True:
        proc.poll()  # reaps the leader once it exits, so that it is not left a zombie
        if proc.returncode is not None and not group_members(proc.pid):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def group_members(pgid: int) -> list[int]:
    """The live processes (zombies aside) of a process group, read from /proc."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        # pid (comm) state ppid pgrp ...: comm may hold spaces and parentheses, so split after the last ')'.
        fields = stat[stat.rfind(")") + 2:].split()
        if len(fields) > 2 and fields[0] != "Z" and int(fields[2]) == pgid:
            found.append(int(name))
    return sorted(found)


def log_tail(log: Path | None) -> str:
    """The last line a server wrote, to say why it failed."""
    if log is None or not log.exists():
        return ""
    lines = log.read_text(errors="replace").strip().splitlines()
    return f": {lines[-1]}" if lines else ""
