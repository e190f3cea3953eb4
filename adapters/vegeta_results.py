"""vegeta's results as toolbench reads them: its rows, one per request (`vegeta encode --to csv`,
or `vegeta encode`'s JSON lines), and its report (`vegeta report -type=json`), each read into a
Measurement. The text report (adapters/vegeta_text.py) is read through the same report reader."""
from __future__ import annotations

import calendar
import contextlib
import csv
import datetime
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from toolbench.record import failures, histogram, numbers
from toolbench.record.numbers import Numbers
from toolbench.record.schema import (Counts, Failures, Fidelity, Latency, Measurement, Omission, Percentiles, Rates,
                                     Timing, Transfer)

RESOLUTION_MS = 1e-6  # nanoseconds
_TIMESTAMP = re.compile(r"[0-9]{1,19}")
# `vegeta encode`'s JSON timestamps: RFC 3339 with up to nanoseconds (Go's time.RFC3339Nano).
_RFC3339 = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)")
GO_URL_ERROR = re.compile(r'^[A-Z]+ "(?:[^"\\]|\\.)*": ')  # `Get "http://...": ` before Go's own words
_REPORT_PCTS = {"50th": "p50_ms", "90th": "p90_ms", "95th": "p95_ms", "99th": "p99_ms"}
_FIELD_LIMIT = 1 << 30  # a response body, base64, in one CSV field
# Go's error texts to failure classes (toolbench.record.failures), first match wins.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("timeout", "deadline exceeded")),
    ("connect", ("connection refused", "connect:", "no route to host", "dial tcp")),
    ("reset", ("connection reset",)),
    ("read", ("eof", "broken pipe", "malformed http")),
)


@dataclass(frozen=True)
class Rows:
    """One row per request, in no particular order."""

    start_ns: np.ndarray  # since the epoch
    latency_ns: np.ndarray
    codes: np.ndarray
    failed: np.ndarray
    bytes_in: int
    bytes_out: int
    errors: dict[str, int]  # the texts of the failures that are not an HTTP status, with their counts


class _Collected:
    """Rows as they are read, checked one by one."""

    def __init__(self, num: Numbers) -> None:
        self.num = num
        self.starts: list[int] = []
        self.values: list[tuple[int, int, int, int]] = []  # latency, code, bytes in, bytes out
        self.failed: list[bool] = []
        self.errors: dict[str, int] = {}

    def add(self, i: int, start: int, code: int, took: int, bytes_in: int, bytes_out: int, error: str) -> None:
        if code and not 100 <= code <= 999:
            raise self.num.error(f"row {i} code", f"{code} is not an HTTP status")
        self.starts.append(start)
        self.values.append((took, code, bytes_in, bytes_out))
        bad = bool(error) or not 200 <= code < 400
        self.failed.append(bad)
        if bad and not 400 <= code <= 999:
            text = GO_URL_ERROR.sub("", error) or f"status {code}"
            self.errors[text] = self.errors.get(text, 0) + 1

    def rows(self) -> Rows:
        table = np.array(self.values, np.int64).reshape(-1, 4)
        sizes = [int(table[:, col].sum()) for col in (2, 3)]
        for what, total in zip(("bytes in", "bytes out"), sizes):
            if why := numbers.problem(total):
                raise self.num.error(what, why)
        return Rows(np.array(self.starts, np.int64), table[:, 0], table[:, 1], np.array(self.failed, bool),
                    sizes[0], sizes[1], self.errors)


@contextlib.contextmanager
def _wide_fields() -> Iterator[None]:
    """csv's field limit (128 KiB by default) raised for a read: a row holds the response body."""
    was = csv.field_size_limit(_FIELD_LIMIT)
    try:
        yield
    finally:
        csv.field_size_limit(was)


def read_rows(path: Path, num: Numbers) -> Rows:
    """`vegeta encode --to csv`: timestamp, code, latency, bytes out, bytes in, error, body, ..."""
    got = _Collected(num)
    try:
        with _wide_fields(), open(path, newline="", errors="replace") as fh:
            for i, row in enumerate(csv.reader(fh), 1):
                if len(row) != 12:
                    raise num.error(f"CSV row {i}", f"expected vegeta's 12 fields, got {len(row)}")
                if not _TIMESTAMP.fullmatch(row[0]) or int(row[0]) >= 1 << 63:
                    raise num.error(f"row {i} timestamp", f"expected nanoseconds since the epoch, got {row[0][:40]!r}")
                got.add(i, int(row[0]), num.integer(row[1], f"row {i} code"), num.integer(row[2], f"row {i} latency"),
                        num.integer(row[4], f"row {i} bytes in"), num.integer(row[3], f"row {i} bytes out"), row[5])
    except csv.Error as exc:  # a NUL byte, a field over even the raised limit: no row of vegeta's
        raise num.error("CSV", str(exc)) from None
    return got.rows()


def read_json_rows(path: Path, num: Numbers) -> Rows:
    """`vegeta encode` (`--to json`, its default): one JSON object a line."""
    got = _Collected(num)
    with open(path, errors="replace") as fh:
        for i, line in enumerate(fh, 1):
            if not line.strip():
                continue
            row = num.loads(line, f"JSON line {i}")
            if not isinstance(row, dict):
                raise num.error(f"JSON line {i}", "expected an object")
            error = row.get("error", "")
            if not isinstance(error, str):
                raise num.error(f"line {i} error", "expected a text")
            got.add(i, _epoch_ns(row.get("timestamp"), num, f"line {i} timestamp"),
                    num.whole(row.get("code"), f"line {i} code"), num.whole(row.get("latency"), f"line {i} latency"),
                    num.whole(row.get("bytes_in"), f"line {i} bytes_in"),
                    num.whole(row.get("bytes_out"), f"line {i} bytes_out"), error)
    return got.rows()


def _epoch_ns(value: Any, num: Numbers, what: str) -> int:
    m = _RFC3339.fullmatch(value) if isinstance(value, str) else None
    if m is None:
        raise num.error(what, f"expected an RFC 3339 time, got {str(value)[:40]!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    try:
        when = datetime.datetime(year, month, day, hour, minute, second)
    except ValueError as exc:
        raise num.error(what, str(exc)) from None
    zone = m.group(8)
    offset_s = 0 if zone == "Z" else (1 if zone[0] == "+" else -1) * (int(zone[1:3]) * 3600 + int(zone[4:6]) * 60)
    ns = (calendar.timegm(when.timetuple()) - offset_s) * 1_000_000_000 + int((m.group(7) or "0").ljust(9, "0"))
    if not 0 <= ns < 1 << 63:
        raise num.error(what, f"{value[:40]!r} is before 1970 or beyond 2262")
    return ns


def from_rows(rows: Rows, num: Numbers) -> Measurement:
    n = len(rows.start_ns)
    codes = {int(c): int(k) for c, k in zip(*np.unique(rows.codes, return_counts=True)) if c}
    by_class = failures.tally(rows.errors, FAILURE_TABLE)
    http_4xx = int(((rows.codes >= 400) & (rows.codes < 500)).sum())
    http_5xx = int((rows.codes >= 500).sum())
    failed = int(rows.failed.sum())
    first = int(rows.start_ns.min()) if n else 0
    offsets = rows.start_ns - first
    micros = (rows.latency_ns + 500) // 1000
    per = histogram.PerRequest("vegeta", num.source, unit_ms=0.001, seconds_field="timestamp")
    per.add(offsets // 1_000_000_000, micros, rows.failed)
    hist = histogram.new()
    for value, count in zip(*np.unique(micros, return_counts=True)):
        histogram.record_ms(hist, int(value) / 1000.0, int(count))
    per.add_histogram(hist)
    lat_ms = rows.latency_ns / 1e6
    send_span_s = int(offsets.max()) / 1e9 if n else 0.0
    latency = Latency(min_ms=float(lat_ms.min()), mean_ms=float(lat_ms.mean()), max_ms=float(lat_ms.max()),
                      stdev_ms=float(lat_ms.std()), resolution_ms=RESOLUTION_MS) if n else Latency()
    derived = ["timing.duration_s", "rates.rps", "counts.requests_total", "counts.requests_ok",
               "counts.requests_failed", "counts.status_codes", "transfer.received_bytes", "transfer.sent_bytes",
               "latency.min_ms", "latency.mean_ms", "latency.max_ms", "latency.stdev_ms", "histogram", "series",
               *(f"counts.failures.{k}" for k in failures.CLASSES)]
    return Measurement(
        tool="vegeta",
        timing=Timing(duration_s=int((offsets + rows.latency_ns).max()) / 1e9 if n else None),
        counts=Counts(requests_total=n, requests_ok=n - failed, requests_failed=failed, status_codes=codes,
                      failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                        read=by_class["read"], reset=by_class["reset"], other=by_class["other"],
                                        http_4xx=http_4xx, http_5xx=http_5xx)),
        rates=Rates(rps=n / send_span_s if send_span_s else None),  # as vegeta's report says its rate
        transfer=Transfer(received_bytes=rows.bytes_in, sent_bytes=rows.bytes_out),
        latency=latency,
        histogram=per.encoded(),
        series=per.series(first=0) if n else [],
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity={name: Fidelity.DERIVED for name in derived},
    )


def read_report(path: Path, num: Numbers) -> dict[str, Any] | None:
    text = path.read_text(errors="replace")
    if not text.strip():
        return None  # the step wrote nothing (it failed, said in step_errors)
    data = num.loads(text, "the JSON report")
    if not isinstance(data, dict) or not isinstance(data.get("latencies"), dict):
        raise num.error("the JSON report", "no latencies: not vegeta's report")
    return data


def _section(data: dict[str, Any], key: str, num: Numbers) -> dict[str, Any]:
    value = data.get(key)
    if not isinstance(value, dict):
        raise num.error(key, "expected an object")
    return value


def status_codes(data: dict[str, Any], num: Numbers) -> dict[int, int]:
    """The report's counts by status; 0 is vegeta's code for a request without a response."""
    codes: dict[int, int] = {}
    for key, value in _section(data, "status_codes", num).items():
        code = num.integer(key, "status_codes")
        if code and not 100 <= code <= 999:
            raise num.error("status_codes", f"{key!r} is not an HTTP status")
        codes[code] = num.whole(value, f"status_codes.{key}")
    return codes


def _optional_ns(data: dict[str, Any], key: str, num: Numbers) -> int | None:
    """A time in nanoseconds that an older vegeta did not report (its JSON has no `min`, no `90th`)."""
    return None if data.get(key) is None else num.whole(data.get(key), key)


def from_report(data: dict[str, Any], num: Numbers) -> Measurement:
    """vegeta's report, as `-type=json` writes it; a figure some version of it lacks is absent."""
    total = num.whole(data.get("requests"), "requests")
    codes = status_codes(data, num)
    if sum(codes.values()) != total:  # every result has a code, 0 for one without a response
        raise num.error("status_codes", f"they count {sum(codes.values())} requests, the report {total}")
    ok = sum(n for c, n in codes.items() if 200 <= c < 400)
    http_4xx = sum(n for c, n in codes.items() if 400 <= c < 500)
    http_5xx = sum(n for c, n in codes.items() if c >= 500)
    errors = data.get("errors")
    if not isinstance(errors, list) or not all(isinstance(e, str) for e in errors):
        raise num.error("errors", "expected a list of texts")
    # The report lists each error text once, uncounted: the failures without an HTTP status go
    # to a class only when every such text says the same one.
    classes = {failures.classify(GO_URL_ERROR.sub("", e), FAILURE_TABLE) for e in errors
               if not re.match(r"\d{3} ", e)}
    unanswered = total - ok - http_4xx - http_5xx
    by_class = dict.fromkeys(failures.CLASSES, 0)
    by_class[classes.pop() if len(classes) == 1 else "other"] += unanswered
    lat = _section(data, "latencies", num)
    latency = Latency()
    if total:
        ms = {key: ns / 1e6 for key in ("min", "mean", "max", *_REPORT_PCTS)
              if (ns := _optional_ns(lat, key, num)) is not None}
        latency = Latency(min_ms=ms.get("min"), mean_ms=ms.get("mean"), max_ms=ms.get("max"),
                          resolution_ms=RESOLUTION_MS,
                          percentiles=Percentiles(**{name: ms.get(key) for key, name in _REPORT_PCTS.items()}))
    duration, wait = _optional_ns(data, "duration", num), _optional_ns(data, "wait", num)
    sizes = {key: _optional_ns(_section(data, key, num), "total", num) if key in data else None
             for key in ("bytes_in", "bytes_out")}
    return Measurement(
        tool="vegeta",
        timing=Timing(duration_s=(duration + wait) / 1e9 if total and duration is not None and wait is not None
                      else None),
        counts=Counts(requests_total=total, requests_ok=ok, requests_failed=total - ok,
                      status_codes={c: n for c, n in codes.items() if c},
                      failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                        read=by_class["read"], reset=by_class["reset"], other=by_class["other"],
                                        http_4xx=http_4xx, http_5xx=http_5xx)),
        rates=Rates(rps=num.real(data.get("rate"), "rate") if total and data.get("rate") is not None else None),
        transfer=Transfer(received_bytes=sizes["bytes_in"], sent_bytes=sizes["bytes_out"]),
        latency=latency,
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity={"counts.requests_ok": Fidelity.DERIVED, "counts.requests_failed": Fidelity.DERIVED,
                  "timing.duration_s": Fidelity.DERIVED,
                  **{f"counts.failures.{k}": Fidelity.DERIVED for k in failures.CLASSES}},
    )
