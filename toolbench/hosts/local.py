"""`LocalHost`: the `Host` interface (toolbench.contract.host) on this machine, commands run as
subprocesses in process groups of their own that die with toolbench (toolbench.hosts.lifeline)."""
from __future__ import annotations

import contextlib
import os
import platform
import resource
import select
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import IO, Callable, Iterator, Mapping, Sequence

import psutil

from toolbench.contract.host import Captured, Completed, Facts, Limit
from toolbench.errors import HostError
from toolbench.hosts.lifeline import Lifeline, die_with_parent
from toolbench.hosts.placement import Pin, own_cpus

# The limits a scenario may ask for, by the name `ulimit` and /proc/<pid>/limits give them.
RLIMITS = {"nofile": resource.RLIMIT_NOFILE, "nproc": resource.RLIMIT_NPROC}
_PROC_LIMIT_ROWS = {"Max open files": "nofile", "Max processes": "nproc"}


class LocalHost:
    """This machine. `prefix` is put before every command (e.g. `ip netns exec NS`, to run
    inside a network namespace); `limits` are the ulimits raised for every process started;
    `lifeline`, when given, records every tool started and kills it should toolbench die;
    `pin`, when given, is where every tool started goes (its CPUs and cpuset: the placement)."""

    def __init__(self, prefix: tuple[str, ...] = (), limits: Mapping[str, int] | None = None,
                 lifeline: Lifeline | None = None, pin: Pin | None = None) -> None:
        self.prefix = tuple(prefix)
        self.limits = dict(limits or {})
        self.lifeline = lifeline
        self.pin = pin
        self.label = "local" if not prefix else f"local ({' '.join(prefix)})"
        self.remote = False

    def close(self) -> None:
        """Nothing to release: part of the Host interface for remote hosts' sake."""

    def which(self, program: str) -> str | None:
        return shutil.which(program)

    def workspace(self, workdir: Path) -> Path:
        return workdir

    def stage(self, workdir: Path, tool_dir: str | Path, names: Sequence[str]) -> None:
        """The tool runs where its inputs were written."""

    def collect(self, tool_dir: str | Path, names: Sequence[str], workdir: Path) -> None:
        """The tool wrote its files in `workdir` itself."""

    def capture(self, argv: list[str], timeout_s: float = 10.0) -> Captured:
        try:
            with inherited_limits(self.limits):
                proc = subprocess.Popen([*self.prefix, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                        stdin=subprocess.DEVNULL, text=True, errors="replace")
        except FileNotFoundError:
            raise HostError(f"{self.label}: {argv[0]}: not found") from None
        try:
            out, err = proc.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
            raise HostError(f"{self.label}: {' '.join(argv)}: no answer within {timeout_s:g}s") from None
        return Captured(proc.returncode, out, err)

    def start(self, argv: list[str], cwd: Path, stdout: Path, stderr: Path,
              env: dict[str, str] | None = None) -> "LocalProcess":
        full_env = dict(os.environ, **(env or {}))
        out = open(stdout, "wb")
        err = open(stderr, "wb")
        try:
            with inherited_limits(self.limits):
                proc = _spawn([*self.prefix, *argv], cwd, out, err, full_env, self.pin)
        except BaseException:
            out.close()
            err.close()
            raise
        running = LocalProcess(proc, out, err, self.lifeline)
        if self.lifeline is not None:
            try:
                self.lifeline.adopt(proc.pid, f"tool {argv[0]}")
            except BaseException:
                running.wait(0)
                raise
        return running

    def run(self, argv: list[str], cwd: Path, stdout: Path, stderr: Path, timeout_s: float,
            env: dict[str, str] | None = None) -> Completed:
        """Runs to completion or to the hard timeout, then kills the whole process tree.
        Ctrl-C kills the tool too and reports the run as interrupted."""
        return self.start(argv, cwd, stdout, stderr, env).wait(timeout_s)

    def with_limits(self, wanted: Mapping[str, int]) -> "LocalHost":
        return LocalHost(self.prefix, {**self.limits, **wanted}, self.lifeline, self.pin)

    def with_lifeline(self, lifeline: Lifeline) -> "LocalHost":
        return LocalHost(self.prefix, self.limits, lifeline, self.pin)

    def with_pin(self, pin: Pin | None) -> "LocalHost":
        """Every tool started on `pin`'s CPUs, in its cpuset. Short commands toolbench asks the
        host (capture: versions, limits) are not the tool's load: they run where toolbench does."""
        return LocalHost(self.prefix, self.limits, self.lifeline, pin)

    def process_limits(self, raised: bool = True) -> dict[str, Limit]:
        """The limits of a process started exactly as a tool is (same prefix, same raise);
        with `raised=False`, as this login gives them, before toolbench raises anything."""
        host = self if raised else LocalHost(self.prefix)
        captured = host.capture(["cat", "/proc/self/limits"])
        if captured.exit_code != 0:
            raise HostError(f"{self.label}: cannot read /proc/self/limits: {captured.stderr.strip()}")
        return parse_proc_limits(captured.stdout)

    def facts(self) -> Facts:
        return Facts(
            hostname=platform.node(),
            cpu_count=len(own_cpus()),  # toolbench's own threads may be pinned meanwhile (the placement)
            cpu_model=_cpu_model(),
            memory_bytes=psutil.virtual_memory().total,
            kernel=platform.release(),
            os=_os_name(),
        )


class LocalProcess:
    """A tool started by LocalHost. Waiting reaps it with wait4, so the kernel's CPU and
    memory account of the whole run comes with the exit code."""

    def __init__(self, proc: subprocess.Popen[bytes], out: IO[bytes], err: IO[bytes],
                 lifeline: Lifeline | None = None) -> None:
        self._proc = proc
        self._files = (out, err)
        self._lifeline = lifeline
        self._reaping = threading.Lock()  # a kill() from another thread never meets a reaped (reusable) pid
        self.pid = proc.pid
        self.started = time.monotonic()

    def kill(self) -> None:
        with self._reaping:
            if self._proc.returncode is None:
                kill_tree(self.pid)

    def wait(self, timeout_s: float) -> Completed:
        try:
            exited = self._wait_exit(self.started + timeout_s)
            if not exited:
                kill_tree(self.pid)
            return self._reap(timed_out=not exited, interrupted=False)
        except KeyboardInterrupt:
            kill_tree(self.pid)
            return self._reap(timed_out=False, interrupted=True)
        finally:
            for fh in self._files:
                fh.close()

    def _wait_exit(self, deadline: float) -> bool:
        """True when the process exited before the deadline. Leaves it unreaped."""
        try:
            fd = os.pidfd_open(self.pid)
        except (AttributeError, OSError):
            fd = None
        try:
            while True:
                left = deadline - time.monotonic()
                if fd is not None:
                    poller = select.poll()
                    poller.register(fd, select.POLLIN)
                    if poller.poll(max(0, int(left * 1000))):
                        return True
                elif os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
                    return True
                else:
                    time.sleep(min(0.02, max(0.0, left)))
                if time.monotonic() >= deadline:
                    return False
        finally:
            if fd is not None:
                os.close(fd)

    def _reap(self, timed_out: bool, interrupted: bool) -> Completed:
        # Whatever the tool left behind in its session must not load the next cell. Done
        # before reaping: while the leader is a zombie its pid (the group id) cannot be reused.
        with self._reaping:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signal.SIGKILL)
            _, status, usage = os.wait4(self.pid, 0)
            code = os.waitstatus_to_exitcode(status)
            self._proc.returncode = code  # reaped here: Popen must not wait for it again
        if self._lifeline is not None:
            self._lifeline.release(self.pid)
        wall = time.monotonic() - self.started
        return Completed(None if (timed_out or interrupted) else code, timed_out, wall, interrupted,
                         cpu_user_s=usage.ru_utime, cpu_system_s=usage.ru_stime)


_LIMITS_LOCK = threading.Lock()


@contextlib.contextmanager
def inherited_limits(wanted: Mapping[str, int]) -> Iterator[None]:
    """Raises this process's limits while a child is spawned, so the child inherits them,
    then puts them back. The soft limit goes up to what is wanted, within the hard limit;
    as root the hard limit goes up too. Limits are never lowered."""
    if not wanted:
        yield
        return
    with _LIMITS_LOCK:
        saved = {name: resource.getrlimit(RLIMITS[name]) for name in wanted}
        try:
            for name, value in wanted.items():
                _raise(RLIMITS[name], value)
            yield
        finally:
            for name, limits in saved.items():
                with contextlib.suppress(ValueError, OSError):
                    resource.setrlimit(RLIMITS[name], limits)


def _raise(res: int, want: int) -> None:
    soft, hard = resource.getrlimit(res)
    if soft == resource.RLIM_INFINITY or soft >= want:
        return
    if hard != resource.RLIM_INFINITY and hard < want:
        try:
            resource.setrlimit(res, (want, want))  # allowed as root (CAP_SYS_RESOURCE), up to fs.nr_open
            return
        except (ValueError, OSError):
            want = hard
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(res, (want, hard))


def parse_proc_limits(text: str) -> dict[str, Limit]:
    """Reads /proc/<pid>/limits: `Max open files  1024  524288  files`."""
    found = {}
    for line in text.splitlines():
        for row, name in _PROC_LIMIT_ROWS.items():
            if line.startswith(row):
                fields = line[len(row):].split()
                if len(fields) >= 2:
                    found[name] = Limit(_limit_value(fields[0]), _limit_value(fields[1]))
    return found


def _limit_value(text: str) -> int | None:
    return None if text == "unlimited" else int(text)


def _spawn(argv: list[str], cwd: Path, out: IO[bytes], err: IO[bytes], env: dict[str, str],
           pin: Pin | None = None) -> subprocess.Popen[bytes]:
    try:
        # A session of its own, so the whole tree can be killed and Ctrl-C in the
        # terminal reaches toolbench first, which then stops the tool cleanly; killed by
        # the kernel should toolbench die without stopping it.
        return subprocess.Popen(argv, cwd=cwd, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True, preexec_fn=placed_child(pin))
    except FileNotFoundError:
        raise HostError(f"local: {argv[0]}: not found") from None
    except PermissionError:
        raise HostError(f"local: {argv[0]}: permission denied") from None
    except subprocess.SubprocessError:  # the preexec_fn failed in the child: the pin's CPUs are not there
        where = f" on CPUs {','.join(map(str, pin.cpus))}" if pin is not None else ""
        raise HostError(f"local: {argv[0]}: cannot be started{where}") from None


def placed_child(pin: Pin | None) -> Callable[[], None]:
    """The preexec_fn of every process toolbench starts here: it dies with toolbench, and it
    starts on its side's CPUs. Set in the child before the program runs (rather than by `taskset`
    or after the start): nothing it forks can escape the placement, and no program is needed."""
    die = die_with_parent()
    if pin is None:
        return die

    def preexec() -> None:
        die()
        pin.apply()

    return preexec


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
