"""The column layout of a CSV JTL, from its first line: its header (2.x, 3.x and 5.x column
sets, or any set with timeStamp, elapsed and success, in any order, as JMeter's own reader
takes them), or, for a header-less file, the default 5.x (17 columns) or 3.x (16 columns)
order, or a JMeter 2.x order told from the values; and from its first record, whether
timeStamp is epoch milliseconds or a date (dates.py). The block reader (jtl.py) finds each
column by name through it."""
from __future__ import annotations

import csv
import functools
from dataclasses import dataclass

from toolbench.adapters.jmeter.agg import JtlError
from toolbench.adapters.jmeter.dates import FORMATS, DateFormat, format_of

V5 = ("timeStamp", "elapsed", "label", "responseCode", "responseMessage", "threadName", "dataType",
      "success", "failureMessage", "bytes", "sentBytes", "grpThreads", "allThreads", "URL", "Latency",
      "IdleTime", "Connect")
V3 = tuple(name for name in V5 if name != "URL")
# Header-less layouts of JMeter 2.x (which wrote no header by default), told apart by their
# values: the first eight columns are always these, then what jmeter.properties saved.
_BASE = V5[:8]
_TAILS = {
    10: [("bytes", "Latency")],
    12: [("bytes", "grpThreads", "allThreads", "Latency")],
    13: [("bytes", "grpThreads", "allThreads", "URL", "Latency"),
         ("failureMessage", "bytes", "grpThreads", "allThreads", "Latency")],
}
_NUMERIC = {"timeStamp", "elapsed", "bytes", "sentBytes", "grpThreads", "allThreads", "Latency", "IdleTime", "Connect"}
REQUIRED = ("timeStamp", "elapsed", "success")
# The columns JMeter's CSV writer can write (CSVSaveService): a header with another name is another
# program's, in JMeter's format.
JMETER_COLUMNS = frozenset((*V5, "Filename", "Encoding", "SampleCount", "ErrorCount", "Hostname"))
# Taurus's Locust wrapper (bzt/resources/locustio-taurus-wrapper.py; the older order first) writes
# JMeter's format with a `method` column, each request's end as its timeStamp and Latency 0 always.
TAURUS_LOCUST = (("timeStamp", "label", "method", "elapsed", "bytes", "responseCode", "responseMessage", "success",
                  "allThreads", "Latency"),
                 ("allThreads", "timeStamp", "label", "method", "elapsed", "bytes", "responseCode", "responseMessage",
                  "success", "Latency"))
TAURUS_NOTE = ("written by Taurus's Locust wrapper: its Latency column is 0 for every request, a placeholder, and "
               "was not read; its timeStamp is when each request ended, so the duration and the series run one "
               "request's time late")


@dataclass(frozen=True)
class Layout:
    names: tuple[str, ...]
    delimiter: int  # the byte
    header: bool
    assumed: str = ""  # for a header-less file: which layout was taken, and why
    notes: tuple[str, ...] = ()  # what the header says of who wrote the file
    time_format: DateFormat | None = None  # timeStamp as a date; None: epoch milliseconds

    def col(self, name: str) -> int | None:
        return self._cols.get(name)

    @functools.cached_property
    def _cols(self) -> dict[str, int]:  # asked a dozen times a block
        cols: dict[str, int] = {}
        for at, name in enumerate(self.names):
            cols.setdefault(name, at)  # the first of two columns of one name, as names.index gave
        return cols


def layout_of(head: bytes) -> Layout:
    """The column layout, from the first lines of a CSV JTL (its header and first record, or
    its first record): the columns by name, in any order, and how timeStamp is written."""
    lines = head.split(b"\n", 2)
    first = lines[0].rstrip(b"\r").decode("utf-8", "replace")
    delimiter = "\t" if "\t" in first and "," not in first else ","
    fields = next(csv.reader([first], delimiter=delimiter))
    if fields and (fields[0].isdigit() or _is_date(fields[0])):
        names, assumed = _headerless(fields)
        return Layout(names, ord(delimiter), header=False, assumed=assumed, time_format=format_of(fields[0]))
    missing = [name for name in REQUIRED if name not in fields]
    if missing:
        raise JtlError(f"unknown JTL column set {fields}: it lacks {', '.join(missing)} "
                       f"(a JMeter CSV JTL has at least timeStamp, elapsed and success)")
    record = next(csv.reader([lines[1].rstrip(b"\r").decode("utf-8", "replace")], delimiter=delimiter), []) \
        if len(lines) > 1 else []
    at = fields.index("timeStamp")
    time_format = format_of(record[at]) if len(record) > at and record[at] else None
    notes = []
    if tuple(fields) in TAURUS_LOCUST:
        fields[fields.index("Latency")] = "Latency (placeholder)"  # read as no column
        notes.append(TAURUS_NOTE)
    # A sample variable's column (sample_variables) is named in quotes.
    elif foreign := [name for name in fields if name not in JMETER_COLUMNS and f'"{name}"' not in first]:
        notes.append(f"columns JMeter does not write ({', '.join(foreign[:5])}): another program wrote this JTL "
                     f"in JMeter's format; its columns were read by JMeter's names, the others left out")
    return Layout(tuple(fields), ord(delimiter), header=True, time_format=time_format, notes=tuple(notes))


def is_csv_jtl(text: str) -> bool:
    """Whether the head of a file is a CSV JTL's: a header that names timeStamp, elapsed and
    success, in any order (as another harness writes JMeter's format: Taurus's Locust
    wrapper starts with allThreads), or a header-less record that starts with a time stamp."""
    first = text.lstrip("\ufeff").split("\n", 1)[0].rstrip("\r")
    names = first.split("\t" if "\t" in first and "," not in first else ",")
    if all(name in names for name in REQUIRED):
        return True
    # Header-less: as many columns as the smallest layout JMeter writes (h2load's --log-file is
    # three tab-separated numbers, a time stamp first), elapsed after the time stamp (a log
    # line starts with a date too, then its milliseconds and words).
    lead = names[0]
    if len(names) < min(_TAILS) or not names[1].isdigit():
        return False
    return (lead.isdigit() and len(lead) >= 9) or _is_date(lead)


def _is_date(text: str) -> bool:
    return any(fmt.regex.match(text) for fmt in FORMATS)


def _headerless(fields: list[str]) -> tuple[tuple[str, ...], str]:
    """The columns of a header-less CSV JTL, from the count and the values of its first record."""
    if len(fields) == len(V5):
        return V5, "the 17 columns JMeter 5.x saves by default"
    if len(fields) == len(V3):
        return V3, "the 16 columns JMeter 3.x saves by default"
    for tail in _TAILS.get(len(fields), []):
        names = _BASE + tail
        if _fits(names, fields):
            return names, f"JMeter 2.x's {len(names)} columns ({', '.join(names)}), told from the values"
    raise JtlError(f"a CSV JTL without a header and with {len(fields)} columns: the column order is unknown "
                   f"(known: 17 for JMeter 5.x, 16 for 3.x, 10, 12 or 13 for 2.x); save it with "
                   f"print_field_names=true")


def _fits(names: tuple[str, ...], fields: list[str]) -> bool:
    """Whether a record's values are what these columns hold: whole numbers where numbers
    are, an epoch-millisecond time stamp, a success flag, a URL where one is."""
    for name, value in zip(names, fields):
        if name == "timeStamp" and _is_date(value):
            continue
        if name in _NUMERIC and not value.isdigit():
            return False
        if name == "success" and value not in ("true", "false"):
            return False
        if name == "URL" and value and not value.startswith(("http://", "https://", "file:", "null")):
            return False
    return len(fields[0]) >= 12 or _is_date(fields[0])  # epoch milliseconds since 2001, or a date
