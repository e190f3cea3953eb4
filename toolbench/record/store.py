"""Run directories on disk: manifest.json, results.jsonl (appended and flushed
cell by cell), raw/<cell>/ with every artifact. Reports read only from here."""
from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import errno
import fcntl
import json
import os
import socket
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from toolbench.errors import Notice, SchemaError, StoreError
from toolbench.record import runfiles
from toolbench.record.manifest import Manifest, RunStatus
from toolbench.record.schema import RunResult, Status

MANIFEST = "manifest.json"
RESULTS = "results.jsonl"
RAW = "raw"
TORN = "results.jsonl.torn"  # what a crash cut off the end of results.jsonl, kept aside
LOCK = "lock"
RESERVE = ".reserve"
# A cell whose record says this and that was run again later is shown by its later record.
_SUPERSEDED = (Status.INTERRUPTED, Status.DISTURBED)
# Held on the disk while a run goes on and given back when the disk is full, so that the
# manifest can still be rewritten to say how the run ended.
RESERVE_BYTES = 256 * 1024
DISK_FULL = (errno.ENOSPC, errno.EDQUOT, errno.EFBIG)


def contained(root: Path, *parts: str) -> Path:
    """root/parts..., refused when it would land outside root: a `..`, an absolute part
    or a symlink that leads out. Every folder and file toolbench names goes through here."""
    path = root.joinpath(*parts)
    real_root = root.resolve()
    real = path.resolve()
    if real == real_root or not real.is_relative_to(real_root):
        raise StoreError(f"{'/'.join(parts)!r}: refusing a path outside {root}")
    return path


def runs_in(folder: Path) -> tuple[list[Path], list[str]]:
    """The run folders directly in `folder` (those with a manifest), by name, and what was left
    out, in words: a run folder that is a link (in a folder of runs from anyone, it may lead
    anywhere)."""
    runs, skipped = [], []
    for path in sorted(folder.iterdir()):
        if not path.is_dir() or not (path / MANIFEST).is_file():
            continue
        if path.is_symlink():
            skipped.append(f"{path}: a symbolic link to a run folder; left out (give the folder it leads to)")
        else:
            runs.append(path)
    return runs, skipped


def utc_now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class RunDir:
    path: Path

    @classmethod
    def create(cls, root: Path, scenario: str) -> "RunDir":
        stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
        root = root.resolve()
        path = contained(root, f"{scenario}-{stamp}")
        n = 1
        while path.exists():
            n += 1
            path = contained(root, f"{scenario}-{stamp}-{n}")
        try:
            (path / RAW).mkdir(parents=True)
        except OSError as exc:
            raise StoreError(f"{path}: cannot create the run folder: {exc.strerror}") from None
        return cls(path)

    @classmethod
    def open(cls, path: Path) -> "RunDir":
        if not (path / MANIFEST).is_file():
            raise StoreError(f"{path}: not a run directory (no {MANIFEST})")
        return cls(path)

    def cell_dir(self, cell_id: str) -> Path:
        contained(self.path / RAW, cell_id)  # a `..` or an absolute id is refused
        return self.work_folder(RAW, *runfiles.parts_of(cell_id))

    def work_folder(self, *parts: str) -> Path:
        """self.path/parts, made when missing, for the tools and servers toolbench starts to write
        into (again, on --resume): they write through whatever they find there, so no folder on
        the way may be a link, nor anything already inside it (StoreError naming the first), and
        a file there with other names (a hard link) is first made a copy of its own."""
        try:
            with runfiles.folder(self.path, *parts, create=True):
                pass
        except OSError as exc:
            raise StoreError(f"{self.path.joinpath(*parts)}: cannot create the folder: {exc.strerror}") from None
        links = runfiles.links_below(self.path, *parts)
        if links:
            raise runfiles.link_refused(self.path / links[0])
        try:  # a hard link is made a file of its own: what the tools write then stays in the run
            runfiles.unshare_below(self.path, *parts)
        except OSError as exc:
            raise StoreError(f"{exc.filename or self.path.joinpath(*parts)}: cannot copy a hard-linked file: "
                             f"{exc.strerror}") from None
        return self.path.joinpath(*parts)

    def relative(self, path: Path) -> str:
        return os.path.relpath(path, self.path)

    # manifest ----------------------------------------------------------------
    def write_manifest(self, manifest: Manifest) -> None:
        """Replaced whole or not at all: a full disk leaves the previous manifest in place."""
        text = json.dumps(manifest.to_dict(), indent=2, sort_keys=True) + "\n"
        runfiles.replace(self.path, MANIFEST, text.encode("utf-8"))

    def manifest(self) -> Manifest:
        """The manifest of any version toolbench has written, as the current record."""
        try:
            data = json.loads(runfiles.read_text(self.path, MANIFEST))
        except (OSError, ValueError) as exc:
            raise StoreError(f"{self.path / MANIFEST}: unreadable: {exc}") from None
        if not isinstance(data, dict):
            raise StoreError(f"{self.path / MANIFEST}: expected a JSON object")
        try:
            return Manifest.from_dict(data)
        except SchemaError as exc:
            raise StoreError(f"{self.path / MANIFEST}: {exc}") from None

    def update_manifest(self, **changes: Any) -> None:
        self.write_manifest(dataclasses.replace(self.manifest(), **changes))

    def record_end(self, status: RunStatus, error: str | None) -> None:
        """The manifest says how the run ended. The space held since the start is given back
        first: on a full disk it is what lets the manifest still be rewritten."""
        self.release_space()
        if not (self.path / MANIFEST).exists():
            return  # it ended before it began
        try:
            self.update_manifest(ended_at=utc_now(), status=status, error=error)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot record the end of the run in {MANIFEST}: "
                             f"{exc.strerror}") from None

    def write_failure(self, exc: OSError) -> StoreError | None:
        """A write that failed for want of space, or in this folder, as one line naming the
        folder and what is kept; None for any other error."""
        where = str(exc.filename or "")
        if exc.errno not in DISK_FULL and not where.startswith(str(self.path)):
            return None
        try:
            count = len(self.results())
            kept = ("the one result written so far is intact" if count == 1
                    else f"the {count} results written so far are intact")
        except (StoreError, OSError):
            kept = f"the results written so far are in {RESULTS}"
        if exc.errno in DISK_FULL:
            return StoreError(f"{self.path}: no space left on its device; {kept}; free some space and "
                              f"continue with `toolbench run SCENARIO --resume {self.path}`")
        return StoreError(f"{where}: {exc.strerror}; {kept}")

    # while a process writes the run ----------------------------------------------
    def lock(self) -> "RunLock":
        """Held by the one process that writes this run; a second one is refused."""
        return RunLock.acquire(self.path)

    def reserve_space(self) -> None:
        """Best effort: when the disk has not even this much left, there is nothing to hold."""
        path = self.path / RESERVE
        try:
            fd = runfiles.open_file(self.path, RESERVE, os.O_WRONLY | os.O_CREAT, 0o600)
        except (OSError, StoreError):  # a link planted there is never extended
            return
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        except OSError:
            with contextlib.suppress(OSError):
                path.unlink()
        finally:
            os.close(fd)

    def release_space(self) -> None:
        with contextlib.suppress(OSError):
            (self.path / RESERVE).unlink()

    # results -----------------------------------------------------------------
    def append(self, result: RunResult) -> None:
        """One line per cell, synced to disk, so a crash loses at most the cell in flight. A
        write that fails (a full disk) leaves the file as it was, never half a record."""
        data = (json.dumps(result.to_dict(), sort_keys=True, allow_nan=False) + "\n").encode("utf-8")
        fd = runfiles.open_file(self.path, RESULTS, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            end = os.fstat(fd).st_size
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except OSError:
                with contextlib.suppress(OSError):
                    os.ftruncate(fd, end)
                raise
        finally:
            os.close(fd)

    def repair_results(self) -> str | None:
        """Makes results.jsonl safe to append to after a crash: a torn last line (half a
        record) is moved to results.jsonl.torn; a complete last record without its newline
        gets one. Returns what was done, or None when the file was whole."""
        path = self.path / RESULTS
        if not os.path.lexists(path):
            return None
        with os.fdopen(runfiles.open_file(self.path, RESULTS, os.O_RDWR), "r+b") as fh:
            size = fh.seek(0, os.SEEK_END)
            start = _last_line_start(fh, size)
            fh.seek(start)
            tail = fh.read()
            if not tail.strip() or (tail.endswith(b"\n") and _is_json(tail)):
                return None
            if _is_json(tail):
                fh.write(b"\n")
                fh.flush()
                os.fsync(fh.fileno())
                return f"{path}: the last record had no final newline; one was added"
            torn = runfiles.open_file(self.path, TORN, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
            with os.fdopen(torn, "ab") as kept:
                kept.write(tail if tail.endswith(b"\n") else tail + b"\n")
            fh.truncate(start)
            fh.flush()
            os.fsync(fh.fileno())
            return (f"{path}: an incomplete last record ({len(tail)} bytes, cut off by a crash) was moved "
                    f"to {TORN}")

    def results(self) -> list[RunResult]:
        """Every cell's record, in the order they were written. A cell that was interrupted
        and run again later (`--resume`), or disturbed and run again (`--retry-disturbed`),
        appears once, with its later record; the earlier one stays in the file."""
        records = list(self._iter_results())
        final = {r.identity.cell_id: i for i, r in enumerate(records)}
        return [r for i, r in enumerate(records)
                if r.outcome.status not in _SUPERSEDED or final[r.identity.cell_id] == i]

    def _iter_results(self) -> Iterator[RunResult]:
        path = self.path / RESULTS
        if not os.path.lexists(path):
            return
        pending: tuple[int, bytes] | None = None
        try:
            fh = runfiles.reader(self.path, RESULTS)
        except OSError as exc:
            raise StoreError(f"{path}: unreadable: {exc.strerror}") from None
        with fh:
            for number, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                if pending is not None:
                    yield _record(path, *pending)
                pending = (number, line)
        if pending is None:
            return
        try:
            last = _record(path, *pending)
        except _Torn:
            # Only the last line can be cut by a crash while it was written: step over it.
            warnings.warn(Notice(f"{path}:{pending[0]}: an incomplete last record (cut off by a "
                                 "crash) was skipped"), stacklevel=2)
            return
        yield last

    def finished_cells(self) -> set[str]:
        """The cells that need no new run: all but those whose last record is interrupted."""
        return {r.identity.cell_id for r in self.results() if r.outcome.status is not Status.INTERRUPTED}


class RunLock:
    """An exclusive flock on <run>/lock. The kernel drops it when its holder ends, however it
    ends (kill -9 included), so a stale lock never blocks a later --resume."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, folder: Path) -> "RunLock":
        try:
            fd = runfiles.open_file(folder, LOCK, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            raise StoreError(f"{folder}: cannot create its lock file: {exc.strerror}") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            holder = _lock_holder(fd)
            os.close(fd)
            raise StoreError(f"{folder}: in use by {holder}; wait for it to end or stop it") from None
        me = {"pid": os.getpid(), "host": socket.gethostname(), "since": utc_now(), "argv": sys.argv}
        with contextlib.suppress(OSError):  # who holds it is a courtesy; a full disk may refuse it
            os.ftruncate(fd, 0)
            os.pwrite(fd, (json.dumps(me) + "\n").encode(), 0)
        return cls(fd)

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RunLock":
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


HOLDER_WAIT_S = 1.0  # how long a refused lock waits for its holder to say who it is


def _lock_holder(fd: int, wait_s: float = HOLDER_WAIT_S) -> str:
    """Who holds the lock, from what it wrote into the file. A holder writes that just after it
    took the lock, so a reader refused in between finds the file empty or half written: it
    reads again for up to `wait_s` (seen on a busy machine) before saying "another process"."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            found = json.loads(os.pread(fd, 4096, 0).decode())
            return f"another toolbench (pid {int(found['pid'])} on {found['host']}, since {found['since']})"
        except (OSError, ValueError, KeyError, TypeError):
            if time.monotonic() >= deadline:
                return "another process"
            time.sleep(0.02)


class _Torn(StoreError):
    """A line that is not JSON at all: what a crash leaves when it cuts a record short."""


def _record(path: Path, number: int, line: bytes) -> RunResult:
    try:
        data = json.loads(line.decode("utf-8"))
    except ValueError as exc:
        raise _Torn(f"{path}:{number}: not a result record: {exc}") from None
    try:
        return RunResult.from_dict(data)
    except SchemaError as exc:
        raise StoreError(f"{path}:{number}: {exc}") from None


def _is_json(line: bytes) -> bool:
    try:
        json.loads(line.decode("utf-8"))
    except ValueError:
        return False
    return True


def _last_line_start(fh: BinaryIO, size: int) -> int:
    """The offset just past the last newline before the file's final line (0 if none)."""
    end = size - 1 if size else 0  # a final newline belongs to the last line
    block = 64 * 1024
    pos = end
    while pos > 0:
        step = min(block, pos)
        fh.seek(pos - step)
        chunk = fh.read(step)
        found = chunk.rfind(b"\n")
        if found >= 0:
            return pos - step + found + 1
        pos -= step
    return 0
