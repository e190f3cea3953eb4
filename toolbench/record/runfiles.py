"""Files in a run folder, opened without ever following a symbolic link.

A run folder may come from anyone (a colleague's upload, a site's download): a link planted in
it must not make toolbench write, append to, truncate or read a file outside it. Every writer of
a run's files opens them here: each folder on the way (the run folder itself included, when
writing) is opened with O_NOFOLLOW relative to the one before, and the file too, so that no
link is followed at any step, whatever changes in between; a file replaced whole is written to
a temporary file made fresh (O_EXCL, a new name each time) and renamed over it. What lists a
run's raw files (`plain_files`) steps over links too, and says which it left out.

A hard link is no safer: a file of the run may be another name of a file outside it (its owner's
own, or made by `cp -al`). A file opened here for writing that has other names is first replaced
by a copy of its own (same bytes, same mode), so the write changes only the run's file; a folder
handed to tools again gets the same for every file in it (`unshare_below`); and what lists files
to publish leaves such a file out (`Listing.shared`), as `reader(..., only_name=True)` refuses it."""
from __future__ import annotations

import contextlib
import errno
import json
import os
import secrets
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable, Iterator

from toolbench.errors import StoreError

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_NOFOLLOW_DIR = _DIR | os.O_NOFOLLOW
# What a link met with O_NOFOLLOW gives: ELOOP for the last part, ENOTDIR for a folder on the way.
_LINK_ERRORS = (errno.ELOOP, errno.ENOTDIR, errno.EMLINK)


def parts_of(relative: str | Path) -> list[str]:
    """The parts of a path inside a folder; an absolute path, `..` or an empty part is refused."""
    text = Path(relative).as_posix()
    parts = [p for p in text.split("/") if p not in ("", ".")]
    if text.startswith("/") or not parts or ".." in parts:
        raise StoreError(f"{str(relative)!r}: refusing a path outside its folder")
    return parts


def link_refused(path: Path) -> StoreError:
    return StoreError(f"{path}: is a symbolic link; toolbench never follows a link in a run folder "
                      "(it may lead out of it)")


@contextlib.contextmanager
def folder(root: Path, *parts: str, create: bool = False, follow_root: bool = False) -> Iterator[int]:
    """A descriptor of root/parts..., no step of it a link: root itself (unless `follow_root`:
    a folder the user named, such as a site's) and each folder below it. `create` makes the
    folders that are missing."""
    try:
        fd = os.open(root, _DIR if follow_root else _NOFOLLOW_DIR)
    except OSError as exc:
        raise _refusal(root, exc) from None
    try:
        where = root
        for part in parts:
            where = where / part
            child = _child(fd, part, where, create)
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


def _child(parent: int, name: str, where: Path, create: bool) -> int:
    """The folder `name` in `parent`, made when missing and `create`."""
    try:
        try:
            return os.open(name, _NOFOLLOW_DIR, dir_fd=parent)
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):  # made meanwhile: opened below all the same
                os.mkdir(name, 0o777, dir_fd=parent)
            return os.open(name, _NOFOLLOW_DIR, dir_fd=parent)
    except OSError as exc:
        raise _refusal(where, exc, parent, name) from None


def _refusal(path: Path, exc: OSError, parent: int | None = None, name: str | None = None) -> OSError | StoreError:
    """A StoreError when `path` is a link (what O_NOFOLLOW met), else the OSError, naming the
    whole path (an open relative to a folder names only the last part)."""
    named = OSError(exc.errno, exc.strerror, str(path))
    if exc.errno not in _LINK_ERRORS:
        return named
    try:
        found = os.lstat(name, dir_fd=parent) if parent is not None and name else os.lstat(path)
    except OSError:
        return named
    return link_refused(path) if stat.S_ISLNK(found.st_mode) else named


def open_file(root: Path, relative: str | Path, flags: int, mode: int = 0o644, *,
              follow_root: bool = False) -> int:
    """os.open of root/relative, refusing (StoreError) a link as the file or as any folder on
    the way, root included (unless `follow_root`); any other failure is the OSError. Opened for
    writing, a file with other names (a hard link) is first made a copy of its own."""
    *folders, name = parts_of(relative)
    writing = flags & (os.O_WRONLY | os.O_RDWR)
    with folder(root, *folders, follow_root=follow_root) as parent:
        try:
            # O_TRUNC waits until the file is known to be the run's alone.
            fd = os.open(name, (flags & ~os.O_TRUNC) | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=parent)
            if writing and _names(fd) > 1:
                os.close(fd)
                _unshare(parent, name)
                fd = os.open(name, (flags & ~(os.O_TRUNC | os.O_EXCL)) | os.O_NOFOLLOW | os.O_CLOEXEC, mode,
                             dir_fd=parent)
        except OSError as exc:
            raise _refusal(root / relative, exc, parent, name) from None
        if writing and flags & os.O_TRUNC:
            os.ftruncate(fd, 0)
        return fd


def _names(fd: int) -> int:
    found = os.fstat(fd)
    return found.st_nlink if stat.S_ISREG(found.st_mode) else 1


def _unshare(parent: int, name: str) -> None:
    """`name`, a file with other names, replaced by a copy of its own (its bytes and mode) made
    fresh beside it: whatever is written to the run's file next leaves the others as they were."""
    source = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    try:
        if _names(source) < 2:
            return
        tmp, fd = _fresh(parent, name)
        try:
            with os.fdopen(fd, "wb") as out:
                os.fchmod(out.fileno(), stat.S_IMODE(os.fstat(source).st_mode))
                while chunk := os.read(source, 1 << 20):
                    out.write(chunk)
                out.flush()
                os.fsync(out.fileno())
            os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise
    finally:
        os.close(source)


def unshare_below(root: Path, *parts: str) -> list[str]:
    """Every file below root/parts with other names made a copy of its own (see `_unshare`): the
    tools and servers toolbench starts write into such a folder by plain open(). Returns those
    files, relative to root."""
    top = root.joinpath(*parts)
    if not top.is_dir() or top.is_symlink():
        return []
    shared = list(plain_files(root, "/".join(parts)).shared)
    for relative in shared:
        *folders, name = parts_of(relative)
        with folder(root, *folders) as parent:
            _unshare(parent, name)
    return shared


def reader(root: Path, relative: str | Path, *, only_name: bool = False) -> BinaryIO:
    """A file of the run to read, never through a link inside the run. The run folder itself may
    be one: reading is what `report` of a folder the user named does. `only_name` refuses a file
    with other names (a hard link): what is published must be the run's own."""
    fd = open_file(root, relative, os.O_RDONLY, follow_root=True)
    if only_name and _names(fd) > 1:
        os.close(fd)
        raise StoreError(f"{root / relative}: is a hard link (the file has other names, maybe outside the run); "
                         "toolbench never publishes one")
    return os.fdopen(fd, "rb")


def read_text(root: Path, relative: str | Path) -> str:
    with reader(root, relative) as fh:
        return fh.read().decode("utf-8")


def replace(root: Path, relative: str | Path, data: bytes | Iterable[bytes], *, mtime_ns: int | None = None,
            follow_root: bool = False) -> None:
    """root/relative replaced whole or not at all: written to a temporary file made fresh beside
    it, then renamed over it (a link there is replaced, never written through). The folders on
    the way are made when missing. `mtime_ns` sets the file's time (a copy keeps its source's)."""
    *folders, name = parts_of(relative)
    with folder(root, *folders, create=True, follow_root=follow_root) as parent:
        tmp, fd = _fresh(parent, name)
        try:
            with os.fdopen(fd, "wb") as fh:
                for chunk in ([data] if isinstance(data, bytes) else data):
                    fh.write(chunk)
                if mtime_ns is not None:
                    fh.flush()
                    os.utime(fh.fileno(), ns=(mtime_ns, mtime_ns))
            os.replace(tmp, name, src_dir_fd=parent, dst_dir_fd=parent)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=parent)
            raise


def save_json(run_dir: Path, name: str, data: object) -> None:
    """A record beside the results (criteria.json, claims.json), replaced whole or not at all."""
    try:
        replace(run_dir, name, (json.dumps(data, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
    except OSError as exc:
        raise StoreError(f"{run_dir / name}: cannot write: {exc.strerror}") from None


def forget(run_dir: Path, name: str) -> None:
    """Such a record no longer holds (a resumed run's scenario has none): it goes."""
    try:
        (run_dir / name).unlink(missing_ok=True)
    except OSError as exc:
        raise StoreError(f"{run_dir / name}: cannot remove: {exc.strerror}") from None


def _fresh(parent: int, name: str) -> tuple[str, int]:
    """A temporary file of a name nobody could have planted a link under (O_EXCL makes it new)."""
    while True:
        tmp = f"{name}.{secrets.token_hex(6)}.tmp"
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644,
                                dir_fd=parent)
        except FileExistsError:
            continue


def is_plain_file(root: Path, relative: str | Path) -> bool:
    """Whether root/relative is a regular file reached through no link inside root."""
    try:
        *folders, name = parts_of(relative)
        with folder(root, *folders, follow_root=True) as parent:
            return stat.S_ISREG(os.lstat(name, dir_fd=parent).st_mode)
    except (OSError, StoreError):
        return False


def has_other_names(root: Path, relative: str | Path) -> bool:
    """Whether root/relative is a regular file with other names (a hard link), reached through no link."""
    try:
        *folders, name = parts_of(relative)
        with folder(root, *folders, follow_root=True) as parent:
            found = os.lstat(name, dir_fd=parent)
    except (OSError, StoreError):
        return False
    return stat.S_ISREG(found.st_mode) and found.st_nlink > 1


@dataclass(frozen=True)
class Listing:
    files: tuple[str, ...]  # regular files, relative to the folder listed from, `/`-separated
    links: tuple[str, ...]  # symbolic links met (to files or folders), left out and not entered
    shared: tuple[str, ...] = ()  # regular files with other names (hard links), left out


def plain_files(root: Path, sub: str) -> Listing:
    """The regular files below root/sub, walked without entering a linked folder; links are
    listed apart (left out), so are files with other names (hard links), and anything else (a
    socket or pipe a server left) is skipped."""
    top = root / sub
    if top.is_symlink():
        return Listing((), (sub,))
    if not top.is_dir():
        return Listing((), ())
    files, links, shared = [], [], []
    for here, dirs, names in os.walk(top):
        rel = Path(here).relative_to(root)
        for name in sorted(dirs):
            if os.path.islink(os.path.join(here, name)):
                links.append((rel / name).as_posix())
        dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(here, d)))
        for name in sorted(names):
            found = os.lstat(os.path.join(here, name))
            if stat.S_ISLNK(found.st_mode):
                links.append((rel / name).as_posix())
            elif stat.S_ISREG(found.st_mode):
                (shared if found.st_nlink > 1 else files).append((rel / name).as_posix())
    return Listing(tuple(files), tuple(links), tuple(shared))


def links_below(root: Path, *parts: str) -> list[str]:
    """Every symbolic link below root/parts (relative to root): what a folder toolbench is about
    to write into again must not hold, since the tools it runs write through them."""
    top = root.joinpath(*parts)
    if not top.is_dir() or top.is_symlink():
        return []
    return list(plain_files(root, "/".join(parts)).links)
