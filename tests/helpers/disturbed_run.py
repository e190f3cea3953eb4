"""A recorded run with a disturbed cell: tests/fixtures/runs/tie (ab and the engine, two
repetitions each) copied, with ab's second repetition stored again as the runner stores a cell
disturbed by foreign work (Status.DISTURBED, its figures kept, the machine around it)."""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

from toolbench.record import store
from toolbench.record.observed import CellMachine, ForeignProcess
from toolbench.record.schema import RunResult, Status

TIE = Path(__file__).parents[1] / "fixtures" / "runs" / "tie"
CELL = "ab-c10-ka-rep2"
WHY = "foreign work took 87 % of one core (python3 pid 1234 85 %), over the limit of 5 %"


def disturbed(r: RunResult) -> RunResult:
    machine = CellMachine(foreign_cpu_pct=87.0, steal_pct=0.4, foreign=[ForeignProcess(1234, "python3", 85.0)],
                          position=3, tool_cpus=[0, 1], disturbed_by=WHY)
    return dataclasses.replace(r, outcome=dataclasses.replace(r.outcome, status=Status.DISTURBED, error=WHY),
                               machine=machine)


def make(folder: Path) -> store.RunDir:
    """The run, in `folder` (made here)."""
    shutil.copytree(TIE, folder)
    records = store.RunDir.open(folder).results()
    (folder / store.RESULTS).unlink()
    copy = store.RunDir.open(folder)
    for r in records:
        copy.append(disturbed(r) if r.identity.cell_id == CELL else r)
    return copy
