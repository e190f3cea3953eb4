"""A run of CSV JTL records without a double quote, read for all rows at once (the block
reader of jtl.py hands each such run here; quoted records go through the csv module).

Every record has the same number of separators, so the separators of the whole run, found
at once, form a (rows x fields) table: each field's bounds are a column of it. Numbers are
read for all rows together (digits.Block): the short numeric columns in one pass, the time
stamp (epoch ms, or a date: dates.py) alone. A label that is the same in every row (most
runs have one) is compared, not sorted; a sub-result's or transaction's row is looked at
one by one only where its label ends in a digit or its message starts like a transaction's."""
from __future__ import annotations

import re
from typing import Any

import numpy as np

from toolbench.adapters.jmeter.agg import TRANSACTION, Aggregate, Batch, JtlError
from toolbench.adapters.jmeter.dates import DateFormat, block_ms
from toolbench.adapters.jmeter.digits import Block
from toolbench.adapters.jmeter.layout import Layout

# JTL column -> Batch field, for the optional numeric columns.
OPTIONAL = {"bytes": "received", "sentBytes": "sent", "Latency": "latency_ms", "Connect": "connect_ms",
            "allThreads": "threads"}
SHORT = ("elapsed", "responseCode", *OPTIONAL)  # read together; a field of more than 8 digits, alone
READ = ("timeStamp", "success", "label", "responseMessage", *SHORT)  # the columns read in every row
SUB_LABEL = re.compile(r"(.+)-\d+")
_CR = 13
_TRANSACTION = TRANSACTION.encode()


class Fields:
    """The bounds of every field of a run of records: `span(name)` is (starts, ends) per row.
    The bounds of the columns read for every row are copied out once, column by column, so
    that each later step reads contiguous memory."""

    def __init__(self, block: Block, layout: Layout, bounds: np.ndarray, crlf: bool) -> None:
        self.block, self.layout, self.bounds = block, layout, bounds
        self.rows = len(bounds)
        k = len(layout.names)
        cols = sorted({c for name in READ if (j := layout.col(name)) is not None for c in (j, j + 1)})
        self.at = {c: i for i, c in enumerate(cols)}
        self.table = bounds.T[cols]
        if crlf and k in self.at:  # the last field ends before the CR
            last = self.table[self.at[k]]
            last -= block.seg[np.maximum(last - 2, 0)] == _CR

    def span(self, name: str) -> tuple[np.ndarray, np.ndarray] | None:
        j = self.layout.col(name)
        if j is None:
            return None
        return self.table[self.at[j]], self.table[self.at[j + 1]] - 1

    def spans(self, names: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(len(names) x rows) starts and ends of several columns."""
        cols = [self.layout.col(name) for name in names]
        return self.table[[self.at[j] for j in cols]], self.table[[self.at[j + 1] for j in cols]] - 1

    def first(self, name: str) -> str | None:
        """The first row's field, of any column."""
        j = self.layout.col(name)
        if j is None or not self.rows:
            return None
        return self.block.text(int(self.bounds[0, j]), int(self.bounds[0, j + 1]) - 1).removesuffix("\r")


def read_run(data: bytes, a: int, b: int, layout: Layout, line_base: int,
             agg: Aggregate) -> tuple[Batch, str | None, int]:
    """Records [a, b) of `data`, none with a quote, each ending with a line break. Returns
    the batch, the first record's URL and the number of records."""
    block = Block(data, a, b)
    bounds = block.fields(len(layout.names), layout.delimiter)
    if bounds is None:
        raise bad_line(data, a, b, layout, line_base)
    fields = Fields(block, layout, bounds, data.find(b"\r", a, b) != -1)
    row_line = _RowLine(data, a, bounds, line_base)
    span = fields.span("success")
    ok, bad = block.success(*span)
    _check(block, "success", bad, span, row_line)
    keep = _top_level(fields, agg)
    ts_ms = _timestamps(fields, row_line)
    if agg.window is not None:
        inside = (ts_ms >= agg.window[0]) & (ts_ms < agg.window[1])
        keep = inside if keep is None else keep & inside
    columns = _short_columns(fields, row_line)
    code, nonhttp = _codes(fields, columns.pop("responseCode", None), ok, keep)
    batch = Batch(ts_ms=ts_ms, elapsed_ms=columns.pop("elapsed"), ok=ok, code=code, nonhttp=nonhttp,
                  **{OPTIONAL[name]: values for name, values in columns.items()})
    if keep is not None:
        batch = batch.select(keep)
    return batch, fields.first("URL"), fields.rows


class _RowLine:
    """The line of the file a row of the run is on, for messages."""

    def __init__(self, data: bytes, a: int, bounds: np.ndarray, line_base: int) -> None:
        self.data, self.a, self.bounds, self.line_base = data, a, bounds, line_base

    def __call__(self, row: int) -> int:
        return self.line_base + self.data.count(b"\n", self.a, self.a + int(self.bounds[row, 0])) + 1


def _check(block: Block, name: str, bad: np.ndarray, span: tuple[np.ndarray, np.ndarray], row_line: _RowLine,
           time_format: DateFormat | None = None) -> None:
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        text = block.text(int(span[0][row]), int(span[1][row]))
        raise JtlError(not_number(name, text, time_format), row_line(row))


def _timestamps(fields: Fields, row_line: _RowLine) -> np.ndarray:
    span = fields.span("timeStamp")
    assert span is not None, "the layout has a timeStamp column"
    fmt = fields.layout.time_format
    if fmt is None:
        values, bad = fields.block.numbers(*span)
    else:
        values, bad = block_ms(fields.block.seg, *span, fmt)
    _check(fields.block, "timeStamp", bad, span, row_line, fmt)
    return values


def _short_columns(fields: Fields, row_line: _RowLine) -> dict[str, Any]:
    """elapsed and the optional numeric columns (and responseCode, whose non-numbers are no
    error: JMeter's exception names), read together."""
    names = [name for name in SHORT if fields.layout.col(name) is not None]
    s, e = fields.spans(names)
    values, bad = fields.block.short_numbers(s, e)
    out = {}
    for i, name in enumerate(names):
        column, wrong = values[i], bad[i]
        if wrong.any():  # a field of more than 8 digits, or no number: read alone, as it is
            rows = np.flatnonzero(wrong)
            column[rows], wrong[rows] = fields.block.numbers(s[i, rows], e[i, rows])
        if name == "responseCode":
            out[name] = (column, wrong)
            continue
        _check(fields.block, name, wrong, (s[i], e[i]), row_line)
        out[name] = column
    return out


def _codes(fields: Fields, code: tuple[np.ndarray, np.ndarray] | None, ok: np.ndarray,
           keep: np.ndarray | None) -> tuple[np.ndarray | None, dict[str, int]]:
    """The response codes (-1 where one is not a number), and the texts of the failed
    requests' non-numeric ones (JMeter's exception names) counted."""
    if code is None:
        return None, {}
    values, bad = code
    if not bad.any():
        return values, {}
    s, e = fields.span("responseCode")
    failed = np.flatnonzero(bad & ~ok & (True if keep is None else keep))
    return np.where(bad, -1, values), fields.block.texts(s[failed], e[failed])


def _top_level(fields: Fields, agg: Aggregate) -> np.ndarray | None:
    """Which rows are requests of their own: not a transaction controller's row, nor a
    sub-result (`label-N` after a row labelled `label`). None when every row is one."""
    label, message = fields.span("label"), fields.span("responseMessage")
    if label is None or message is None or not fields.rows:
        return None
    block = fields.block
    if block.uniform(*label):
        distinct = [block.text(int(label[0][0]), int(label[1][0]))]
    else:
        distinct = list(block.texts(*label))
    agg.labels.update(text for text in distinct if not SUB_LABEL.fullmatch(text))
    subs = any(SUB_LABEL.fullmatch(text) for text in distinct)
    transactions = block.prefixed(*message, _TRANSACTION)
    if not subs and not transactions.any():
        return None
    seg, (ls, le), (ms, me) = block.seg, label, message
    digit_end = (le > ls) & (seg[np.maximum(le - 1, 0)] >= 48) & (seg[np.maximum(le - 1, 0)] <= 57)
    rows = np.flatnonzero((digit_end if subs else False) | transactions)
    keep = np.ones(fields.rows, bool)
    keep[rows] = top_level([block.text(int(ls[i]), int(le[i])) for i in rows],
                           [block.text(int(ms[i]), int(me[i])) for i in rows], agg)
    return keep


def top_level(labels: list[str], messages: list[str], agg: Aggregate) -> np.ndarray:
    """Which rows are requests of their own: not a transaction controller's row, nor a
    sub-result (`label-N` after a row labelled `label`, as JMeter writes them)."""
    keep = np.ones(len(labels), bool)
    for i, (label, message) in enumerate(zip(labels, messages)):
        if message.startswith(TRANSACTION):
            keep[i] = False
            agg.transaction_rows += 1
        elif (m := SUB_LABEL.fullmatch(label)) and m.group(1) in agg.labels:
            keep[i] = False
            agg.sub_rows += 1
        else:
            agg.labels.add(label)
            agg.unresolved += SUB_LABEL.fullmatch(label) is not None
    return keep


def not_number(name: str, text: str, time_format: DateFormat | None = None) -> str:
    if name == "success":
        return f"success is neither true nor false: {text!r}"
    if time_format is not None:
        return f"timeStamp is not a date in {time_format.pattern}, as in the first record: {text!r}"
    hint = " (epoch milliseconds, as in the first record)" if name == "timeStamp" else ""
    return f"{name} is not a whole number: {text!r}{hint}"


def bad_line(data: bytes, a: int, b: int, layout: Layout, line_base: int) -> JtlError:
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
