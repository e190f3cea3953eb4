"""`run --retry-disturbed N`: after the run's cells, each cell disturbed by foreign work (or a
hypervisor's steal) is run again, up to N times, once the machine is quiet again.

A retry appends a new record for the same cell; the run folder shows a cell by its last record
(record.store.RunDir.results), and the disturbed attempt's record stays in results.jsonl and its
output in the cell's folder, under `disturbed-<n>/`. The cells run again through the runner's own
path (`serve`: their targets started again, each cell settled and watched as before)."""
from __future__ import annotations

import warnings
from typing import Callable

from toolbench.errors import Notice
from toolbench.record import store
from toolbench.record.schema import Status
from toolbench.run import quiet
from toolbench.run.plan import PlannedCell
from toolbench.scenario.read import Scenario

QUIET_WAIT_S = 60.0  # the longest wait for the machine to be quiet before a retry


def disturbed(todo: list[PlannedCell], run_dir: store.RunDir) -> list[PlannedCell]:
    """The cells of `todo` whose last record is disturbed, in plan order."""
    last = {r.identity.cell_id: r.outcome.status for r in run_dir.results()}
    return [p for p in todo if last.get(p.cell.id) is Status.DISTURBED]


def retry_disturbed(scenario: Scenario, todo: list[PlannedCell], run_dir: store.RunDir, times: int,
                    serve: Callable[[list[PlannedCell]], bool], wait_s: float = QUIET_WAIT_S) -> bool:
    """Runs the disturbed cells of `todo` again, at most `times` rounds; True when a round was
    interrupted (as `serve` says)."""
    for attempt in range(1, times + 1):
        again = disturbed(todo, run_dir)
        if not again:
            return False
        limits = scenario.method
        waited = quiet.wait_quiet(limits.foreign_cpu_pct, limits.steal_pct, bound_s=wait_s)
        if not waited.quiet:
            warnings.warn(Notice(_gave_up(waited, len(again), attempt, times)), stacklevel=2)
        for planned in again:
            _keep_aside(run_dir, planned.cell.id)
        if serve(again):
            return True
    return False


def _gave_up(waited: quiet.Waited, cells: int, attempt: int, times: int) -> str:
    last = waited.last
    busy = ""
    if last is not None:
        busy = f": foreign work still took {last.foreign_cpu_pct or 0:.0f} % of one core"
        busy += f" ({', '.join(f'{p.name} pid {p.pid}' for p in last.foreign[:3])})" if last.foreign else ""
        busy += f", the hypervisor stole {last.steal_pct:.0f} %" if last.steal_pct else ""
    return (f"--retry-disturbed: the machine was not quiet after {waited.waited_s:.0f}s{busy}; "
            f"{cells} disturbed {'cell is' if cells == 1 else 'cells are'} run again anyway "
            f"(retry {attempt} of {times})")


def _keep_aside(run_dir: store.RunDir, cell_id: str) -> None:
    """The disturbed attempt's files go to `disturbed-<n>/` in the cell's folder: the retry writes
    the same names."""
    folder = run_dir.cell_dir(cell_id)  # refuses a link on the way, or inside
    files = [p for p in folder.iterdir() if p.is_file() and not p.is_symlink()]
    if not files:
        return
    n = 1
    while (folder / f"disturbed-{n}").exists():
        n += 1
    kept = run_dir.work_folder(*folder.relative_to(run_dir.path).parts, f"disturbed-{n}")
    for path in files:
        path.rename(kept / path.name)
