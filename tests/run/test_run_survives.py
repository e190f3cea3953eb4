"""No signal, crash or full disk loses or corrupts a result: the real CLI is run as a
subprocess against the bundled nginx, stopped in every way it can be, then resumed. Each
test checks that nothing it started survives (by the pids and process groups the run
recorded, and by the target's port) and that every cell ends up stored exactly once."""
import json
import os
import re
import signal
import socket
import subprocess
import urllib.parse
from pathlib import Path

import psutil
import pytest

from conftest import need
from helpers.survival import TOOLBENCH, Run, _group, assert_nothing_survives, ledger, run_folder, running, wait_for
from toolbench.record import store
from toolbench.record.schema import Status

pytestmark = pytest.mark.integration

CELLS = ["ab-c1-ka-rep1", "ab-c2-ka-rep1", "ab-c3-ka-rep1"]
SCENARIO = """\
name: stops
target: {server: nginx-static}
matrix: {tool: [ab], concurrency: [1, 2, 3]}
stop: {duration: 1s}
cooldown: 0s
probe: {baseline: 3}
order: as-written
"""


def scenario(tmp_path: Path, text: str = SCENARIO) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def tool_in_flight(run_dir: Path, cells_done: int) -> bool:
    """True once `cells_done` results are stored and the next cell's tool is running."""
    lines = (run_dir / store.RESULTS).read_text().splitlines() if (run_dir / store.RESULTS).exists() else []
    started = [e for e in ledger(run_dir) if e["event"] == "started" and e["role"].startswith("tool")]
    stopped = {e["pid"] for e in ledger(run_dir) if e["event"] == "stopped"}
    return len(lines) == cells_done and len(started) == cells_done + 1 and started[-1]["pid"] not in stopped


def target_port(run_dir: Path) -> int:
    manifest = json.loads((run_dir / store.MANIFEST).read_text())
    (entry,) = manifest["targets"]
    return urllib.parse.urlsplit(entry["url"]).port


def start_mid_cell(tmp_path: Path, root: Path, cells_done: int = 1) -> tuple[Run, Path, int]:
    """A run started and caught while the tool of cell `cells_done + 1` runs: the run, its
    folder and its target's port."""
    run = Run(tmp_path, "run", str(scenario(tmp_path)), "--reports-dir", str(root))
    run_dir = run_folder(root)
    wait_for(f"the tool of cell {cells_done + 1}", lambda: tool_in_flight(run_dir, cells_done))
    return run, run_dir, target_port(run_dir)


def stored(run_dir: Path) -> list[dict]:
    """Every line of results.jsonl, each a whole record."""
    return [json.loads(line) for line in (run_dir / store.RESULTS).read_text().splitlines()]


def assert_every_cell_once(run_dir: Path) -> None:
    results = store.RunDir.open(run_dir).results()
    assert sorted(r.identity.cell_id for r in results) == CELLS
    assert all(r.outcome.status is Status.OK for r in results), [r.outcome.error for r in results]
    measured = [r["identity"]["cell_id"] for r in stored(run_dir) if r["outcome"]["status"] != "interrupted"]
    assert sorted(measured) == CELLS  # measured once each: nothing lost, nothing run twice


def resume(tmp_path: Path, run_dir: Path, name: str = "resume") -> Run:
    again = Run(tmp_path, name, str(scenario(tmp_path)), "--resume", str(run_dir))
    assert again.wait() == 0, again.stderr
    return again


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_a_signal_mid_cell_stops_everything_and_resume_runs_that_cell_again(tmp_path, sig, code):
    need("ab")
    run, run_dir, port = start_mid_cell(tmp_path, tmp_path / "r")
    run.proc.send_signal(sig)
    assert run.wait() == code, run.stderr
    assert "Traceback" not in run.stderr
    assert run.stderr.splitlines()[-1] == (f"toolbench: interrupted by {sig.name}; the cells measured so far "
                                           f"are kept in {run_dir}")
    assert run.stdout.strip().endswith("report.html")  # what was measured is rendered
    assert_nothing_survives(run_dir, port)
    manifest = json.loads((run_dir / store.MANIFEST).read_text())
    assert manifest["status"] == "interrupted"
    assert [(r["identity"]["cell_id"], r["outcome"]["status"]) for r in stored(run_dir)] == [
        ("ab-c1-ka-rep1", "ok"), ("ab-c2-ka-rep1", "interrupted")]
    first = (run_dir / store.RESULTS).read_text().splitlines()[0]

    again = resume(tmp_path, run_dir)
    assert "ab-c2-ka-rep1: ok" in again.stderr  # the interrupted cell is run again
    assert (run_dir / store.RESULTS).read_text().splitlines()[0] == first  # the measured one is kept
    assert_every_cell_once(run_dir)
    assert json.loads((run_dir / store.MANIFEST).read_text())["status"] == "complete"
    assert_nothing_survives(run_dir, target_port(run_dir))


def test_kill_9_leaves_nothing_running_and_resume_completes_the_run(tmp_path):
    need("ab")
    run, run_dir, port = start_mid_cell(tmp_path, tmp_path / "r")
    run.proc.kill()
    run.wait()
    assert_nothing_survives(run_dir, port)  # the kernel and the watchdog, not toolbench, stopped them
    assert json.loads((run_dir / store.MANIFEST).read_text())["status"] == "running"

    resume(tmp_path, run_dir)
    assert_every_cell_once(run_dir)
    assert json.loads((run_dir / store.MANIFEST).read_text())["status"] == "complete"


def test_resume_names_what_a_killed_run_left_when_its_watchdog_was_killed_too(tmp_path):
    # Without the watchdog, nginx's worker outlives its killed master. A run folder may come from
    # anyone, and with its leader gone nothing proves that group is the run's: --resume leaves it
    # alone and says so (pids and group), and this test, which knows, ends it.
    need("ab")
    run, run_dir, port = start_mid_cell(tmp_path, tmp_path / "r")
    (watchdog,) = [e["pid"] for e in ledger(run_dir) if e.get("role") == "watchdog"]
    os.kill(watchdog, signal.SIGKILL)
    wait_for("the watchdog's end", lambda: not psutil.pid_exists(watchdog) or
             psutil.Process(watchdog).status() == psutil.STATUS_ZOMBIE)
    run.proc.kill()
    run.wait()
    (nginx,) = [e for e in ledger(run_dir) if e.get("role") == "target nginx"]
    worker = wait_for("nginx's orphaned worker", lambda: [
        p for p in running() if p.pid != nginx["pid"] and _group(p.pid) == nginx["pgid"]])
    socket.create_connection(("127.0.0.1", port), timeout=5).close()  # it still serves
    # Until whoever inherited the master reaps it, its zombie holds its pid: the group is then still
    # provably the run's (tests/hosts/test_lifeline.py). Here it is the case after: the leader gone.
    wait_for("the reaping of nginx's master", lambda: not psutil.pid_exists(nginx["pid"]), timeout=30)

    again = resume(tmp_path, run_dir)
    said = re.search(rf"toolbench: note: left alone: target nginx \(pid ([\d, ]+)\) in process group {nginx['pgid']}: "
                     rf"the leader the run recorded \(pid {nginx['pid']}\) is gone, so nothing proves", again.stderr)
    assert said, again.stderr
    assert {p.pid for p in worker} <= {int(pid) for pid in said.group(1).split(", ")}
    assert all(p.is_running() for p in worker)
    for proc in [p for p in running() if _group(p.pid) == nginx["pgid"]]:
        proc.kill()
    assert_nothing_survives(run_dir, port)
    assert_every_cell_once(run_dir)
    resumed = json.loads((run_dir / store.MANIFEST).read_text())["resumed"]
    assert resumed[0]["stopped_leftovers"] == []


def test_a_torn_results_file_is_read_and_resumed_without_loss(tmp_path):
    need("ab")
    run = Run(tmp_path, "run", str(scenario(tmp_path)), "--reports-dir", str(tmp_path / "r"))
    assert run.wait() == 0, run.stderr
    run_dir = run_folder(tmp_path / "r")
    results = run_dir / store.RESULTS
    whole = results.read_bytes()
    last = whole.rstrip(b"\n").rsplit(b"\n", 1)[1]
    results.write_bytes(whole[:len(whole) - len(last) // 2])  # a crash cut the last record in half

    report = subprocess.run([TOOLBENCH, "report", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    assert report.stderr == (f"toolbench: note: {results}:3: an incomplete last record (cut off by a crash) "
                             "was skipped\n")
    again = resume(tmp_path, run_dir)
    assert "ab-c3-ka-rep1: ok" in again.stderr and "moved to results.jsonl.torn" in again.stderr
    assert_every_cell_once(run_dir)

    # A last record without its newline is whole: kept, and the next one starts on its own line.
    whole = results.read_bytes()
    results.write_bytes(whole[:-1])
    again = resume(tmp_path, run_dir, "resume-2")
    assert "no final newline; one was added" in again.stderr
    assert results.read_bytes() == whole  # nothing to run again, nothing appended onto it
    assert_every_cell_once(run_dir)

    # Damage anywhere else is an error naming the file and the line.
    lines = whole.splitlines()
    lines[1] = lines[1][:50]
    results.write_bytes(b"\n".join(lines) + b"\n")
    report = subprocess.run([TOOLBENCH, "report", str(run_dir)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 1
    assert report.stderr.startswith(f"toolbench: error: {results}:2: not a result record") and \
        report.stderr.count("\n") == 1


def test_two_resumes_of_one_run_do_not_both_run(tmp_path):
    need("ab")
    run, run_dir, _ = start_mid_cell(tmp_path, tmp_path / "r", cells_done=0)
    run.proc.send_signal(signal.SIGINT)
    assert run.wait() == 130

    both = [Run(tmp_path, name, str(scenario(tmp_path)), "--resume", str(run_dir)) for name in ("one", "two")]
    codes = sorted(r.wait() for r in both)
    assert codes == [0, 1], [r.stderr for r in both]
    winner, loser = both if both[0].proc.returncode == 0 else both[::-1]
    assert ", since " in loser.stderr, loser.stderr
    assert loser.stderr == (f"toolbench: error: {run_dir}: in use by another toolbench (pid {winner.proc.pid} "
                            f"on {socket.gethostname()}, since " + loser.stderr.split(", since ", 1)[1])
    assert loser.stderr.endswith("; wait for it to end or stop it\n") and loser.stderr.count("\n") == 1
    assert_every_cell_once(run_dir)


@pytest.fixture
def small_disk(tmp_path):
    """A tmpfs of its own; `fill()` takes all the space it has left, `free()` gives it back."""
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.strip()}")

    class Disk:
        path = mount
        filler = mount / "filler"

        def fill(self) -> None:
            # Unbuffered: a buffered writer keeps the tail of a short write and raises ENOSPC
            # again on close, whenever the space left is not a multiple of the write.
            with open(self.filler, "wb", buffering=0) as fh:
                try:
                    while True:
                        fh.write(b"\0" * 65536)
                except OSError:
                    pass

        def free(self) -> None:
            self.filler.unlink()

    try:
        yield Disk()
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_a_full_disk_ends_in_one_line_with_every_result_intact(tmp_path, small_disk):
    need("ab")
    run, run_dir, port = start_mid_cell(tmp_path, small_disk.path / "r")
    small_disk.fill()
    assert run.wait() == 1, run.stderr
    errors = [line for line in run.stderr.splitlines() if line.startswith("toolbench")]
    assert errors == [f"toolbench: error: {run_dir}: no space left on its device; the one result written so far "
                      f"is intact; free some space and continue with `toolbench run SCENARIO --resume {run_dir}`"]
    assert "Traceback" not in run.stderr
    assert_nothing_survives(run_dir, port)
    assert [r["identity"]["cell_id"] for r in stored(run_dir)] == CELLS[:1]  # whole lines only
    manifest = json.loads((run_dir / store.MANIFEST).read_text())
    assert manifest["status"] == "failed" and "no space left" in manifest["error"]

    small_disk.free()
    resume(tmp_path, run_dir)
    assert_every_cell_once(run_dir)
