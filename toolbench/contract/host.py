"""The machine a tool runs on, as the adapters and the runner see it: one `Host` interface
(run, start, stage and collect files, facts, limits) and what its commands return. Its
implementations live in toolbench.hosts (`LocalHost` here, `SSHHost` over SSH); an adapter's
`detect()` and a tool's own distributed mode reach a machine only through this interface."""
from __future__ import annotations

import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping, Protocol, Sequence


@dataclass(frozen=True)
class Completed:
    exit_code: int | None  # None when toolbench killed the process
    timed_out: bool
    wall_s: float
    interrupted: bool = False
    # The kernel's account of the tool at exit: its own CPU and that of the children it
    # waited for. None where the host cannot tell. (Its peak RSS is not taken from the same
    # account: ru_maxrss keeps the high-water mark of the forking Python process.)
    cpu_user_s: float | None = None
    cpu_system_s: float | None = None


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


@dataclass(frozen=True)
class Limit:
    """A resource limit as a process sees it; None is unlimited."""

    soft: int | None
    hard: int | None


class Running(Protocol):
    """A started tool: its process id, and a wait that enforces the hard timeout."""

    pid: int
    started: float  # time.monotonic() at spawn

    def wait(self, timeout_s: float) -> Completed: ...

    def kill(self) -> None:
        """From another thread than the one waiting: its wait then returns soon."""


class Host(Protocol):
    label: str
    remote: bool  # True when tools run on another machine: their files travel, psutil cannot see them

    def which(self, program: str) -> str | None: ...

    def capture(self, argv: list[str], timeout_s: float = 10.0) -> Captured: ...

    def start(self, argv: list[str], cwd: Path, stdout: Path, stderr: Path,
              env: dict[str, str] | None = None) -> Running: ...

    def run(self, argv: list[str], cwd: Path, stdout: Path, stderr: Path, timeout_s: float,
            env: dict[str, str] | None = None) -> Completed: ...

    def workspace(self, workdir: Path) -> str | Path:
        """Where a tool whose files are kept in `workdir` runs: `workdir` itself on this machine."""

    def stage(self, workdir: Path, tool_dir: str | Path, names: Sequence[str]) -> None:
        """Puts the input files `names` of `workdir` where the tool runs."""

    def collect(self, tool_dir: str | Path, names: Sequence[str], workdir: Path) -> None:
        """Brings the files `names` the tool wrote (those it did) back into `workdir`, and
        removes the workspace; nothing to do where the tool ran in `workdir`."""

    def with_limits(self, wanted: Mapping[str, int]) -> "Host": ...

    def process_limits(self, raised: bool = True) -> dict[str, Limit]: ...

    def facts(self) -> Facts: ...

    def close(self) -> None: ...


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port free on this machine now (the kernel's choice), for a target or a tool's
    controller to bind next."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])
