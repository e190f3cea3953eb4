"""A run folder of two ok cells written through toolbench.record.store, for the tests of what a
run folder does with links planted in it (tests/record/test_run_links.py, test_run_hard_links.py)."""
from pathlib import Path

from toolbench.record import store
from toolbench.record.manifest import Manifest, RunStatus, ScenarioRecord
from toolbench.record.schema import Counts, Identity, Measurement, Outcome, RunResult, Status


def result(cell_id: str) -> RunResult:
    return RunResult(Identity(scenario="s", cell_id=cell_id, tool="ab", concurrency=1), Outcome(Status.OK),
                     Measurement("ab", counts=Counts(requests_total=10, requests_ok=10, requests_failed=0)))


def two_cells(tmp_path: Path) -> store.RunDir:
    (tmp_path / "run" / store.RAW).mkdir(parents=True)
    run = store.RunDir(tmp_path / "run")
    run.write_manifest(Manifest(ScenarioRecord("s"), status=RunStatus.RUNNING))
    for cell in ("a", "b"):
        run.append(result(cell))
    return run
