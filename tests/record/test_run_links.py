"""A run folder is untrusted input: a symbolic link planted in it, to a file outside the run, is
never written, appended to, truncated or read through by the store, and the file it points at
stays as it was, byte for byte. A record of the wrong shape is a StoreError naming it."""
import json
import os
from pathlib import Path

import pytest

from helpers.small_run import result, two_cells
from toolbench.errors import StoreError
from toolbench.record import store
from toolbench.record.manifest import RunStatus

PRECIOUS = b"someone else's file: toolbench must not touch it\n"


@pytest.fixture
def run(tmp_path: Path) -> store.RunDir:
    return two_cells(tmp_path)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    path = tmp_path / "outside.txt"
    path.write_bytes(PRECIOUS)
    return path


def plant(run: store.RunDir, name: str, target: Path) -> Path:
    link = run.path / name
    link.unlink(missing_ok=True)
    link.symlink_to(target)
    return link


def refused(link: Path) -> str:
    return rf"^{link}: is a symbolic link; toolbench never follows a link in a run folder"


def test_a_result_is_never_appended_through_a_link(run, outside):
    link = plant(run, store.RESULTS, outside)
    with pytest.raises(StoreError, match=refused(link)):
        run.append(result("c"))
    assert outside.read_bytes() == PRECIOUS


def test_repair_never_truncates_a_linked_results_file_nor_appends_to_a_linked_torn_file(run, outside):
    torn = (run.path / store.RESULTS).read_bytes() + b'{"schema_version": 4, "iden'  # cut off by a crash
    outside.write_bytes(torn)
    link = plant(run, store.RESULTS, outside)
    with pytest.raises(StoreError, match=refused(link)):
        run.repair_results()
    assert outside.read_bytes() == torn
    link.unlink()
    (run.path / store.RESULTS).write_bytes(torn)
    outside.write_bytes(PRECIOUS)
    link = plant(run, store.TORN, outside)
    with pytest.raises(StoreError, match=refused(link)):
        run.repair_results()
    assert outside.read_bytes() == PRECIOUS
    assert (run.path / store.RESULTS).read_bytes() == torn  # refused before anything was cut


def test_the_lock_and_the_reserve_are_never_made_through_a_link(run, outside):
    link = plant(run, store.LOCK, outside)
    with pytest.raises(StoreError, match=refused(link)):
        run.lock()
    assert outside.read_bytes() == PRECIOUS
    plant(run, store.RESERVE, outside)
    run.reserve_space()  # best effort: without its reserve the run goes on
    assert outside.read_bytes() == PRECIOUS
    run.release_space()
    assert outside.read_bytes() == PRECIOUS


def test_the_manifest_is_written_through_a_temporary_file_made_fresh(run, outside):
    plant(run, store.MANIFEST + ".tmp", outside)
    run.update_manifest(status=RunStatus.COMPLETE)
    assert outside.read_bytes() == PRECIOUS
    assert run.manifest().status is RunStatus.COMPLETE
    assert not [p for p in run.path.iterdir() if p.name.endswith(".tmp") and not p.is_symlink()]


def test_a_linked_record_is_not_read(run, tmp_path):
    for name in (store.MANIFEST, store.RESULTS):
        copy = tmp_path / f"elsewhere-{name}"
        copy.write_bytes((run.path / name).read_bytes())
        link = plant(run, name, copy)
        with pytest.raises(StoreError, match=refused(link)):
            run.manifest() if name == store.MANIFEST else run.results()
        link.unlink()
        (run.path / name).write_bytes(copy.read_bytes())


def test_a_cell_is_never_run_into_a_folder_through_or_holding_a_link(run, outside, tmp_path):
    # The tools and servers a cell starts write into its folder through whatever they find there.
    (run.path / store.RAW / "c").mkdir()
    link = run.path / store.RAW / "c" / "stdout.txt"
    link.symlink_to(outside)
    with pytest.raises(StoreError, match=refused(link)):
        run.cell_dir("c")
    assert outside.read_bytes() == PRECIOUS
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.rename(run.path / store.RAW, tmp_path / "raw-aside")
    raw = plant(run, store.RAW, elsewhere)
    with pytest.raises(StoreError, match=refused(raw)):
        run.cell_dir("d")
    assert list(elsewhere.iterdir()) == []


def test_a_run_folder_that_is_a_link_is_never_written(run, tmp_path):
    linked = store.RunDir(tmp_path / "linked")
    linked.path.symlink_to(run.path)
    before = (run.path / store.RESULTS).read_bytes()
    with pytest.raises(StoreError, match=refused(linked.path)):
        linked.append(result("c"))
    assert (run.path / store.RESULTS).read_bytes() == before


@pytest.mark.parametrize("line, said", [
    ("[1, 2]", "expected a JSON object, got list"),
    ('{"schema_version": 4, "identity": {"scenario": "s", "cell_id": "x", "tool": "ab", "concurrency": 1}}',
     "RunResult: .*outcome"),  # a required part missing
    ('{"schema_version": 4, "identity": {"scenario": "s", "cell_id": "x", "tool": "ab", "concurrency": 1}, '
     '"outcome": {"status": "ok"}, "measurement": {"tool": "ab", "notes": 5}}', r"measurement.notes: expected a list"),
    ('{"schema_version": 4, "identity": {"scenario": "s", "cell_id": "x", "tool": "ab", "concurrency": 1}, '
     '"outcome": {"status": "ok"}, "measurement": {"tool": "ab", "counts": {"status_codes": {"abc": 1}}}}',
     "'abc' is not a key of type int"),
])
def test_a_record_of_the_wrong_shape_is_a_store_error_naming_its_line(run, line, said):
    with open(run.path / store.RESULTS, "a") as fh:
        fh.write(line + "\n")
    run.append(result("c"))  # not the last line: not taken for one a crash cut short
    with pytest.raises(StoreError, match=rf"results.jsonl:3: .*{said}"):
        run.results()


def test_a_manifest_of_the_wrong_shape_is_a_store_error(run):
    data = json.loads((run.path / store.MANIFEST).read_text())
    data["environment"] = {"argv": 5}
    (run.path / store.MANIFEST).write_text(json.dumps(data))
    with pytest.raises(StoreError, match=r"manifest.json: manifest.environment.argv: expected a list, got int"):
        run.manifest()
    # A version-1 manifest (toolbench 0.1) whose tools are not the map that version kept.
    (run.path / store.MANIFEST).write_text(json.dumps({"toolbench_manifest": 1, "scenario": {"name": "s"},
                                                       "tools": ["ab"]}))
    with pytest.raises(StoreError, match=r"manifest.json: manifest_version 1: does not read as one"):
        run.manifest()
