"""`-o`, `--junit` and export paths: a regular file, replaced whole, or a one-line refusal that
leaves a device, FIFO or folder under that name as it was."""
import os
import shutil
import stat

import pytest

from conftest import FIXTURES
from helpers.cli import cli
from toolbench.errors import ToolbenchError
from toolbench.export import formats, junit, rows
from toolbench.report import render

WRITERS = {"export": ("export", "{run}", "--format", "csv", "-o", "{out}"),
           "report": ("report", "{run}", "-o", "{out}"),
           "junit": ("check", "{run}", "--junit", "{out}")}


@pytest.fixture
def run(tmp_path):
    copy = tmp_path / "run"
    shutil.copytree(FIXTURES / "runs" / "tie", copy)
    return copy


@pytest.mark.parametrize("writer", WRITERS)
def test_a_fifo_or_a_device_is_refused_in_one_line_and_left_as_it_was(tmp_path, run, writer):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    targets = [fifo]
    if os.geteuid() == 0:
        device = tmp_path / "null"
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        targets.append(device)
    for target in targets:
        done = cli(*(a.format(run=run, out=target) for a in WRITERS[writer]))
        assert done.returncode == 2
        assert done.stderr == f"toolbench: error: {target}: not a regular file; give a file path\n"
        assert not stat.S_ISREG(os.lstat(target).st_mode)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@pytest.mark.parametrize("writer", WRITERS)
def test_a_regular_file_is_replaced_by_a_new_whole_one(tmp_path, run, writer):
    out = tmp_path / "out"
    out.write_text("old")
    inode = os.stat(out).st_ino
    done = cli(*(a.format(run=run, out=out) for a in WRITERS[writer]))
    assert done.returncode == 0, done.stderr
    assert out.read_text() != "old" and os.stat(out).st_ino != inode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out", "run"]  # no temporary left beside it


def test_the_library_writers_refuse_a_fifo_too(tmp_path, run):
    """Checked where the file is written, not only by the CLI's options."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    message = f"{fifo}: not a regular file; give a file path"
    frame = rows.frame([rows.flatten(r) for _, r in rows.results([run])])
    with pytest.raises(ToolbenchError, match=message):
        formats.write(frame, "json", fifo, None)
    with pytest.raises(ToolbenchError, match=message):
        junit.write(fifo, "s", junit.Cells([], []), [])
    with pytest.raises(ToolbenchError, match=message):
        render.write(fifo, "<html></html>")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
