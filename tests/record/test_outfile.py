"""A file the user names for output is only ever a regular file, replaced whole: a device, FIFO,
socket or folder under that name is refused and left as it was."""
import os
import socket
import stat

import pytest

from toolbench.errors import ToolbenchError
from toolbench.record import outfile


def _specials(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    folder = tmp_path / "folder"
    folder.mkdir()
    sock = tmp_path / "sock"
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(sock))
    listener.close()
    found = {"fifo": fifo, "folder": folder, "socket": sock}
    if os.geteuid() == 0:  # a device node of our own (the null device's numbers), never /dev/null itself
        device = tmp_path / "null"
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        found["device"] = device
    link = tmp_path / "link"
    link.symlink_to(fifo)
    found["link to a fifo"] = link
    return found


def test_a_special_file_or_folder_is_refused_in_one_line_and_left_untouched(tmp_path):
    for kind, path in _specials(tmp_path).items():
        before = os.lstat(path)
        with pytest.raises(ToolbenchError) as caught:
            outfile.write_bytes(path, b"data")
        what = "a folder" if kind == "folder" else "not a regular file"
        assert str(caught.value) == f"{path}: {what}; give a file path", kind
        after = os.lstat(path)
        assert (after.st_ino, after.st_mode) == (before.st_ino, before.st_mode), kind
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["fifo", "folder", "sock", "link"] + (["null"] if os.geteuid() == 0 else []))  # no temporary left
    assert list((tmp_path / "folder").iterdir()) == []


def test_a_regular_file_is_replaced_whole_by_a_new_one(tmp_path):
    path = tmp_path / "out.csv"
    path.write_text("old")
    old = os.stat(path).st_ino
    keep = open(path)  # a reader holding the old file sees it whole, never half of the new
    outfile.write_bytes(path, b"new content")
    assert path.read_text() == "new content" and os.stat(path).st_ino != old
    assert keep.read() == "old"
    keep.close()
    assert stat.S_ISREG(os.stat(path).st_mode) and sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_a_write_that_fails_midway_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.json"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with outfile.written(path) as tmp:
            tmp.write_text("half")
            raise RuntimeError("the writer broke")
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_a_new_file_gets_its_folders_and_the_usual_mode(tmp_path):
    path = tmp_path / "a" / "b" / "out.md"
    outfile.write_bytes(path, b"x")
    umask = os.umask(0)
    os.umask(umask)
    assert path.read_bytes() == b"x" and stat.S_IMODE(os.stat(path).st_mode) == 0o666 & ~umask
