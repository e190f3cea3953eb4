"""k6's per-sample outputs, `--out csv=FILE` and `--out json=FILE`, read in one pass into the
same figures.

`--out csv` (k6's output/csv, MakeHeader and SampleToRow): `metric_name,timestamp,metric_value`,
then one column per system tag k6 was asked for (sorted: check, error, error_code,
expected_response, group, method, name, proto, scenario, service, status, subproto,
tls_version, url by default; which of them varies by version and by `--system-tags`), then
`extra_tags` and, in later versions, `metadata`. The timestamp is unix seconds by default
(`timeFormat`: unix_nano, unix_milli, rfc3339 too); values are `%f`. Columns are found by their
name in the header, never by position. `--out json`: one JSON document a line, `Metric`
declarations and `Point`s (`data.time` RFC 3339, `data.value`, `data.tags`).

What is read: the requests (http_reqs samples), the failed ones (http_req_failed, 1 for a
failure; without it, expected_response, or the status), status codes and error texts (the
`status` and `error` tags), latency from http_req_duration (the request without the connection
set-up, as k6 defines it), the means of http_req_connecting and http_req_waiting (time to
first byte), bytes from data_received and data_sent, the most VUs from vus_max, and the run's
duration from the first and last sample's time."""
from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from toolbench.errors import ParseError
from toolbench.record import failures, histogram
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Counts, Failures, Fidelity, Latency, Measurement, Timing, Transfer

HEADER = "metric_name,timestamp,metric_value"
# Go's error texts (k6 keeps the net/http error's words) to failure classes, first match wins.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("timeout", "deadline exceeded")),
    ("connect", ("connection refused", "connect:", "no route to host", "dial")),
    ("reset", ("connection reset",)),
    ("read", ("eof", "broken pipe", "malformed http")),
)
_TAGS = ("status", "expected_response", "error", "error_code", "url")
READ = {"http_reqs", "http_req_failed", "http_req_duration", "http_req_connecting", "http_req_waiting",
        "data_received", "data_sent", "vus_max"}
_UNITS_PER_S = {10: 1, 13: 1_000, 16: 1_000_000, 19: 1_000_000_000}  # digits of a unix time -> its unit
_SHOWN_METRICS = 12


@dataclass
class _Tally:
    """What the rows add up to, read in one pass."""

    total: int = 0
    codes: dict[int, int] = field(default_factory=dict)
    judged_failed: int = 0  # from expected_response, else the status, of each http_reqs row
    judged_errors: dict[str, int] = field(default_factory=dict)
    failed_rows: int = 0  # http_req_failed rows, and of them those that say 1
    failed: int = 0
    failed_errors: dict[str, int] = field(default_factory=dict)
    hist: histogram.HdrHistogram = field(default_factory=histogram.new)
    times: list[float] = field(default_factory=lambda: [0.0, math.inf, 0.0, 0])  # sum, min, max, count
    means: dict[str, list[float]] = field(default_factory=dict)  # metric -> [sum, count]
    sums: dict[str, float] = field(default_factory=dict)
    vus_max: float | None = None
    first_s: float | None = None
    last_s: float | None = None
    coarse: bool = False  # unix seconds: the duration is good to a second
    urls: set[str] = field(default_factory=set)
    unread: set[str] = field(default_factory=set)


def read_csv(path: Path, source: str | None) -> Measurement:
    num = Numbers("k6", source)
    tally = _Tally()
    try:
        with open(path, newline="", encoding="utf-8", errors="replace") as fh:
            rows = csv.reader(fh)
            cols = _columns(next(rows, None), num)
            for number, row in enumerate(rows, 2):
                if not row:
                    continue
                if len(row) != len(cols):
                    raise num.error(f"CSV row {number}", f"expected {len(cols)} fields, got {len(row)}")
                tags = {name: row[i] for name, i in cols.items() if name in _TAGS}
                _sample(row[0], num.decimal(row[2], f"row {number} metric_value"), row[1], tags, f"row {number}",
                        tally, num)
    except csv.Error as exc:  # a field over the csv module's limit (128 KiB), a NUL byte: no row of k6's
        raise num.error("CSV", str(exc)) from None
    except OSError as exc:
        raise ParseError("k6", f"cannot read {path}: {exc.strerror or exc}", source) from None
    if tally.total == 0:
        raise ParseError("k6", "no http_reqs row in the CSV: k6 made no HTTP request", source)
    notes = ["not read: the extra_tags and metadata columns"] if {"extra_tags", "metadata"} & set(cols) else []
    return _measurement(tally, "--out csv rows", notes)


def read_points(path: Path, source: str | None) -> Measurement:
    num = Numbers("k6", source)
    tally = _Tally()
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for number, line in enumerate(fh, 1):
                if line.strip():
                    _point(num.loads(line, f"line {number}"), f"line {number}", tally, num)
    except OSError as exc:
        raise ParseError("k6", f"cannot read {path}: {exc.strerror or exc}", source) from None
    if tally.total == 0:
        raise ParseError("k6", "no http_reqs point: k6 made no request", source)
    return _measurement(tally, "--out json points", [])


def _point(doc: object, where: str, t: _Tally, num: Numbers) -> None:
    if not isinstance(doc, dict) or doc.get("type") != "Point":
        return  # a Metric declaration
    data, metric = doc.get("data"), doc.get("metric")
    if not isinstance(data, dict) or not isinstance(metric, str):
        raise num.error(where, "a point without its metric or data")
    value, time, tags = data.get("value"), data.get("time"), data.get("tags") or {}
    if not isinstance(time, str) or not isinstance(tags, dict):
        raise num.error(where, "a point without its time or with tags that are no object")
    _sample(metric, num.real(value, f"{where} value"), time,
            {str(k): str(v) for k, v in tags.items() if k in _TAGS}, where, t, num)


def _columns(header: list[str] | None, num: Numbers) -> dict[str, int]:
    if not header or [h.strip().lstrip("\ufeff") for h in header[:3]] != HEADER.split(","):
        raise num.error("CSV header", f"not k6's (expected it to start {HEADER})")
    return {name.strip(): i for i, name in enumerate(header)}


def _sample(metric: str, value: float, time: str, tags: dict[str, str], where: str, t: _Tally, num: Numbers) -> None:
    _time(time, where, t, num)
    if metric not in READ:
        t.unread.add(metric[:60])
    elif metric == "http_reqs":
        _request(tags, value, where, t, num)
    elif metric == "http_req_failed":
        t.failed_rows += 1
        if value == 1:
            t.failed += 1
            _count_error(t.failed_errors, tags)
        elif value != 0:
            raise num.error(f"{where} http_req_failed", f"{value!r} is neither 0 nor 1")
    elif metric == "http_req_duration":
        histogram.record_ms(t.hist, value)
        t.times[0] += value
        t.times[1], t.times[2], t.times[3] = min(t.times[1], value), max(t.times[2], value), t.times[3] + 1
    elif metric in ("http_req_connecting", "http_req_waiting"):
        acc = t.means.setdefault(metric, [0.0, 0])
        acc[0], acc[1] = acc[0] + value, acc[1] + 1
    elif metric == "vus_max":
        t.vus_max = max(value, t.vus_max or 0.0)
    else:
        t.sums[metric] = t.sums.get(metric, 0.0) + value


def _request(tags: dict[str, str], value: float, where: str, t: _Tally, num: Numbers) -> None:
    if value != 1:
        raise num.error(f"{where} http_reqs", f"{value!r}: k6 writes one sample, of 1, per request")
    t.total += 1
    status = tags.get("status", "")
    code = int(status) if _is_status(status) else None
    if code is not None and 100 <= code <= 599:
        t.codes[code] = t.codes.get(code, 0) + 1
    expected = tags.get("expected_response", "")
    failed = expected == "false" if expected in ("true", "false") else (code is None or code >= 400)
    if failed:
        t.judged_failed += 1
        _count_error(t.judged_errors, tags)
    if url := tags.get("url"):
        t.urls.add(url[:2000])


def _is_status(text: str) -> bool:
    return len(text) == 3 and text.isascii() and text.isdigit()


def _count_error(errors: dict[str, int], tags: dict[str, str]) -> None:
    """A failed request's class: its HTTP status, else k6's error text (or code)."""
    status = tags.get("status", "")
    if _is_status(status) and status >= "400":
        key = "http_5xx" if status >= "500" else "http_4xx"
    else:
        key = tags.get("error", "")[:200] or f"k6 error code {tags.get('error_code', '')[:20] or 'none'}"
    errors[key] = errors.get(key, 0) + 1


def _time(text: str, where: str, t: _Tally, num: Numbers) -> None:
    if text.isascii() and text.isdigit() and len(text) in _UNITS_PER_S:
        per_s = _UNITS_PER_S[len(text)]
        seconds = int(text) / per_s
        t.coarse = t.coarse or per_s == 1
    else:
        try:
            seconds = datetime.fromisoformat(text.strip()[:64]).timestamp()
        except (ValueError, OverflowError, OSError):
            raise num.error(f"{where} timestamp", f"neither a unix time nor RFC 3339: {text[:40]!r}") from None
    t.first_s = seconds if t.first_s is None else min(t.first_s, seconds)
    t.last_s = seconds if t.last_s is None else max(t.last_s, seconds)


def _failed(t: _Tally) -> tuple[int, dict[str, int], str]:
    """The failed requests and their classes, from k6's own verdict where the CSV has it."""
    if t.failed_rows == t.total:
        return t.failed, t.failed_errors, "http_req_failed"
    how = "expected_response, else the status (no response or 400 and above)"
    if t.failed_rows:
        how += f" (the CSV has {t.failed_rows} http_req_failed rows for {t.total} requests)"
    return t.judged_failed, t.judged_errors, how


def _measurement(t: _Tally, form: str, extra: list[str]) -> Measurement:
    failed, errors, how = _failed(t)
    http = {key: errors.pop(key, 0) for key in ("http_4xx", "http_5xx")}
    by_class = failures.tally(errors, FAILURE_TABLE)
    duration = (t.last_s or 0.0) - (t.first_s or 0.0)
    notes = [f"figures from k6's {form}, one per sample; failed requests from {how}",
             "latency is k6's http_req_duration: the request without its connection set-up"]
    whole = " (whole seconds)" if t.coarse else ""
    notes.append(f"the duration runs from the first to the last sample's timestamp{whole}"
                 if duration > 0 else "every sample has the same timestamp: the run's duration is not known")
    if t.unread:
        shown = sorted(t.unread)
        more = f" and {len(shown) - _SHOWN_METRICS} more" if len(shown) > _SHOWN_METRICS else ""
        notes.append(f"not read (no field here): the metrics {', '.join(shown[:_SHOWN_METRICS])}{more}")
    notes += extra
    total, low, high, count = t.times
    return Measurement(
        tool="k6",
        timing=Timing(duration_s=duration if duration > 0 else None),
        counts=Counts(requests_total=t.total, requests_ok=t.total - failed, requests_failed=failed,
                      status_codes=dict(sorted(t.codes.items())),
                      failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                        read=by_class["read"], reset=by_class["reset"], other=by_class["other"],
                                        **http)),
        transfer=Transfer(received_bytes=_bytes(t, "data_received"), sent_bytes=_bytes(t, "data_sent")),
        latency=Latency(min_ms=low if count else None, max_ms=high if count else None,
                        mean_ms=total / count if count else None,
                        connect_mean_ms=_mean(t, "http_req_connecting"), ttfb_mean_ms=_mean(t, "http_req_waiting")),
        histogram=histogram.encode(t.hist) if count else None,
        fidelity={"latency.mean_ms": Fidelity.DERIVED, "histogram": Fidelity.DERIVED,
                  "timing.duration_s": Fidelity.DERIVED, "counts.requests_ok": Fidelity.DERIVED},
        notes=notes,
        url=next(iter(t.urls)) if len(t.urls) == 1 else None,
        concurrency=round(t.vus_max) if t.vus_max is not None else None,
    )


def _mean(t: _Tally, metric: str) -> float | None:
    acc = t.means.get(metric)
    return acc[0] / acc[1] if acc and acc[1] else None


def _bytes(t: _Tally, metric: str) -> int | None:
    return round(t.sums[metric]) if metric in t.sums else None
