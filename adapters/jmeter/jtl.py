"""Reads JMeter's JTL result files as a stream: CSV with a header (2.x, 3.x and 5.x
column sets, or any set with timeStamp, elapsed and success), header-less CSV in the
default 5.x (17 columns) or 3.x (16 columns) order, and XML. Which column is which comes
from jmeter_layout.

CSV is read in blocks of a few MiB and split with numpy: the separators of a whole block
are found at once and, as every record has the same number of them, each column is a
column of that array; numbers are parsed for all rows together (jmeter_digits). Records
with a double quote (a message with a delimiter or a line break in it) go through the csv
module instead. Memory stays bounded by the block size. jmeter_reader.read_jtl is the way
in: it picks XML or CSV, and reads a large CSV in several ranges at once."""
from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolbench.adapters.jmeter.agg import TRANSACTION, Aggregate, Batch, JtlError, add, is_count
from toolbench.adapters.jmeter.digits import Block
from toolbench.adapters.jmeter.layout import REQUIRED, Layout

BLOCK = 4 << 20
SLOW_SHARE = 8  # a block with more than 1 quoted record in 8 is read by the csv module alone
# JTL column -> Batch field, for the optional numeric columns.
OPTIONAL = {"bytes": "received", "sentBytes": "sent", "Latency": "latency_ms", "Connect": "connect_ms",
            "allThreads": "threads"}
_QUOTE, _NL, _CR = 34, 10, 13
_SUB_LABEL = re.compile(r"(.+)-\d+")


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
    with open(path, "rb") as fh:
        fh.seek(start)
        left = None if end is None else end - start
        rest = b""
        while True:
            block = fh.read(BLOCK if left is None else min(BLOCK, left))
            left = None if left is None else left - len(block)
            data = rest + block if rest else block
            if not block:
                if data.strip() and not _last_row(agg, data, layout, line_base):
                    cut_off = line_base + 1
                elif data.strip():
                    line_base += 1
                    unended = line_base
                break
            cut = _last_record_end(data)
            if cut == 0:  # one record longer than a block: read on
                rest = data
                continue
            if data.find(b'"', 0, cut) != -1:
                quotes += data.count(b'"', 0, cut)
            for batch, first_url, count in _block_batches(data, cut, layout, line_base, agg):
                add(agg, batch, line_base + 1)
                url = url or first_url
                line_base += count
            rest = data[cut:]
    if agg.held:
        add(agg, held_batch(layout, agg), None)
    return Part(agg, url, line_base - first_line, quotes, cut_off, unended)


def _last_row(agg: Aggregate, data: bytes, layout: Layout, line_base: int) -> bool:
    """Adds the file's last line, which no line break ends, when it is a whole record (all
    its fields, each readable); False for a line cut off mid-record, left out."""
    try:
        batches = list(_block_batches(data + b"\n", len(data) + 1, layout, line_base, agg))
    except JtlError:
        return False
    for batch, _, _ in batches:
        add(agg, batch, line_base + 1)
    return True


def _last_record_end(data: bytes) -> int:
    """The offset just past the last complete record: past a line break outside quotes."""
    if data.find(b'"') == -1:
        return data.rfind(b"\n") + 1
    buf = np.frombuffer(data, np.uint8)
    ends = _record_ends(buf)
    return int(ends[-1]) + 1 if len(ends) else 0


def _record_ends(buf: np.ndarray) -> np.ndarray:
    """Line breaks that end a record: those with an even number of quotes before them
    (a quoted field may hold line breaks; an escaped quote is two quotes)."""
    nl = np.flatnonzero(buf == _NL)
    quotes = np.flatnonzero(buf == _QUOTE)
    return nl[(np.searchsorted(quotes, nl) & 1) == 0]


def _block_batches(data: bytes, cut: int, layout: Layout, line_base: int, agg: Aggregate):
    """(batch, first URL, lines) for one block of whole records: runs of records without a
    quote go the fast way, each quoted record through the csv module."""
    if agg.subsamples:  # a row at a time, each held back until its thread's next row
        yield _slow(data, 0, cut, layout, line_base, agg)
        return
    if data.find(b'"', 0, cut) == -1:
        yield _fast(data, 0, cut, layout, line_base, agg)
        return
    buf = np.frombuffer(data, np.uint8, cut)
    ends = _record_ends(buf)
    starts = np.concatenate(([0], ends[:-1] + 1))
    quoted = np.unique(np.searchsorted(ends, np.flatnonzero(buf == _QUOTE)))
    if len(quoted) * SLOW_SHARE > len(ends):  # mostly quoted: one slow pass
        yield _slow(data, 0, cut, layout, line_base, agg)
        return
    at, line = 0, line_base  # the line before `at`: counted on from the last record, not from the block's start
    for rec in quoted.tolist():
        a, b = int(starts[rec]), int(ends[rec]) + 1
        if a > at:
            yield _fast(data, at, a, layout, line, agg)
            line += data.count(b"\n", at, a)
        yield _slow(data, a, b, layout, line, agg)
        line += data.count(b"\n", a, b)
        at = b
    if at < cut:
        yield _fast(data, at, cut, layout, line, agg)


def _top_level(labels: list[str], messages: list[str], agg: Aggregate) -> np.ndarray:
    """Which rows are requests of their own: not a transaction controller's row, nor a
    sub-result (`label-N` after a row labelled `label`, as JMeter writes them)."""
    keep = np.ones(len(labels), bool)
    for i, (label, message) in enumerate(zip(labels, messages)):
        if message.startswith(TRANSACTION):
            keep[i] = False
            agg.transaction_rows += 1
        elif (m := _SUB_LABEL.fullmatch(label)) and m.group(1) in agg.labels:
            keep[i] = False
            agg.sub_rows += 1
        else:
            agg.labels.add(label)
            agg.unresolved += _SUB_LABEL.fullmatch(label) is not None
    return keep


def _fast_top_level(block: Block, label: tuple[np.ndarray, np.ndarray] | None,
                    message: tuple[np.ndarray, np.ndarray] | None, agg: Aggregate) -> np.ndarray | None:
    """_top_level for a block read the fast way; None when every row is a request. Only rows
    whose label ends in a digit, or whose message starts with an N, are looked at one by one."""
    if label is None or message is None or not len(label[0]):
        return None
    distinct = block.texts(*label)
    agg.labels.update(text for text in distinct if not _SUB_LABEL.fullmatch(text))
    subs = any(_SUB_LABEL.fullmatch(text) for text in distinct)
    if not subs and block.seg.tobytes().find(TRANSACTION.encode()) == -1:
        return None
    seg, (ls, le), (ms, me) = block.seg, label, message
    digit_end = (le > ls) & (seg[np.maximum(le - 1, 0)] >= 48) & (seg[np.maximum(le - 1, 0)] <= 57)
    n_start = (me > ms) & (seg[np.minimum(ms, len(seg) - 1)] == ord("N"))
    rows = np.flatnonzero(digit_end | n_start)
    keep = np.ones(len(ls), bool)
    keep[rows] = _top_level([block.text(int(ls[i]), int(le[i])) for i in rows],
                            [block.text(int(ms[i]), int(me[i])) for i in rows], agg)
    return keep


def _fast(data: bytes, a: int, b: int, layout: Layout, line_base: int,
          agg: Aggregate) -> tuple[Batch, str | None, int]:
    """Records [a, b) of `data`, none with a quote, each ending with a line break. Returns
    the batch, the first record's URL and the number of records."""
    block = Block(data, a, b)
    seg, k = block.seg, len(layout.names)
    newline = seg == _NL
    rows = int(np.count_nonzero(newline))
    seps = np.flatnonzero(newline | (seg == layout.delimiter))
    if len(seps) != rows * k:
        raise _bad_line(data, a, b, layout, line_base)
    seps = seps.reshape(rows, k)
    if not newline[seps[:, -1]].all():
        raise _bad_line(data, a, b, layout, line_base)
    starts = np.empty(rows, np.int64)
    starts[0] = 0
    starts[1:] = seps[:-1, -1] + 1
    last_end = seps[:, -1]
    if data.find(b"\r", a, b) != -1:
        last_end = last_end - (seg[np.maximum(last_end - 1, 0)] == _CR)

    def bounds(name: str) -> tuple[np.ndarray, np.ndarray] | None:
        j = layout.col(name)
        if j is None:
            return None
        return (starts if j == 0 else seps[:, j - 1] + 1), (seps[:, j] if j < k - 1 else last_end)

    def check(name: str, bad: np.ndarray, span: tuple[np.ndarray, np.ndarray]) -> None:
        if bad.any():
            row = int(np.flatnonzero(bad)[0])
            line = line_base + data.count(b"\n", a, a + int(starts[row])) + 1
            text = block.text(int(span[0][row]), int(span[1][row]))
            raise JtlError(_not_number(name, text), line)

    def number(name: str) -> np.ndarray | None:
        span = bounds(name)
        if span is None:
            return None
        values, bad = block.numbers(*span)
        check(name, bad, span)
        return values

    span = bounds("success")
    ok, bad = block.success(*span)
    check("success", bad, span)
    keep = _fast_top_level(block, bounds("label"), bounds("responseMessage"), agg)
    ts_ms = number("timeStamp")
    if agg.window is not None:
        inside = (ts_ms >= agg.window[0]) & (ts_ms < agg.window[1])
        keep = inside if keep is None else keep & inside
    code, nonhttp = _fast_codes(block, bounds("responseCode"), ok, keep)
    columns = {field_: number(name) for name, field_ in OPTIONAL.items()}
    batch = Batch(ts_ms=ts_ms, elapsed_ms=number("elapsed"), ok=ok, code=code,
                  nonhttp=nonhttp, **columns)
    if keep is not None:
        batch = batch.select(keep)
    span = bounds("URL")
    url = block.text(int(span[0][0]), int(span[1][0])) if span is not None and rows else None
    return batch, url, rows


def _fast_codes(block: Block, span: tuple[np.ndarray, np.ndarray] | None, ok: np.ndarray,
                keep: np.ndarray | None) -> tuple[np.ndarray | None, dict[str, int]]:
    """The response codes of a block read the fast way (-1 where one is not a number), and
    the texts of the failed requests' non-numeric ones (JMeter's exception names) counted."""
    if span is None:
        return None, {}
    values, bad = block.numbers(*span)
    failed = np.flatnonzero(bad & ~ok & (True if keep is None else keep))
    return np.where(bad, -1, values), block.texts(span[0][failed], span[1][failed])


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
        return [(row, line)] if _top_level([row[index["label"]]], [row[index["responseMessage"]]], agg)[0] else []
    if index["threadName"] is None:
        raise JtlError("sub-samples are told from their parents by thread: the JTL has no threadName column", line)
    label, thread = row[index["label"]], row[index["threadName"]]
    if row[index["responseMessage"]].startswith(TRANSACTION):
        agg.transaction_rows += 1
        return []
    held = agg.held.get(thread)
    sub = _SUB_LABEL.fullmatch(label)
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
        if window is not None and not window[0] <= _int(row[index["timeStamp"]], "timeStamp", line) < window[1]:
            return
        ok = _bool(row[index["success"]], line)
        columns["ok"].append(ok)
        for name, field_ in (("timeStamp", "ts_ms"), ("elapsed", "elapsed_ms"), *OPTIONAL.items()):
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
        raise JtlError(_not_number(name, text), line)
    return int(text)


def _not_number(name: str, text: str) -> str:
    if name == "success":
        return f"success is neither true nor false: {text!r}"
    hint = " (JMeter saves epoch milliseconds only with timestamp_format=ms)" if name == "timeStamp" else ""
    return f"{name} is not a whole number: {text!r}{hint}"


def _bool(text: str, line: int) -> bool:
    if text not in ("true", "false"):
        raise JtlError(f"success is neither true nor false: {text!r}", line)
    return text == "true"


def _bad_line(data: bytes, a: int, b: int, layout: Layout, line_base: int) -> JtlError:
    """Finds the first record of [a, b) whose field count is wrong, for the message."""
    want = len(layout.names)
    for number, line in enumerate(data[a:b].split(b"\n")[:-1], line_base + 1):
        got = line.count(bytes([layout.delimiter])) + 1
        if got != want:
            shown = line[:120].decode("utf-8", "replace")
            where = "the header has" if layout.header else "JMeter writes"
            return JtlError(f"{got} fields where {where} {want}: {shown!r}", number)
    last = line_base + data.count(b"\n", a, b)
    return JtlError(f"malformed records up to line {last}", line_base + 1)
