"""A large CSV JTL is read in as many byte ranges as there are CPUs (up to 4), the first
in this process and the others each in a worker process, and their sums merged.

Workers are plain child processes (`python -m toolbench.adapters.jmeter_parallel`), not
multiprocessing's: they neither re-run the caller's main script nor inherit its threads.
Each range but the first starts just after a line break. A line break inside a quoted
field (a message with a line break in it) would make such a start wrong: each range
counts its double quotes, and when the quotes before a range's start are odd the split
is dropped and the file is read in one pass. So is it when a worker cannot be had."""
from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from toolbench.adapters.jmeter_agg import JtlError

if TYPE_CHECKING:
    from toolbench.adapters.jmeter_jtl import Layout, Part

MIN_BYTES = 64 << 20  # below this, starting worker processes costs more than it saves
MAX_WORKERS = 4


def workers() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_WORKERS))


def worth_it(path: Path) -> bool:
    return workers() > 1 and path.stat().st_size >= MIN_BYTES


def read(path: Path, layout: "Layout") -> "Part | None":
    """The merged part, or None when the file is to be read in one pass instead."""
    from toolbench.adapters.jmeter_jtl import read_range

    bounds = _bounds(path, layout.header, workers())
    if len(bounds) < 3:
        return None
    header_lines = 1 if layout.header else 0
    spec = json.dumps([list(layout.names), layout.delimiter, layout.header])
    procs: list[subprocess.Popen[bytes]] = []
    try:
        for a, b in zip(bounds[1:-1], bounds[2:]):
            end = "" if b == bounds[-1] else str(b)
            procs.append(subprocess.Popen([sys.executable, "-m", __name__, str(path), spec, str(a), end],
                                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL))
        parts = [read_range(path, layout, bounds[0], bounds[1], header_lines)]
        for proc in procs:
            out, _ = proc.communicate()
            answer = _answer(out) if proc.returncode == 0 else None
            if answer is None or sum(p.quotes for p in parts) % 2 or parts[-1].cut_off_line is not None:
                return None
            if isinstance(answer, JtlError):
                lines_before = header_lines + sum(p.lines for p in parts)
                line = None if answer.line is None else answer.line + lines_before
                raise JtlError(answer.message, line)
            parts.append(answer)
    except OSError:
        return None
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return _merge(parts, header_lines)


def _answer(out: bytes) -> "Part | JtlError | None":
    try:
        return pickle.loads(out)  # from our own worker process, just started
    except Exception:  # a worker that died mid-answer: read the file in one pass
        return None


def _merge(parts: list["Part"], header_lines: int) -> "Part":
    last = parts[-1].cut_off_line
    last = None if last is None else last + header_lines + sum(p.lines for p in parts[:-1])
    merged = parts[0]
    for part in parts[1:]:
        try:
            merged.aggregate.merge(part.aggregate)
        except ValueError as exc:  # timestamps that no run spans
            raise JtlError(str(exc)) from None
        merged.url = merged.url or part.url
        merged.lines += part.lines
        merged.quotes += part.quotes
    merged.cut_off_line = last
    return merged


def _bounds(path: Path, header: bool, count: int) -> list[int]:
    """Byte offsets where the ranges start (each just after a line break), then the size."""
    size = path.stat().st_size
    with open(path, "rb") as fh:
        start = len(fh.readline()) if header else 0
        bounds = [start]
        for i in range(1, count):
            fh.seek(start + (size - start) * i // count)
            pos = fh.tell()
            chunk = fh.read(1 << 20)
            newline = chunk.find(b"\n")
            if newline != -1 and bounds[-1] < pos + newline + 1 < size:
                bounds.append(pos + newline + 1)
    return bounds + [size]


def _work(argv: list[str]) -> None:
    """A worker: reads one range and writes its Part (or its JtlError) pickled to stdout."""
    from toolbench.adapters.jmeter_jtl import Layout, read_range

    path, spec, start, end = argv
    names, delimiter, header = json.loads(spec)
    layout = Layout(tuple(names), delimiter, header)
    try:
        answer: object = read_range(Path(path), layout, int(start), int(end) if end else None, 0)
    except JtlError as exc:
        answer = exc
    sys.stdout.buffer.write(pickle.dumps(answer))


if __name__ == "__main__":
    _work(sys.argv[1:])
