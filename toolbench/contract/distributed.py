"""Tools with a distributed mode of their own (Locust's master and workers, JMeter's
controller and servers): one cell run by a controller on this machine and a part on each
generator, through the tool's own protocol rather than one toolbench instance per machine.

The controller's output is the result (the tool merges the generators' samples itself) and is
read by the tool's own adapter; each generator's part is kept beside it, in
`<cell>/generators/<n>-<host>/`, with how it ended. A part that failed makes the cell partial:
its reason is said, never hidden in a sum over fewer machines."""
from __future__ import annotations

import re
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Callable, Mapping, Protocol, Sequence

from toolbench.contract.adapter import Found, RawOutput, Support
from toolbench.contract.host import Completed, Host, Running
from toolbench.errors import HostError

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.record.schema import Measurement



class Watch(Protocol):
    """The runner's monitor of one generator's part (toolbench.run.generator_watch): prepared
    before the part starts, started on its process, stopped once it ended."""

    def prepare(self) -> None: ...

    def start(self, running: Running) -> None: ...

    def stop(self) -> None: ...


# Makes the monitor of a generator's part: (its host, the part's folder there, its folder here).
Watcher = Callable[[Host, "Path | PurePosixPath", Path], Watch]

# How long a generator's part may take to end once the controller has ended (the tool tells it
# to). A JMeter server's JVM took over 15 s to exit on a 2-core machine under other load; a part
# that ends sooner costs nothing, and one that hangs is still killed and said.
PART_GRACE_S = 60.0


@dataclass(frozen=True)
class Generator:
    """One generator: the host, the tool as found there, and the addresses both ways."""

    host: Host
    found: Found
    address: str | None = None  # how this machine reaches the generator; None: its SSH address (host_address)
    reach: str | None = None  # how the generator reaches this machine; None: from the route (reach_address)
    workers: int | None = None  # processes of the tool there, where the tool runs several; None: one per core
    watcher: Watcher | None = None  # None: the part is not watched

    @property
    def label(self) -> str:
        return self.host.label


@dataclass(frozen=True)
class Part:
    """How one generator's part ended: `error` is None when it ended as the tool ends it."""

    label: str
    folder: Path
    exit_code: int | None
    error: str | None = None
    completed: Completed | None = None  # None: it could not be waited for
    watch: Watch | None = None  # its monitor, stopped
    measurement: "Measurement | None" = None  # its own figures, where the tool's output tells them apart
    why_no_figures: str | None = None  # why `measurement` is None, when it is


@dataclass(frozen=True)
class Outcome:
    completed: Completed  # the controller's run
    raw: RawOutput  # the controller's output, for the adapter's parse
    parts: tuple[Part, ...]
    notes: tuple[str, ...] = ()

    @property
    def failed_parts(self) -> list[Part]:
        return [part for part in self.parts if part.error is not None]


class DistributedTool(Protocol):
    """A tool's own distributed mode, as `Adapter.distributed()` hands it to the runner, which
    runs it on the scenario's generators and makes its outcome a result (toolbench.run.scaleout.own)."""

    def supports(self, cell: "Cell", generators: int) -> Support: ...

    def run(self, cell: "Cell", workdir: Path, controller: Found, generators: Sequence[Generator], *,
            here: Host) -> Outcome:
        """The cell, its controller started on `here` (this machine) and a part on each generator."""


def host_address(gen: Generator) -> str:
    """The address this machine reaches the generator at: its SSH address, else loopback."""
    if gen.address:
        return gen.address
    spec = getattr(gen.host, "spec", None)
    return spec.address if spec is not None and not spec.is_local else "127.0.0.1"


def reach_address(gen: Generator) -> str:
    """The address the generator reaches this machine at: given, or this machine's source
    address on the route to the generator (no packet is sent to find it)."""
    if gen.reach:
        return gen.reach
    target = host_address(gen)
    if target.startswith("127.") or target in ("localhost", "::1"):
        return "127.0.0.1"
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        try:
            sock.connect((target, 9))
        except OSError as exc:
            raise HostError(f"{gen.label}: no route from here to {target}: {exc.strerror or exc}") from None
        return str(sock.getsockname()[0])


def part_folder(workdir: Path, index: int, gen: Generator) -> Path:
    folder = workdir / "generators" / f"{index + 1}-{re.sub(r'[^A-Za-z0-9_.-]', '_', gen.label)[:60]}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@dataclass
class Launched:
    """A part started on a generator, in its workspace there, output streaming into `folder`."""

    gen: Generator
    folder: Path
    tool_dir: str | Path
    running: Running
    outputs: list[str] = field(default_factory=list)
    watch: Watch | None = None


def launch(gen: Generator, folder: Path, argv: list[str], files: Mapping[str, str], outputs: Sequence[str] = (),
           env: Mapping[str, str] | None = None) -> Launched:
    """Writes the part's input files into `folder`, puts them where it runs and starts it,
    watched by its generator's monitor from its start."""
    for name, content in files.items():
        (folder / name).write_text(content)
    tool_dir = gen.host.workspace(folder)
    there = PurePosixPath(tool_dir) if isinstance(tool_dir, str) else tool_dir
    watch = gen.watcher(gen.host, there, folder) if gen.watcher is not None else None
    try:
        gen.host.stage(folder, tool_dir, list(files))
        (folder / "command.txt").write_text(" ".join(argv) + "\n")
        if watch is not None:
            watch.prepare()
        running = gen.host.start(argv, cwd=tool_dir, stdout=folder / "stdout.txt", stderr=folder / "stderr.txt",
                                 env=dict(env or {}))
    except BaseException:
        gen.host.collect(tool_dir, [], folder)
        raise
    if watch is not None:
        try:
            watch.start(running)
        except BaseException:
            running.wait(0)
            gen.host.collect(tool_dir, [], folder)
            raise
    return Launched(gen, folder, tool_dir, running, list(outputs), watch)


def finish(part: Launched, timeout_s: float, ok_codes: tuple[int, ...] = (0,), stopped: str | None = None) -> Part:
    """Waits up to `timeout_s` more for the part (then kills it), brings its files back and
    says how it ended; `stopped`: why it is not waited for (killed at once)."""
    try:
        completed = part.running.wait(time.monotonic() - part.running.started + timeout_s)
    except HostError as exc:
        return Part(part.gen.label, part.folder, None, str(exc), watch=part.watch)
    finally:
        if part.watch is not None:
            part.watch.stop()
        part.gen.host.collect(part.tool_dir, part.outputs, part.folder)
    error = None
    if completed.timed_out:
        error = f"{stopped}; killed" if stopped else f"still running {timeout_s:g}s after the controller ended; killed"
    elif completed.interrupted:
        error = "interrupted"
    elif completed.exit_code not in ok_codes:
        error = f"exited {completed.exit_code}{_last_line(part.folder / 'stderr.txt')}"
    return Part(part.gen.label, part.folder, completed.exit_code, error, completed, part.watch)


def finish_all(parts: Sequence[Launched], controller: Completed | None) -> tuple[Part, ...]:
    """Every part finished once the controller ended: given the grace to end as the tool ends
    it, or killed at once when the controller was interrupted or did not run to its end."""
    if controller is not None and not (controller.interrupted or controller.timed_out):
        return tuple(finish(part, PART_GRACE_S) for part in parts)
    why = ("stopped before the controller ran to its end" if controller is None else
           "interrupted with the controller" if controller.interrupted else "the controller was killed at the time limit")
    return tuple(finish(part, 0, stopped=why) for part in parts)


def _last_line(path: Path) -> str:
    try:
        lines = [line for line in path.read_text(errors="replace").splitlines() if line.strip()]
    except OSError:
        return ""
    return f": {lines[-1].strip()[:200]}" if lines else ""

