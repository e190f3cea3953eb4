"""JMeter's fast JTL reader, behind one plain function: read_jtl(path) -> Jtl, which raises
nothing but ParseError, whatever happens inside it.

XML goes to jmeter_xml, CSV to jmeter_jtl's block reader. A large CSV JTL is read in as
many byte ranges as there are CPUs (up to 4): the first in this process, the others in the
worker processes of a concurrent.futures pool, and their sums merged. The workers are
forked when this process has no other thread (`toolbench parse`: numpy and the reader are
already imported, which a fresh interpreter pays about 0.4 CPU-second for), and spawned
otherwise: a forked child would inherit locks held by the runner's monitor and probe threads.

Each range but the first starts just after a line break. A line break inside a quoted
field (a message with a line break in it) would make such a start wrong: each range counts
its double quotes, and when the quotes before a range's start are odd the split is dropped
and the file is read in one pass. So is it when no worker can be had."""
from __future__ import annotations

import multiprocessing
import os
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from toolbench.adapters.jmeter import dates
from toolbench.adapters.jmeter.agg import Aggregate, Jtl, JtlError, no_sample
from toolbench.adapters.jmeter.jtl import Part, read_range
from toolbench.adapters.jmeter.jtl_xml import read_xml
from toolbench.adapters.jmeter.layout import Layout, layout_of
from toolbench.errors import ParseError

MIN_BYTES = 64 << 20  # below this, starting worker processes costs more than it saves
MAX_WORKERS = 4


def read_jtl(path: Path, into: Aggregate | None = None) -> Jtl:
    """The sums of the JTL at `path` (CSV with or without a header, or XML); added to `into`,
    in one pass, when given (an Aggregate that keeps more than the sums)."""
    try:
        return _read(path, into)
    except JtlError as exc:
        raise ParseError("jmeter", str(exc), str(path)) from None
    except ParseError as exc:  # from the one number reader or the aggregator: named with this file
        raise ParseError("jmeter", exc.detail, str(path)) from None
    except OSError as exc:
        raise ParseError("jmeter", f"cannot read the JTL: {exc.strerror or exc}", str(path)) from None
    except Exception as exc:  # no check foresaw it: still this file's fault to the caller, with what broke
        raise ParseError("jmeter", f"unreadable JTL: {type(exc).__name__}: {exc}", str(path)) from None


def _read(path: Path, into: Aggregate | None) -> Jtl:
    with open(path, "rb") as fh:
        head = fh.read(4096)
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    if not head.strip():
        raise JtlError("the JTL is empty: JMeter wrote no sample")
    if head.lstrip().startswith(b"<"):
        return read_xml(path, into)
    layout = layout_of(head)
    split = into is None and workers() > 1 and path.stat().st_size >= MIN_BYTES
    part = _read_split(path, layout) if split else None
    if part is None:
        with open(path, "rb") as fh:
            first = fh.readline() if layout.header else b""
        part = read_range(path, layout, len(first), None, 1 if layout.header else 0, into)
    if part.aggregate.rows == 0:
        raise JtlError(no_sample(part.aggregate, "the JTL has a header but no sample: JMeter ran no request"))
    notes = []
    if part.cut_off_line is not None:
        notes.append(f"the last line ({part.cut_off_line}) is cut off: no line break ends the file, as when "
                     f"JMeter is killed while writing; it was left out")
    if part.unended_line is not None:
        notes.append(f"the last line ({part.unended_line}) has no line break but is a whole record: it was read")
    if layout.assumed:
        notes.append(f"the CSV JTL has no header: its columns were taken to be {layout.assumed}")
    if layout.time_format is not None:
        notes.append(dates.note(layout.time_format))
    notes += layout.notes
    return Jtl(part.aggregate, "csv" if layout.header else "csv without header", part.url, notes)


def workers() -> int:
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, MAX_WORKERS))


def _read_split(path: Path, layout: Layout) -> Part | None:
    """The merged part, or None when the file is to be read in one pass instead."""
    bounds = _bounds(path, layout.header, workers())
    if len(bounds) < 3:
        return None
    header_lines = 1 if layout.header else 0
    ranges = [(a, None if b == bounds[-1] else b) for a, b in zip(bounds[1:-1], bounds[2:])]
    try:
        with ProcessPoolExecutor(len(ranges), mp_context=_context()) as pool:
            futures = [pool.submit(read_range, path, layout, a, b, 0) for a, b in ranges]
            try:
                parts = [read_range(path, layout, bounds[0], bounds[1], header_lines)]
                for future in futures:
                    if sum(p.quotes for p in parts) % 2 or parts[-1].cut_off_line is not None:
                        return None  # this range did not start at a record: one pass instead
                    parts.append(_part(future, header_lines + sum(p.lines for p in parts)))
                    if parts[-1].aggregate.unresolved:
                        return None  # a sub-result whose parent row may lie in an earlier range
            finally:
                for future in futures:
                    future.cancel()
    except (BrokenProcessPool, OSError):  # no worker to be had, or one died: one pass instead
        return None
    return _merge(parts, header_lines)


def _context() -> multiprocessing.context.BaseContext:
    alone = threading.active_count() == 1 and hasattr(os, "fork")
    return multiprocessing.get_context("fork" if alone else "spawn")


def _part(future: "Future[Part]", lines_before: int) -> Part:
    """A worker's part; its error, with the line counted from the start of the file."""
    try:
        return future.result()
    except JtlError as exc:
        raise JtlError(exc.message, None if exc.line is None else exc.line + lines_before) from None


def _merge(parts: list[Part], header_lines: int) -> Part:
    last = parts[-1].cut_off_line
    before = header_lines + sum(p.lines for p in parts[:-1])
    last = None if last is None else last + before
    ended = parts[-1].unended_line
    ended = None if ended is None else ended + before
    merged = parts[0]
    for part in parts[1:]:
        try:
            merged.aggregate.merge(part.aggregate)
        except ValueError as exc:  # timestamps that no run spans
            raise JtlError(str(exc)) from None
        merged.url = merged.url or part.url
        merged.lines += part.lines
        merged.quotes += part.quotes
    merged.cut_off_line, merged.unended_line = last, ended
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
