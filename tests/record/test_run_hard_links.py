"""A run folder is untrusted input: a file in it may be a hard link, another name of a file outside
the run (its owner's own, or a `cp -al` copy of the run). Whatever the store writes to such a file
changes only the run's own copy: the file outside stays as it was, byte for byte, and keeps its
mode; what lists files to publish leaves such a file out, and a reader for publishing refuses it."""
import os
import stat
from pathlib import Path

import pytest

from helpers.small_run import result, two_cells
from toolbench.errors import StoreError
from toolbench.record import runfiles, store

PRECIOUS = b"someone else's file: toolbench must not touch it\n"
TORN = b'{"schema_version": 4, "iden'  # a last record a crash cut short


@pytest.fixture
def run(tmp_path: Path) -> store.RunDir:
    return two_cells(tmp_path)


def plant(where: Path, outside: Path, data: bytes) -> None:
    """`where` made another name of `outside`, which holds `data` (mode 0600: someone's own)."""
    outside.write_bytes(data)
    outside.chmod(0o600)
    where.unlink(missing_ok=True)
    os.link(outside, where)
    assert where.stat().st_nlink == 2


def test_a_result_appended_to_a_hard_linked_results_file_stays_in_the_run(run, tmp_path):
    outside = tmp_path / "outside"
    before = (run.path / store.RESULTS).read_bytes()
    plant(run.path / store.RESULTS, outside, before)
    run.append(result("c"))
    assert outside.read_bytes() == before and stat.S_IMODE(outside.stat().st_mode) == 0o600
    assert [r.identity.cell_id for r in run.results()] == ["a", "b", "c"]
    assert (run.path / store.RESULTS).stat().st_nlink == 1
    assert stat.S_IMODE((run.path / store.RESULTS).stat().st_mode) == 0o600  # the copy keeps the mode


def test_repair_cuts_and_appends_only_the_runs_own_files(run, tmp_path):
    torn = (run.path / store.RESULTS).read_bytes() + TORN
    plant(run.path / store.RESULTS, tmp_path / "outside-results", torn)
    plant(run.path / store.TORN, tmp_path / "outside-torn", PRECIOUS)
    assert "moved to" in run.repair_results()
    assert (tmp_path / "outside-results").read_bytes() == torn
    assert (tmp_path / "outside-torn").read_bytes() == PRECIOUS
    assert (run.path / store.TORN).read_bytes() == PRECIOUS + TORN + b"\n"
    assert [r.identity.cell_id for r in run.results()] == ["a", "b"]


def test_the_lock_and_the_reserve_never_change_a_hard_linked_file(run, tmp_path):
    plant(run.path / store.LOCK, tmp_path / "outside-lock", PRECIOUS)
    plant(run.path / store.RESERVE, tmp_path / "outside-reserve", PRECIOUS)
    run.lock().release()
    run.reserve_space()
    assert (tmp_path / "outside-lock").read_bytes() == PRECIOUS
    assert (tmp_path / "outside-reserve").read_bytes() == PRECIOUS  # never extended to the reserve's size
    assert (run.path / store.RESERVE).stat().st_size >= len(PRECIOUS)


@pytest.mark.parametrize("flags", [os.O_WRONLY | os.O_APPEND, os.O_WRONLY | os.O_TRUNC, os.O_RDWR,
                                   os.O_WRONLY | os.O_CREAT | os.O_TRUNC, os.O_RDWR | os.O_APPEND | os.O_CREAT])
def test_any_file_opened_for_writing_is_made_the_runs_own_first(run, tmp_path, flags):
    outside = tmp_path / "outside"
    plant(run.path / "processes.jsonl", outside, PRECIOUS)
    fd = runfiles.open_file(run.path, "processes.jsonl", flags)
    try:
        os.write(fd, b"written\n")
    finally:
        os.close(fd)
    assert outside.read_bytes() == PRECIOUS
    kept = (run.path / "processes.jsonl").read_bytes()
    assert kept == (b"written\n" if flags & os.O_TRUNC else
                    PRECIOUS + b"written\n" if flags & os.O_APPEND else b"written\n" + PRECIOUS[8:])


def test_a_cell_folder_holding_a_hard_link_is_handed_over_with_a_copy_of_its_own(run, tmp_path):
    # The tools a cell starts open its files with plain open(): they would write through a hard link.
    folder = run.path / store.RAW / "c"
    folder.mkdir()
    (folder / "sub").mkdir()
    outside = tmp_path / "outside"
    plant(folder / "stdout.txt", outside, PRECIOUS)
    os.link(outside, folder / "sub" / "stderr.txt")
    assert run.cell_dir("c") == folder
    for name in ("stdout.txt", "sub/stderr.txt"):
        assert (folder / name).stat().st_nlink == 1 and (folder / name).read_bytes() == PRECIOUS
        (folder / name).write_bytes(b"the tool's output\n")  # as a tool writes: truncating in place
    assert outside.read_bytes() == PRECIOUS and outside.stat().st_nlink == 1


def test_publishing_lists_and_reads_no_hard_linked_file(run, tmp_path):
    folder = run.path / store.RAW / "c"
    folder.mkdir()
    (folder / "own.txt").write_bytes(b"the run's own\n")
    plant(folder / "stdout.txt", tmp_path / "outside", PRECIOUS)
    listing = runfiles.plain_files(run.path, store.RAW)
    assert (listing.files, listing.links, listing.shared) == (("raw/c/own.txt",), (), ("raw/c/stdout.txt",))
    assert runfiles.has_other_names(run.path, "raw/c/stdout.txt")
    assert not runfiles.has_other_names(run.path, "raw/c/own.txt")
    with pytest.raises(StoreError, match=r"stdout.txt: is a hard link .*toolbench never publishes one$"):
        runfiles.reader(run.path, "raw/c/stdout.txt", only_name=True)
    with runfiles.reader(run.path, "raw/c/own.txt", only_name=True) as fh:
        assert fh.read() == b"the run's own\n"
