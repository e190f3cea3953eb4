"""`toolbench check` and `run`'s gate with a disturbed cell: not a failed cell (exit 0 without
criteria), said in the summary; and `--retry-disturbed` takes a count."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers import disturbed_run
from helpers.cli import cli
from toolbench.cli.main import main


def test_check_says_a_disturbed_cell_and_does_not_fail_it(tmp_path: Path) -> None:
    run = disturbed_run.make(tmp_path / "tie")
    done = cli("check", str(run.path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cells: 4: 3 ok, 1 disturbed (by other work on the machine)" in done.stdout
    assert f"  ~ {disturbed_run.CELL}: disturbed, left out of the verdict: {disturbed_run.WHY}" in done.stdout
    # criteria read no figure of it
    done = cli("check", str(run.path), "--json", "--criteria", "rps > 0")
    said = json.loads(done.stdout)
    assert done.returncode == 0 and said["exit_code"] == 0, said
    assert {c["cell"]: c["status"] for c in said["cells"]}[disturbed_run.CELL] == "disturbed"
    assert sorted(e["subject"] for e in said["criteria"]) == [
        "ab-c10-ka-rep1", "engine-c10-ka-rep1", "engine-c10-ka-rep2"]


@pytest.mark.parametrize("given", ["-1", "x", "11"])
def test_retry_disturbed_takes_a_count_from_0_to_10(given: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        main(["run", "quickstart", "--retry-disturbed", given])
    assert stopped.value.code == 2
    assert "--retry-disturbed: expected a count from 0 to 10" in capsys.readouterr().err
