"""The run folder on disk: a torn or unterminated results.jsonl, interrupted cells run
again, and the lock that keeps a second writer out."""
import fcntl
import json
import os
import socket
import subprocess
import sys
import threading
import warnings

import pytest

from toolbench.errors import Notice, StoreError
from toolbench.record import store
from toolbench.record.manifest import Manifest, RunStatus, ScenarioRecord
from toolbench.record.schema import Counts, Identity, Measurement, Outcome, RunResult, Status


def result(cell_id: str, status: Status = Status.OK) -> RunResult:
    return RunResult(Identity(scenario="s", cell_id=cell_id, tool="ab", concurrency=1),
                     Outcome(status), Measurement("ab", counts=Counts(requests_total=10, requests_ok=10,
                                                                       requests_failed=0)))


@pytest.fixture
def run(tmp_path) -> store.RunDir:
    (tmp_path / store.RAW).mkdir()
    run = store.RunDir(tmp_path)
    run.write_manifest(Manifest(ScenarioRecord("s"), status=RunStatus.RUNNING))
    for cell in ("a", "b", "c"):
        run.append(result(cell))
    return run


def results_file(run: store.RunDir):
    return run.path / store.RESULTS


def ids(run: store.RunDir) -> list[str]:
    return [r.identity.cell_id for r in run.results()]


def test_a_torn_last_line_is_skipped_with_a_note(run):
    data = results_file(run).read_bytes()
    results_file(run).write_bytes(data[:-40])  # the crash cut the last record short
    with pytest.warns(Notice, match=r"results.jsonl:3: an incomplete last record"):
        assert ids(run) == ["a", "b"]
        assert run.finished_cells() == {"a", "b"}


def test_a_damaged_line_in_the_middle_is_an_error_naming_file_and_line(run):
    lines = results_file(run).read_text().splitlines(keepends=True)
    lines[1] = lines[1][:30] + "\n"
    results_file(run).write_text("".join(lines))
    with pytest.raises(StoreError, match=r"results.jsonl:2: not a result record"):
        run.results()


def test_repair_moves_a_torn_tail_aside_and_the_next_record_starts_on_its_own_line(run):
    whole = results_file(run).read_bytes()
    cut = whole[:-40]
    results_file(run).write_bytes(cut)
    note = run.repair_results()
    assert note and "moved to results.jsonl.torn" in note
    assert (run.path / store.TORN).read_bytes() == cut[cut.rindex(b"\n", 0, len(cut)) + 1:] + b"\n"
    run.append(result("c"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is left to step over
        assert ids(run) == ["a", "b", "c"]
    assert run.repair_results() is None


def test_repair_ends_a_complete_last_record_with_its_newline(run):
    whole = results_file(run).read_bytes()
    results_file(run).write_bytes(whole[:-1])
    assert ids(run) == ["a", "b", "c"]  # a complete record needs no newline to be read
    assert "no final newline" in run.repair_results()
    run.append(result("d"))
    assert ids(run) == ["a", "b", "c", "d"]
    assert results_file(run).read_bytes().startswith(whole)  # the newline went where it was missing
    assert not (run.path / store.TORN).exists()


def test_an_interrupted_cell_is_not_finished_and_its_later_run_replaces_it(run):
    run.append(result("d", Status.INTERRUPTED))
    assert run.finished_cells() == {"a", "b", "c"}
    assert [r.outcome.status for r in run.results()][-1] is Status.INTERRUPTED
    run.append(result("d"))
    assert ids(run) == ["a", "b", "c", "d"]
    assert all(r.outcome.status is Status.OK for r in run.results())
    assert len(results_file(run).read_text().splitlines()) == 5  # the record of the interruption stays on disk


def test_a_disturbed_cell_run_again_is_shown_by_its_last_record_and_both_stay_on_disk(run):
    run.append(result("d", Status.DISTURBED))
    assert run.finished_cells() == {"a", "b", "c", "d"}  # it ran to its end: --resume leaves it
    assert [r.outcome.status for r in run.results()][-1] is Status.DISTURBED  # alone, it is shown as it is
    run.append(result("d", Status.DISTURBED))
    run.append(result("d"))
    assert ids(run) == ["a", "b", "c", "d"] and run.results()[-1].outcome.status is Status.OK
    assert len(results_file(run).read_text().splitlines()) == 6


def test_a_second_writer_is_refused_with_the_folder_and_who_holds_it(run):
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from toolbench.record import store\n"
        f"lock = store.RunDir(Path({str(run.path)!r})).lock(); print('locked', flush=True); sys.stdin.read()")],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(StoreError) as caught:
            run.lock()
        message = str(caught.value)
        assert message.startswith(f"{run.path}: in use by another toolbench (pid {holder.pid} on ")
        assert "\n" not in message
    finally:
        holder.communicate("", timeout=30)
    with run.lock():  # its holder gone, the kernel dropped the lock
        pass


def test_the_end_of_a_run_is_recorded_even_without_its_reserve(run):
    run.reserve_space()
    assert os.path.getsize(run.path / store.RESERVE) == store.RESERVE_BYTES
    run.record_end("failed", "the error")
    assert not (run.path / store.RESERVE).exists()
    manifest = json.loads((run.path / store.MANIFEST).read_text())
    assert manifest["status"] == "failed" and manifest["error"] == "the error" and manifest["ended_at"]


def test_a_refused_lock_names_a_holder_that_writes_who_it_is_a_moment_later(tmp_path):
    """The holder writes its pid and host just after it takes the lock; a second toolbench refused
    in between waits for that (briefly) rather than saying "another process" (seen in CI)."""
    lock = tmp_path / store.LOCK
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        said = json.dumps({"pid": 4242, "host": socket.gethostname(), "since": "then"}) + "\n"
        late = threading.Timer(0.3, lambda: os.pwrite(fd, said.encode(), 0))
        late.start()
        with pytest.raises(StoreError, match=r"in use by another toolbench \(pid 4242 on .*, since then\)"):
            store.RunLock.acquire(tmp_path)
        late.join()
        os.ftruncate(fd, 0)  # a holder that never says who it is is "another process", after the wait
        with pytest.raises(StoreError, match=r"in use by another process; wait for it to end"):
            store.RunLock.acquire(tmp_path)
    finally:
        os.close(fd)
