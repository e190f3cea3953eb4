"""`run --resume` of a run folder from anyone: a symbolic link planted in it (to a file outside the
run, which stays as it was, byte for byte) is never written, appended to or truncated through,
and a ledger line crafted to name another process group never gets that group killed.

The stored run is real: the CLI ran it against a port where nothing listens, so its one cell
failed fast and is finished; resuming it runs no cell again, but opens, repairs, locks and
rewrites every file of the run."""
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from helpers.survival import TOOLBENCH
from toolbench.hosts import lifeline
from toolbench.record import store

SCENARIO = """\
name: links
target: {url: "http://127.0.0.1:9/", ready: {timeout: 0.2s}}
matrix: {tool: [engine], concurrency: [1]}
stop: {duration: 1s}
cooldown: 0s
probe: {enabled: false}
criteria: [error_rate < 1%]
"""
PRECIOUS = b"someone else's file: toolbench must not touch it\n"
RESUMED = 3  # a resume that ran nothing: the stored cell failed (README, "Exit codes")


def toolbench(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([TOOLBENCH, *args, "--no-progress"], capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The scenario and a run of it, stored once; each test resumes a copy."""
    folder = tmp_path_factory.mktemp("stored")
    scenario = folder / "s.yaml"
    scenario.write_text(SCENARIO)
    made = toolbench("run", str(scenario), "--reports-dir", str(folder / "r"), "-q")
    (run,) = (folder / "r").iterdir()
    assert made.returncode == RESUMED and (run / store.RESULTS).is_file(), made.stderr
    return scenario, run


@pytest.fixture
def run(stored: tuple[Path, Path], tmp_path: Path) -> Path:
    copy = tmp_path / "run"
    shutil.copytree(stored[1], copy)
    return copy


def resume(stored: tuple[Path, Path], run: Path) -> subprocess.CompletedProcess[str]:
    return toolbench("run", str(stored[0]), "--resume", str(run))


def torn(data: bytes) -> bytes:
    return data + b'{"schema_version": 4, "iden'  # a last record a crash cut short


@pytest.mark.parametrize("name", [store.RESULTS, lifeline.LEDGER, store.MANIFEST, store.LOCK, store.TORN])
def test_resume_refuses_a_record_that_is_a_link_and_leaves_its_target_as_it_was(stored, run, tmp_path, name):
    outside = tmp_path / "outside"
    if name == store.TORN:  # read only to repair a torn results file
        (run / store.RESULTS).write_bytes(torn((run / store.RESULTS).read_bytes()))
        outside.write_bytes(PRECIOUS)
    elif name == store.RESULTS:  # a torn file: what resume would cut and move aside
        outside.write_bytes(torn((run / name).read_bytes()))
    elif name == store.LOCK:
        outside.write_bytes(PRECIOUS)
    else:  # a copy of the run's own, so that reading it would find nothing wrong
        outside.write_bytes((run / name).read_bytes())
    before = outside.read_bytes()
    (run / name).unlink(missing_ok=True)
    (run / name).symlink_to(outside)
    resumed = resume(stored, run)
    assert outside.read_bytes() == before
    assert resumed.returncode == 1, resumed.stderr
    assert resumed.stderr.splitlines()[-1] == (f"toolbench: error: {run / name}: is a symbolic link; toolbench never "
                                               "follows a link in a run folder (it may lead out of it)")
    assert "Traceback" not in resumed.stderr


@pytest.mark.parametrize("name", [store.MANIFEST + ".tmp", "report.html.tmp", "criteria.json.tmp", store.RESERVE])
def test_resume_writes_no_temporary_file_through_a_planted_link(stored, run, tmp_path, name):
    outside = tmp_path / "outside"
    outside.write_bytes(PRECIOUS)
    (run / name).symlink_to(outside)
    resumed = resume(stored, run)
    assert resumed.returncode == RESUMED, resumed.stderr
    assert outside.read_bytes() == PRECIOUS
    assert json.loads((run / store.MANIFEST).read_text())["status"] == "complete"
    assert (run / "report.html").is_file() and (run / "criteria.json").is_file()


def test_resume_kills_no_group_its_ledger_cannot_prove_it_started(stored, run):
    victim = subprocess.Popen(["sleep", "120"], start_new_session=True)  # a process of its own group
    try:
        done = subprocess.Popen(["true"])
        done.wait()  # its pid runs no more
        with open(run / lifeline.LEDGER, "a") as ledger:
            ledger.write(json.dumps({"event": "started", "role": "target nginx", "pid": done.pid,
                                     "pgid": victim.pid, "create_time": 0.0}) + "\n")
        resumed = resume(stored, run)
        assert resumed.returncode == RESUMED, resumed.stderr
        assert (f"toolbench: note: left alone: target nginx (pid {victim.pid}) in process group {victim.pid}: the "
                f"leader the run recorded (pid {done.pid}) is gone, so nothing proves they are the run's"
                ) in resumed.stderr
        time.sleep(0.2)
        assert victim.poll() is None  # still alive
    finally:
        victim.kill()
        victim.wait()
