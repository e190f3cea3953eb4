"""Where commands run. `Host` is one interface; `LocalHost` runs subprocesses on
this machine. (A remote implementation over SSH fits the same interface.)"""
from __future__ import annotations

import os
import platform
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Protocol

import psutil

from toolbench.errors import HostError


@dataclass(frozen=True)
class Completed:
    exit_code: int | None  # None when toolbench killed the process
    timed_out: bool
    wall_s: float
    interrupted: bool = False


@dataclass(frozen=True)
class Captured:
    exit_code: int
    stdout: str
    stderr: str


@dataclass(frozen=True)
class Facts:
    hostname: str
    cpu_count: int
    cpu_model: str
    memory_bytes: int
    kernel: str
    os: str


class Host(Protocol):
    label: str

    def which(self, program: str) -> str | None: ...

    def capture(self, argv: list[str], timeout_s: float = 10.0) -> Captured: ...

    def run(self, argv: list[str], cwd: Path, stdout: Path, stderr: Path, timeout_s: float,
            env: dict[str, str] | None = None) -> Completed: ...

    def facts(self) -> Facts: ...


class LocalHost:
    label = "local"

    def which(self, program: str) -> str | None:
        return shutil.which(program)

    def capture(self, argv: list[str], timeout_s: float = 10.0) -> Captured:
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                                  errors="replace", stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise HostError(f"local: {argv[0]}: not found") from None
        except subprocess.TimeoutExpired:
            raise HostError(f"local: {' '.join(argv)}: no answer within {timeout_s:g}s") from None
        return Captured(proc.returncode, proc.stdout, proc.stderr)

    def run(self, argv: list[str], cwd: Path, stdout: Path, stderr: Path, timeout_s: float,
            env: dict[str, str] | None = None) -> Completed:
        """Runs to completion or to the hard timeout, then kills the whole process tree.
        Ctrl-C kills the tool too and reports the run as interrupted."""
        full_env = dict(os.environ, **(env or {}))
        with open(stdout, "wb") as out, open(stderr, "wb") as err:
            started = time.monotonic()
            proc = _spawn(argv, cwd, out, err, full_env)
            try:
                code = proc.wait(timeout=timeout_s)
                return Completed(code, False, time.monotonic() - started)
            except subprocess.TimeoutExpired:
                kill_tree(proc.pid)
                proc.wait()
                return Completed(None, True, time.monotonic() - started)
            except KeyboardInterrupt:
                kill_tree(proc.pid)
                proc.wait()
                return Completed(None, False, time.monotonic() - started, interrupted=True)

    def facts(self) -> Facts:
        return Facts(
            hostname=platform.node(),
            cpu_count=len(os.sched_getaffinity(0)),
            cpu_model=_cpu_model(),
            memory_bytes=psutil.virtual_memory().total,
            kernel=platform.release(),
            os=_os_name(),
        )


def _spawn(argv: list[str], cwd: Path, out: IO[bytes], err: IO[bytes], env: dict[str, str]) -> subprocess.Popen[bytes]:
    try:
        # A session of its own, so the whole tree can be killed and Ctrl-C in the
        # terminal reaches toolbench first, which then stops the tool cleanly.
        return subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True)
    except FileNotFoundError:
        raise HostError(f"local: {argv[0]}: not found") from None


def kill_tree(pid: int) -> None:
    """Kills a process and everything it started (its session), even children that moved away."""
    try:
        children = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        children = []
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    for child in children:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _os_name() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return platform.system()
