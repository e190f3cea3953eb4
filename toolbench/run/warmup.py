"""The scenario's warm-up: an unmeasured run just before each cell.

The warm-up is the cell's own tool, run as a separate process with the same concurrency,
keep-alive and request against the same target, stopped after `warmup` seconds. Every adapter
here stops on a duration (ab -t, siege -t, http_load -seconds, JMeter's scheduler, Locust's
--run-time, the engine), so the warm-up is always a timed run; a tool that takes whole seconds
only (JMeter, Locust, http_load) is given the warm-up rounded up to whole seconds. A warm-up
the tool cannot run at all (its adapter refuses the timed cell) is no warm-up: the cell runs
without one and says so. Its output stays in the cell's `warmup/` folder and is read only to
judge it: a warm-up that fails fails the cell, with the reason.

It warms the target (its caches, its pools, a JIT behind it) and the machine, not the next
process of the tool: its own ramp is in the measured cell all the same (toolbench.contract.ramp)."""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path
from typing import Callable

from toolbench.contract.adapter import Adapter, Found
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.contract.host import Completed, Host
from toolbench.errors import HostError, ParseError, ToolbenchError
from toolbench.record import derive, store
from toolbench.record.schema import Artifact, Status, Warmup
from toolbench.run.execute import staged
from toolbench.scenario.read import StopSpec

FOLDER = "warmup"  # inside the cell's raw folder


class WarmupFailed(ToolbenchError):
    """The warm-up did not run to its end: the cell fails (or is interrupted) with `reason`."""

    def __init__(self, status: Status, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def warmup_cell(cell: Cell, adapter: Adapter) -> Cell | None:
    """The cell's warm-up: the same cell, stopped after the warm-up's seconds (whole seconds
    when the tool takes only those); None when the tool cannot run it."""
    for seconds in (cell.warmup_s, float(max(1, math.ceil(cell.warmup_s)))):
        warm = dataclasses.replace(cell, warmup_s=0.0, stop=StopSpec(duration_s=seconds), timeout_s=seconds * 2 + 30)
        if adapter.supports(warm).ok:
            return warm
    return None


def before(adapter: Adapter, found: Found, cell: Cell, workdir: Path, host: Host,
           relative: Callable[[Path], str]) -> tuple[Warmup | None, list[str]]:
    """The cell's warm-up, when the scenario asks for one and the tool can run it (else a
    note says the cell ran without), its folder named by `relative`; raises WarmupFailed."""
    if not cell.warmup_s:
        return None, []
    if warmup_cell(cell, adapter) is None:
        return None, [f"no warm-up: {cell.tool} cannot run the cell for {cell.warmup_s:g}s"]
    warm, notes = warm_up(adapter, found, cell, workdir, host)
    return dataclasses.replace(warm, path=relative(workdir / FOLDER)), notes


def asked(cell: Cell, workdir: Path, relative: Callable[[Path], str]) -> Warmup:
    """The warm-up a cell was given, for the result of a cell whose warm-up failed."""
    return Warmup(duration_s=cell.warmup_s, path=relative(workdir / FOLDER))


def artifacts(workdir: Path, relative: Callable[[Path], str]) -> list[Artifact]:
    """The warm-up's streams, for the report's raw links."""
    folder = workdir / FOLDER
    return [Artifact(role=f"warm-up {name}", path=relative(folder / f"{name}.txt"))
            for name in ("stdout", "stderr") if (folder / f"{name}.txt").exists()]


def warm_up(adapter: Adapter, found: Found, cell: Cell, workdir: Path, host: Host) -> tuple[Warmup, list[str]]:
    """Runs the warm-up in `workdir`/warmup, waits for it, and judges it as a cell is judged:
    a tool that fails, hangs or counts only failures raises WarmupFailed. Two endings are
    noted, not failed: a tool known to hang now and then at the end of a run
    (`retries_on_hang`) that does so here has warmed the target all the same; a tool that
    ended normally before it sent anything (Locust's workers still starting on a loaded
    machine) has warmed nothing, but says nothing against the cell either."""
    warm = warmup_cell(cell, adapter)
    assert warm is not None and warm.stop.duration_s is not None, "the runner checks warmup_cell() first"
    folder = workdir / FOLDER
    folder.mkdir(exist_ok=True)

    def run(argv: list[str], env: dict[str, str], tool_dir: Path) -> tuple[Completed, None]:
        return host.run(argv, cwd=tool_dir, stdout=folder / "stdout.txt", stderr=folder / "stderr.txt",
                        timeout_s=warm.timeout_s, env=env), None

    completed, raw, _ = staged(adapter, found, warm, folder, host, run)
    try:
        measurement, unread = parse_checked(adapter, raw), ""
    except ParseError as exc:
        measurement, unread = None, f" ({exc})"  # judged below as a run without output, its reason kept
    status, error = derive.cell_status(measurement, completed.exit_code, timed_out=completed.timed_out,
                                       interrupted=completed.interrupted, timeout_s=warm.timeout_s,
                                       stderr=raw.stderr, ok_exit_codes=adapter.ok_exit_codes,
                                       wall_s=completed.wall_s)
    done = Warmup(duration_s=warm.stop.duration_s, wall_s=completed.wall_s, ended_at=store.utc_now())
    if status is Status.TIMED_OUT and adapter.retries_on_hang:
        return done, [f"the warm-up hung at its end and was killed at its hard limit of {warm.timeout_s:g}s "
                      f"({cell.tool} is known to, now and then)"]
    ended_well = completed.exit_code in adapter.ok_exit_codes
    if status is Status.FAILED and ended_well and derive.counted_nothing(measurement):
        return done, [f"the {warm.stop.duration_s:g}s warm-up ended before {cell.tool} sent a request (its start "
                      "took longer): the cell ran without a warm-up of the target"]
    if status is Status.INTERRUPTED:
        raise WarmupFailed(status, "interrupted during the warm-up; --resume runs the cell again")
    if status is not Status.OK:
        raise WarmupFailed(Status.FAILED, f"the {warm.stop.duration_s:g}s warm-up failed, so the cell did not "
                                          f"run: {error}{unread}")
    return done, []


def warm_target(adapter: Adapter, found: Found, cell: Cell, folder: Path, host: Host, seconds: float) -> str | None:
    """An unmeasured run of the target's first cell, right after the target started, for
    `seconds` (the scenario's `warm_target`, or the cell's own warm-up when longer): without it,
    the first cell of a run measured a cold target and a machine that had idled. Its output
    stays in `folder`. Returns why it did not warm the target, or None."""
    seconds = max(seconds, cell.warmup_s)
    if warmup_cell(dataclasses.replace(cell, warmup_s=seconds), adapter) is None:
        return f"{cell.tool} cannot run a {seconds:g}s warm-up"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        warm_up(adapter, found, dataclasses.replace(cell, warmup_s=seconds), folder, host)
    except WarmupFailed as exc:
        if exc.status is Status.INTERRUPTED:
            raise KeyboardInterrupt from None  # the run stops here, as a cell's interruption stops it
        return exc.reason
    except HostError as exc:
        return str(exc)
    return None
