"""A file the user names for toolbench to write (`-o`, `--junit`, an export): only ever a regular
file, written whole. Renaming over a path replaces whatever is there, so `-o /dev/null` run as
root would remove the device and leave a file in its place, and writing into a FIFO would block;
what is already there must be a regular file (or nothing), else the write is refused in one line.
The new content goes to a fresh temporary file beside it, is synced, then renamed over it: a
reader sees the old file or the new one, never half of either, even after a crash."""
from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import Iterator

from toolbench.errors import ToolbenchError


def refusal(path: Path) -> ToolbenchError | None:
    """Why `path` may not be written as a file (it is a folder, a device, a FIFO, a socket, or a
    link to one), or None when it is a regular file or does not exist yet."""
    try:
        mode = os.stat(path).st_mode  # through a link: a link to /dev/null is refused as /dev/null is
    except FileNotFoundError:
        return None
    except OSError as exc:
        return ToolbenchError(f"{path}: cannot write: {exc.strerror or exc}")
    if stat.S_ISREG(mode):
        return None
    what = "a folder" if stat.S_ISDIR(mode) else "not a regular file"
    return ToolbenchError(f"{path}: {what}; give a file path")


@contextlib.contextmanager
def written(path: Path) -> Iterator[Path]:
    """A temporary path to write the new content to, renamed over `path` when the block ends
    without an error; on an error, `path` is left as it was. Raises ToolbenchError when `path`
    is not a regular file that may be replaced (refusal)."""
    path = Path(path)
    if (refused := refusal(path)) is not None:
        raise refused
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _fresh(path)
    except OSError as exc:
        raise ToolbenchError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        yield tmp
        _sync(tmp)
        if (refused := refusal(path)) is not None:  # made special while we wrote: still never replaced
            raise refused
        os.replace(tmp, path)
        _sync_folder(path.parent)
    except OSError as exc:
        raise ToolbenchError(f"{path}: cannot write: {exc.strerror or exc}") from None
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def write_bytes(path: Path, data: bytes) -> None:
    """`data` as the whole of `path` (see written)."""
    with written(path) as tmp:
        tmp.write_bytes(data)


def _fresh(path: Path) -> Path:
    """An empty file beside `path` of a name nobody could have planted a link under (O_EXCL), with
    the mode a file written plainly would get (0666 less the umask)."""
    while True:
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666))
            return tmp
        except FileExistsError:
            continue


def _sync(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _sync_folder(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not every file system syncs a folder; the rename stands
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
