"""The column layout of a CSV JTL, from its first line: its header (2.x, 3.x and 5.x column
sets, or any set with timeStamp, elapsed and success), or, for a header-less file, the default
5.x (17 columns) or 3.x (16 columns) order, or a JMeter 2.x order told from the values. The
block reader (jmeter_jtl) finds each column by name through it."""
from __future__ import annotations

import csv
from dataclasses import dataclass

from toolbench.adapters.jmeter.agg import JtlError

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


@dataclass(frozen=True)
class Layout:
    names: tuple[str, ...]
    delimiter: int  # the byte
    header: bool
    assumed: str = ""  # for a header-less file: which layout was taken, and why

    def col(self, name: str) -> int | None:
        return self.names.index(name) if name in self.names else None


def layout_of(head: bytes) -> Layout:
    """The column layout, from the first line of a CSV JTL (its header, or its first record)."""
    first = head.split(b"\n", 1)[0].rstrip(b"\r").decode("utf-8", "replace")
    delimiter = "\t" if "\t" in first and "," not in first else ","
    fields = next(csv.reader([first], delimiter=delimiter))
    if fields and fields[0].isdigit():
        names, assumed = _headerless(fields)
        return Layout(names, ord(delimiter), header=False, assumed=assumed)
    missing = [name for name in REQUIRED if name not in fields]
    if missing:
        raise JtlError(f"unknown JTL column set {fields}: it lacks {', '.join(missing)} "
                       f"(a JMeter CSV JTL has at least timeStamp, elapsed and success)")
    return Layout(tuple(fields), ord(delimiter), header=True)


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
        if name in _NUMERIC and not value.isdigit():
            return False
        if name == "success" and value not in ("true", "false"):
            return False
        if name == "URL" and value and not value.startswith(("http://", "https://", "file:", "null")):
            return False
    return len(fields[0]) >= 12  # epoch milliseconds since 2001
