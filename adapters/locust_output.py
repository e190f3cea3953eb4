"""Readers for Locust's output formats: the JSON stats (--json), the summary
tables it prints to stderr at the end, and its CSV set (--csv: stats, stats
history, failures, exceptions). Each raises only ParseError."""
from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from toolbench import histogram
from toolbench.errors import ParseError
from toolbench.schema import PERCENTILES, Failures, Percentiles, SecondSample

_VERSION = re.compile(r"\blocust (\d+\.\d+[\w.\-]*)")
_AGGREGATED = re.compile(r"^\s+Aggregated\s+(\d+)\s+(\d+)\([\d.]+%\)\s+\|\s+[\d\s]+\|\s+([\d.]+)\s+([\d.]+)\s*$")
_PCT_HEADER = re.compile(r"^Type\s+Name\s+((?:[\d.]+%\s+)+)# reqs\s*$")
_PCT_ROW = re.compile(r"^\s+Aggregated((?:\s+(?:\d+|N/A))+)\s*$")
_ERROR_ROW = re.compile(r"^\s*(\d+)\s{2,}(\S.*?)\s*$")
# HttpUser: "HTTPError('404 Client Error: ...')"; FastHttpUser: "LocustBadStatusCode(code=404)".
_STATUS = re.compile(r"\b([1-5]\d\d) (?:Client|Server) Error\b|\bcode=([1-5]\d\d)\b")
_PCT_NAMES = {f"{pct:g}%": name for name, pct in PERCENTILES}  # Locust's column heads: "50%" ... "99.9%"
# Error texts (exception reprs) to failure classes, first match wins.
_CLASSES = (
    ("timeout", ("timeout", "timed out")),
    ("connect", ("connectionrefused", "connection refused", "newconnectionerror", "name or service not known",
                 "no route to host", "connecterror")),
    ("read", ("connectionreset", "connection reset", "remotedisconnected", "brokenpipe", "incompleteread",
              "connection aborted", "connectionclosed", "protocolerror", "badstatusline")),
)


@dataclass(frozen=True)
class Entry:
    """One JSON stats entry: the requests of one name and method."""

    name: str
    method: str
    num_requests: int
    num_none_requests: int
    num_failures: int
    total_response_time: float
    min_response_time: float | None
    max_response_time: float
    total_content_length: int
    start_time: float
    last_request_timestamp: float | None
    response_times: dict[int, int]  # rounded ms -> count
    num_reqs_per_sec: dict[int, int]  # unix second -> count
    num_fail_per_sec: dict[int, int]


@dataclass(frozen=True)
class Summary:
    """The final tables Locust prints to stderr when its JSON goes to stdout."""

    rps: float | None
    percentiles: Percentiles
    errors: dict[str, int]  # "METHOD name: error" -> occurrences


@dataclass(frozen=True)
class StatsRow:
    """The Aggregated row of the stats CSV."""

    requests: int
    failures: int
    mean_ms: float | None
    min_ms: float | None
    max_ms: float | None
    avg_content_size: float
    rps: float | None
    percentiles: Percentiles


def version(text: str) -> str | None:
    match = _VERSION.search(text)
    return match.group(1) if match else None


def classify(text: str) -> str:
    """The role of a Locust output file, from its content."""
    first = text.lstrip()[:200]
    if first.startswith("Type,Name,Request Count"):
        return "stats_csv"
    if first.startswith("Timestamp,User Count"):
        return "history_csv"
    if first.startswith("Method,Name,Error,Occurrences"):
        return "failures_csv"
    if first.startswith("Count,Message,Traceback,Nodes"):
        return "exceptions_csv"
    return "stdout"


def read_json(text: str, source: str | None) -> list[Entry] | None:
    """The stats entries of every JSON list on stdout (with --processes each worker
    prints its own, usually empty, list before the master's), or None without any."""
    decoder = json.JSONDecoder()
    docs: list[Any] = []
    for match in re.finditer(r"^\[", text, re.MULTILINE):
        try:
            doc, _ = decoder.raw_decode(text, match.start())
        except json.JSONDecodeError:
            continue
        if isinstance(doc, list):
            docs.append(doc)
    if not docs:
        return None
    return [_entry(item, source) for doc in docs for item in doc]


def _entry(item: Any, source: str | None) -> Entry:
    if not isinstance(item, dict):
        raise ParseError("locust", f"a JSON stats entry is not an object: {item!r:.80}", source)
    try:
        return Entry(
            name=str(item["name"]), method=str(item["method"]),
            num_requests=int(item["num_requests"]), num_none_requests=int(item.get("num_none_requests", 0)),
            num_failures=int(item["num_failures"]), total_response_time=float(item["total_response_time"]),
            min_response_time=_opt_float(item.get("min_response_time")),
            max_response_time=float(item["max_response_time"]),
            total_content_length=int(item["total_content_length"]), start_time=float(item["start_time"]),
            last_request_timestamp=_opt_float(item.get("last_request_timestamp")),
            response_times=_int_dict(item["response_times"]),
            num_reqs_per_sec=_int_dict(item.get("num_reqs_per_sec", {})),
            num_fail_per_sec=_int_dict(item.get("num_fail_per_sec", {})))
    except KeyError as exc:
        raise ParseError("locust", f"a JSON stats entry has no {exc.args[0]!r}", source) from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise ParseError("locust", f"a JSON stats entry has a malformed field: {exc}", source) from None


def _int_dict(value: Any) -> dict[int, int]:
    return {int(float(k)): int(v) for k, v in value.items()}


def _opt_float(value: Any) -> float | None:
    return None if value is None else float(value)


def histogram_of(entries: list[Entry]) -> HdrHistogram | None:
    hist = histogram.new()
    for entry in entries:
        for rounded_ms, count in entry.response_times.items():
            histogram.record_ms(hist, rounded_ms, count)
    return hist if hist.get_total_count() else None


def series_from_json(entries: list[Entry]) -> list[SecondSample]:
    requests: dict[int, int] = {}
    errors: dict[int, int] = {}
    for entry in entries:
        for second, count in entry.num_reqs_per_sec.items():
            requests[second] = requests.get(second, 0) + count
        for second, count in entry.num_fail_per_sec.items():
            errors[second] = errors.get(second, 0) + count
    if not requests:
        return []
    first, last = min(requests), max(requests)
    return [SecondSample(second=s - first, requests=requests.get(s, 0), errors=errors.get(s, 0))
            for s in range(first, last + 1)]


def read_summary(stderr: str) -> Summary | None:
    rps = None
    pct_names: list[str] = []
    pcts: dict[str, float] = {}
    errors: dict[str, int] = {}
    in_errors = False
    for line in stderr.splitlines():
        if m := _AGGREGATED.match(line):
            rps = float(m.group(3))
        elif m := _PCT_HEADER.match(line):
            pct_names = m.group(1).split()
        elif (m := _PCT_ROW.match(line)) and pct_names:
            values = m.group(1).split()
            for label, value in zip(pct_names, values):
                if label in _PCT_NAMES and value != "N/A":
                    pcts[_PCT_NAMES[label]] = float(value)
        elif line.startswith("Error report"):
            in_errors = True
        elif in_errors and (m := _ERROR_ROW.match(line)):
            errors[m.group(2)] = errors.get(m.group(2), 0) + int(m.group(1))
        elif in_errors and not line.strip():
            in_errors = False
    if rps is None and not pcts and not errors:
        return None
    return Summary(rps=rps, percentiles=Percentiles(**pcts), errors=errors)


def _rows(path: Path, header_start: str, what: str) -> list[dict[str, str]]:
    text = path.read_text(errors="replace")
    if not text.strip():
        raise ParseError("locust", f"the {what} CSV is empty (Locust writes it once a second and flushes "
                                   "it every few: a run killed early leaves it empty)", str(path))
    if not text.startswith(header_start):
        raise ParseError("locust", f"the {what} CSV does not start with {header_start!r}", str(path))
    return list(csv.DictReader(text.splitlines()))


def read_stats_csv(path: Path) -> StatsRow:
    rows = [r for r in _rows(path, "Type,Name,Request Count", "stats") if r.get("Name") == "Aggregated"]
    if not rows:
        raise ParseError("locust", "the stats CSV has no Aggregated row", str(path))
    row = rows[-1]
    try:
        requests = int(row["Request Count"])
        pcts = {name: float(row[label]) for label, name in _PCT_NAMES.items()
                if row.get(label) not in (None, "", "N/A") and requests}
        return StatsRow(
            requests=requests, failures=int(row["Failure Count"]),
            mean_ms=float(row["Average Response Time"]) if requests else None,
            min_ms=float(row["Min Response Time"]) if requests else None,
            max_ms=float(row["Max Response Time"]) if requests else None,
            avg_content_size=float(row["Average Content Size"]),
            rps=float(row["Requests/s"]) if requests else None,
            percentiles=Percentiles(**pcts))
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError("locust", f"the stats CSV's Aggregated row is malformed: {exc}", str(path)) from None


def read_failures_csv(path: Path) -> dict[str, int]:
    errors: dict[str, int] = {}
    for number, row in enumerate(_rows(path, "Method,Name,Error,Occurrences", "failures"), 2):
        try:
            key = f"{row['Method']} {row['Name']}: {row['Error']}"
            errors[key] = errors.get(key, 0) + int(row["Occurrences"])
        except (KeyError, TypeError, ValueError):
            raise ParseError("locust", f"failures CSV line {number} is malformed", str(path)) from None
    return errors


def classify_errors(errors: dict[str, int]) -> tuple[Failures, dict[int, int]]:
    counts = dict.fromkeys(("connect", "timeout", "read", "http_4xx", "http_5xx", "other"), 0)
    codes: dict[int, int] = {}
    for text, count in errors.items():
        if m := _STATUS.search(text):
            code = int(m.group(1) or m.group(2))
            codes[code] = codes.get(code, 0) + count
            counts["http_4xx" if code < 500 else "http_5xx"] += count
            continue
        lowered = text.lower()
        kind = next((k for k, needles in _CLASSES if any(n in lowered for n in needles)), "other")
        counts[kind] += count
    return Failures(**counts), codes


def exception_notes(path: Path | None) -> list[str]:
    """Exceptions raised in the locustfile itself, one note each."""
    if path is None or not path.read_text(errors="replace").strip():
        return []
    rows = _rows(path, "Count,Message,Traceback,Nodes", "exceptions")
    return [f"locustfile raised {row.get('Message', '?')} {row.get('Count', '?')} times" for row in rows]


def series_from_history(path: Path) -> list[SecondSample]:
    """Per-second requests from the Aggregated rows' cumulative totals."""
    if not path.read_text(errors="replace").strip():
        return []
    samples: list[tuple[int, int, int]] = []
    for row in _rows(path, "Timestamp,User Count", "stats history"):
        if row.get("Name") != "Aggregated":
            continue
        try:
            samples.append((int(row["Timestamp"]), int(row["Total Request Count"]),
                            int(row["Total Failure Count"])))
        except (KeyError, TypeError, ValueError):
            raise ParseError("locust", "a stats history row is malformed", str(path)) from None
    series = []
    previous = (0, 0)
    first = samples[0][0] if samples else 0
    for second, total, failed in samples:
        series.append(SecondSample(second=second - first, requests=total - previous[0],
                                   errors=failed - previous[1]))
        previous = (total, failed)
    return series


def error_line(stderr: str) -> str | None:
    """The last line of a traceback or error message, to say why a run gave nothing."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1][:300] if lines else None
