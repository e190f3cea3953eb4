"""Reads JMeter's JTL result files as a stream: CSV with a header (2.x, 3.x and 5.x
column sets, or any set with timeStamp, elapsed and success, in any order), header-less CSV
in the default 5.x (17 columns) or 3.x (16 columns) order, and XML. Which column is which
comes from layout.py.

CSV is read in blocks of 1 MiB. The runs of records without a double quote go to
fast.py, which splits them with numpy for all rows at once; records with a double quote (a
message with a delimiter or a line break in it) go through the csv module here. Memory
stays bounded by the block size. reader.read_jtl is the way in: it picks XML or CSV, and
reads a large CSV in several ranges at once."""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolbench.adapters.jmeter.agg import TRANSACTION, Aggregate, Batch, JtlError, add, is_count
from toolbench.adapters.jmeter.dates import to_ms
from toolbench.adapters.jmeter.fast import OPTIONAL, SUB_LABEL, not_number, read_run, top_level
from toolbench.adapters.jmeter.layout import REQUIRED, Layout

# 1 MiB: a block's bytes and the arrays made from them stay in the CPU's caches (2 to 4 MiB
# blocks read 1.4x slower here); a record longer than that is read on in larger reads.
BLOCK = 1 << 20
GROUP = 1 << 16  # rows added to the aggregate at once
SLOW_SHARE = 8  # a block with more than 1 quoted record in 8 is read by the csv module alone
_QUOTE, _NL = 34, 10


@dataclass
class Part:
    """What one range of a CSV JTL holds: its sums, the first URL, the lines read and the
    double quotes seen (an odd count means the range ends inside a quoted field)."""

    aggregate: Aggregate
    url: str | None
    lines: int
    quotes: int
    cut_off_line: int | None = None  # a last line without its line break, left out
    unended_line: int | None = None  # a whole last record without its line break, read


def read_range(path: Path, layout: Layout, start: int, end: int | None, line_base: int,
               into: Aggregate | None = None) -> Part:
    """Records from byte `start` (a record's start) to `end` (one's end; None: the end of the
    file), added to `into` or a new Aggregate. `line_base` is the number of lines before
    `start`, for messages."""
    agg, url, quotes, cut_off, unended = Aggregate() if into is None else into, None, 0, None, None
    first_line = line_base
    pending = _Pending(agg)
    with open(path, "rb") as fh, pending:
        fh.seek(start)
        left = None if end is None else end - start
        rest = b""
        while True:
            size = max(BLOCK, len(rest))  # a record longer than a block: each read as large as all held
            block = fh.read(size if left is None else min(size, left))
            left = None if left is None else left - len(block)
            data = rest + block if rest else block
            if not block:
                pending.flush()
                if data.strip() and not _last_row(agg, data, layout, line_base):
                    cut_off = line_base + 1
                elif data.strip():
                    line_base += 1
                    unended = line_base
                break
            scan = _Scan(data)
            if scan.cut == 0:  # one record longer than a block: read on
                rest = data
                continue
            quotes += scan.quotes
            for batch, first_url, count in _block_batches(data, scan, layout, line_base, agg):
                pending.push(batch, line_base + 1)
                url = url or first_url
                line_base += count
            rest = data[scan.cut:]
    if agg.held:
        add(agg, held_batch(layout, agg), None)
    return Part(agg, url, line_base - first_line, quotes, cut_off, unended)


class _Pending:
    """Batches held until they hold GROUP rows, then added as one: the aggregate's work per
    call (its checks, tallies and series) is paid per GROUP rows, not per block. A read that
    fails adds what it held first, so that an earlier row's error is the one reported."""

    def __init__(self, agg: Aggregate) -> None:
        self.agg, self.batches, self.rows, self.line = agg, [], 0, None

    def push(self, batch: Batch, line: int) -> None:
        self.line = line if self.line is None else self.line
        self.batches.append(batch)
        self.rows += len(batch.ts_ms)
        if self.rows >= GROUP:
            self.flush()

    def flush(self) -> None:
        if self.batches:
            batches, line = self.batches, self.line
            self.batches, self.rows, self.line = [], 0, None
            add(self.agg, Batch.concat(batches), line)

    def __enter__(self) -> "_Pending":
        return self

    def __exit__(self, kind: type | None, *_: object) -> None:
        self.flush()


def _last_row(agg: Aggregate, data: bytes, layout: Layout, line_base: int) -> bool:
    """Adds the file's last line, which no line break ends, when it is a whole record (all
    its fields, each readable); False for a line cut off mid-record, left out."""
    scan = _Scan(data + b"\n")
    if scan.cut != len(data) + 1:  # the line ends inside a quoted field
        return False
    try:
        batches = list(_block_batches(data + b"\n", scan, layout, line_base, agg))
    except JtlError:
        return False
    for batch, _, _ in batches:
        add(agg, batch, line_base + 1)
    return True


class _Scan:
    """Where a block's whole records end (`cut`: past the last line break outside quotes), and,
    when the block has a double quote, its record ends, line breaks and quotes (a quoted field
    may hold line breaks; an escaped quote is two quotes), found once for the block."""

    def __init__(self, data: bytes) -> None:
        self.ends = self.newlines = None
        self.quotes = 0
        if data.find(b'"') == -1:
            self.cut = data.rfind(b"\n") + 1
            return
        buf = np.frombuffer(data, np.uint8)
        self.newlines = np.flatnonzero(buf == _NL)
        quotes = np.flatnonzero(buf == _QUOTE)
        self.ends = self.newlines[(np.searchsorted(quotes, self.newlines) & 1) == 0]
        self.cut = int(self.ends[-1]) + 1 if len(self.ends) else 0
        self.quote_at = quotes[quotes < self.cut]
        self.quotes = len(self.quote_at)

    def lines(self, a: int, b: int) -> int:
        """The line breaks in [a, b)."""
        return int(np.searchsorted(self.newlines, b) - np.searchsorted(self.newlines, a))


def _block_batches(data: bytes, scan: _Scan, layout: Layout, line_base: int, agg: Aggregate):
    """(batch, first URL, lines) for one block of whole records: runs of records without a
    quote go the fast way, each quoted record through the csv module."""
    cut = scan.cut
    if agg.subsamples:  # a row at a time, each held back until its thread's next row
        yield _slow(data, 0, cut, layout, line_base, agg)
        return
    if scan.ends is None:
        yield read_run(data, 0, cut, layout, line_base, agg)
        return
    ends = scan.ends[scan.ends < cut]
    starts = np.concatenate(([0], ends[:-1] + 1))
    quoted = np.searchsorted(ends, scan.quote_at)  # each quote's record, in order
    quoted = quoted[np.flatnonzero(np.diff(quoted, prepend=-1))]
    if len(quoted) * SLOW_SHARE > len(ends):  # mostly quoted: one slow pass
        yield _slow(data, 0, cut, layout, line_base, agg)
        return
    at, line = 0, line_base  # the line before `at`: counted on from the last record, not from the block's start
    for rec in quoted.tolist():
        a, b = int(starts[rec]), int(ends[rec]) + 1
        if a > at:
            yield read_run(data, at, a, layout, line, agg)
            line += scan.lines(at, a)
        yield _slow(data, a, b, layout, line, agg)
        line += scan.lines(a, b)
        at = b
    if at < cut:
        yield read_run(data, at, cut, layout, line, agg)


def _slow(data: bytes, a: int, b: int, layout: Layout, line_base: int,
          agg: Aggregate) -> tuple[Batch, str | None, int]:
    """Records [a, b) through the csv module: quoted fields, delimiters and line breaks in them."""
    text = data[a:b].decode("utf-8", "replace")
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=chr(layout.delimiter))
    rows = _Rows(layout)
    line = line_base + 1
    for row in reader:
        if len(row) != len(layout.names):
            raise JtlError(f"{len(row)} fields where the header has {len(layout.names)}", line)
        for kept, at in _samples(row, line, rows.index, agg):
            rows.append(kept, at, agg.window)
        line = line_base + reader.line_num + 1
    return rows.batch(), rows.url, reader.line_num


def _samples(row: list[str], line: int, index: dict[str, int | None], agg: Aggregate) -> list[tuple[list[str], int]]:
    """The rows to count now, with their lines: the row itself when it is a request of its own;
    with agg.subsamples, the sub-results and the rows without any, each row held back until
    the next row of its thread shows whether sub-results follow it (JMeter writes a sample's
    sub-results right after it, from the same thread)."""
    if index["label"] is None or index["responseMessage"] is None:
        return [(row, line)]
    if not agg.subsamples:
        return [(row, line)] if top_level([row[index["label"]]], [row[index["responseMessage"]]], agg)[0] else []
    if index["threadName"] is None:
        raise JtlError("sub-samples are told from their parents by thread: the JTL has no threadName column", line)
    label, thread = row[index["label"]], row[index["threadName"]]
    if row[index["responseMessage"]].startswith(TRANSACTION):
        agg.transaction_rows += 1
        return []
    held = agg.held.get(thread)
    sub = SUB_LABEL.fullmatch(label)
    if sub and held is not None and sub.group(1) == held[0][index["label"]]:
        agg.sub_rows += 1
        agg.held[thread] = (held[0], held[1], True)  # a parent: its sub-results are counted instead
        return [(row, line)]
    agg.held[thread] = (row, line, False)
    return [] if held is None or held[2] else [(held[0], held[1])]


def held_batch(layout: Layout, agg: Aggregate) -> Batch:
    """The rows still held back at the end of the file (sub-samples mode): none has sub-results."""
    rows = _Rows(layout)
    for row, line, parent in agg.held.values():
        if not parent:
            rows.append(row, line, agg.window)
    agg.held.clear()
    return rows.batch()


class _Rows:
    """Columns built one row at a time (the slow path)."""

    def __init__(self, layout: Layout) -> None:
        self.layout = layout
        self.index = {name: layout.col(name) for name in (*REQUIRED, "responseCode", "URL", "label",
                                                          "responseMessage", "threadName", *OPTIONAL)}
        self.columns: dict[str, list] = {"ts_ms": [], "elapsed_ms": [], "ok": []}
        for name, field_ in OPTIONAL.items():
            if self.index[name] is not None:
                self.columns[field_] = []
        self.codes: list[int] | None = [] if self.index["responseCode"] is not None else None
        self.nonhttp: dict[str, int] = {}
        self.url: str | None = None

    def append(self, row: list[str], line: int, window: tuple[int, int] | None) -> None:
        index, columns = self.index, self.columns
        ts_ms = _timestamp(row[index["timeStamp"]], self.layout, line)
        if window is not None and not window[0] <= ts_ms < window[1]:
            return
        ok = _bool(row[index["success"]], line)
        columns["ok"].append(ok)
        columns["ts_ms"].append(ts_ms)
        for name, field_ in (("elapsed", "elapsed_ms"), *OPTIONAL.items()):
            if field_ in columns:
                columns[field_].append(_int(row[index[name]], name, line))
        if self.codes is not None:
            text = row[index["responseCode"]]
            self.codes.append(int(text) if is_count(text) else -1)
            if self.codes[-1] < 0 and not ok:
                self.nonhttp[text] = self.nonhttp.get(text, 0) + 1
        if self.url is None and index["URL"] is not None:
            self.url = row[index["URL"]]

    def batch(self) -> Batch:
        columns = dict(self.columns)
        if self.codes is not None:
            columns["code"] = self.codes
        return Batch.of_lists(columns, self.nonhttp)


def _int(text: str, name: str, line: int) -> int:
    if not is_count(text):
        raise JtlError(not_number(name, text), line)
    return int(text)


def _timestamp(text: str, layout: Layout, line: int) -> int:
    if layout.time_format is None:
        return _int(text, "timeStamp", line)
    value = to_ms(text, layout.time_format)
    if value is None:
        raise JtlError(not_number("timeStamp", text, layout.time_format), line)
    return value


def _bool(text: str, line: int) -> bool:
    if text not in ("true", "false"):
        raise JtlError(f"success is neither true nor false: {text!r}", line)
    return text == "true"
