"""The progress bar of `toolbench run`: cells done, the current cell, the ETA."""
from __future__ import annotations

import os
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from toolbench.cli.terminal import safe
from toolbench.contract.cell import Cell
from toolbench.record.schema import RunResult, Status


def no_color() -> bool:
    """No colour, nor bold or any other escape, when NO_COLOR is set to anything but ""
    (no-color.org). Colour needs a terminal too: rich writes none to a pipe or a file."""
    return bool(os.environ.get("NO_COLOR"))


class ProgressObserver:
    def __init__(self, enabled: bool, quiet: bool = False) -> None:
        self._console = Console(stderr=True, color_system=None if no_color() else "auto")
        self._quiet = quiet
        self._progress = Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            console=self._console, disable=not enabled, transient=False)
        self._task = self._progress.add_task("planning", total=None)
        self._enabled = enabled

    def __enter__(self) -> "ProgressObserver":
        self._progress.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._progress.stop()

    def planned(self, total: int, skipped: int) -> None:
        self._progress.update(self._task, total=total, completed=skipped, description="starting target")

    def cell_started(self, index: int, cell: Cell) -> None:
        task = self._progress.tasks[0]
        # A disturbed cell run again (--retry-disturbed) is a cell more than planned.
        more = {"total": task.completed + 1} if task.total is not None and task.completed >= task.total else {}
        self._progress.update(self._task, description=safe(cell.id), **more)

    def cell_finished(self, index: int, result: RunResult) -> None:
        self._progress.advance(self._task)
        if result.outcome.status not in (Status.OK, Status.UNSUPPORTED):
            line = f"{result.identity.cell_id}: {result.outcome.status.value}: {result.outcome.error}"
            self._console.print(safe(line), style="yellow", markup=False)  # the error may quote the tool
        elif not self._enabled and not self._quiet:
            self._console.print(safe(f"{result.identity.cell_id}: {result.outcome.status.value}"), markup=False)
