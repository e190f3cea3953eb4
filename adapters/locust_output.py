"""Readers for Locust's output formats: the JSON stats (--json), the summary
tables it prints to stderr at the end, and its CSV set (--csv: stats, stats
history, failures, exceptions). Each raises only ParseError."""
from __future__ import annotations

import csv
import dataclasses
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from toolbench import failures, histogram
from toolbench.errors import ParseError
from toolbench.numbers import Numbers
from toolbench.schema import PERCENTILES, Failures, Percentiles, SecondSample

_VERSION = re.compile(r"\blocust (\d+\.\d+[\w.\-]*)")
# The Aggregated row of the console's stats table: reqs, fails, then Avg, Min, Max, Med (whole ms).
_CONSOLE_ROW = re.compile(r"^\s+Aggregated\s+(\d+)\s+(\d+)\([\d.]+%\)\s+\|\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|", re.MULTILINE)
_AGGREGATED = re.compile(r"^\s+Aggregated\s+(\d+)\s+(\d+)\([\d.]+%\)\s+\|\s+[\d\s]+\|\s+([\d.]+)\s+([\d.]+)\s*$")
_PCT_HEADER = re.compile(r"^Type\s+Name\s+((?:[\d.]+%\s+)+)# reqs\s*$")
_PCT_ROW = re.compile(r"^\s+Aggregated((?:\s+(?:\d+|N/A))+)\s*$")
_ERROR_ROW = re.compile(r"^\s*(\d+)\s{2,}(\S.*?)\s*$")
# HttpUser: "HTTPError('404 Client Error: ...')"; FastHttpUser: "LocustBadStatusCode(code=404)".
_STATUS = re.compile(r"\b([1-5]\d\d) (?:Client|Server) Error\b|\bcode=([1-5]\d\d)\b")
_PCT_NAMES = {f"{pct:g}%": name for name, pct in PERCENTILES}  # Locust's column heads: "50%" ... "99.9%"
# Error texts (exception reprs) to failure classes (toolbench.failures), first match wins.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("timeout", "timed out")),
    ("connect", ("connectionrefused", "connection refused", "newconnectionerror", "no route to host",
                 "connecterror")),
    ("reset", ("connectionreset", "connection reset")),
    ("read", ("remotedisconnected", "brokenpipe", "incompleteread",
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
    notes: tuple[str, ...] = ()


def version(text: str) -> str | None:
    match = _VERSION.search(text)
    return match.group(1) if match else None


def classify(text: str) -> str:
    """The role of a Locust output file, from its content."""
    head = text.lstrip()[:200]
    if head.startswith(_STATS_0X):
        return "stats_csv"
    first = head.replace('"', "")  # a header written with every field quoted (older Locusts) reads the same
    if first.startswith("Type,Name,Request Count"):
        return "stats_csv"
    if head.startswith(_DISTRIBUTION_0X):
        return "distribution_csv"
    if first.startswith("Timestamp,User Count"):
        return "history_csv"
    if first.startswith("Method,Name,Error,Occurrences"):
        return "failures_csv"
    if first.startswith("Count,Message,Traceback,Nodes"):
        return "exceptions_csv"
    return "stdout"


def recognizes(text: str) -> bool:
    """Locust's CSVs, its --json list or its console tables."""
    if classify(text) != "stdout":
        return True
    if text.lstrip().startswith("[") and '"num_requests"' in text:
        return True
    return "Aggregated" in text and re.search(r"^\s*Type\s+Name\s+", text, re.MULTILINE) is not None


def read_json(text: str, source: str | None) -> list[Entry] | None:
    """The stats entries of every JSON list on stdout (with --processes each worker
    prints its own, usually empty, list before the master's), or None without any."""
    num = Numbers("locust", source)
    decoder = num.decoder()
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
    return [_entry(item, num) for doc in docs for item in doc]


def _entry(item: Any, num: Numbers) -> Entry:
    if not isinstance(item, dict):
        raise num.error("JSON stats", f"an entry is not an object: {item!r:.80}")
    try:
        return Entry(
            name=str(item["name"]), method=str(item["method"]),
            num_requests=num.whole(item["num_requests"], "num_requests"),
            num_none_requests=num.whole(item.get("num_none_requests", 0), "num_none_requests"),
            num_failures=num.whole(item["num_failures"], "num_failures"),
            total_response_time=num.real(item["total_response_time"], "total_response_time"),
            min_response_time=_opt_real(num, item.get("min_response_time"), "min_response_time"),
            max_response_time=num.real(item["max_response_time"], "max_response_time"),
            total_content_length=num.whole(item["total_content_length"], "total_content_length"),
            start_time=num.real(item["start_time"], "start_time"),
            last_request_timestamp=_opt_real(num, item.get("last_request_timestamp"), "last_request_timestamp"),
            response_times=_counts_by(num, item["response_times"], "response_times"),
            num_reqs_per_sec=_counts_by(num, item.get("num_reqs_per_sec", {}), "num_reqs_per_sec"),
            num_fail_per_sec=_counts_by(num, item.get("num_fail_per_sec", {}), "num_fail_per_sec"))
    except KeyError as exc:
        raise num.error("JSON stats", f"an entry has no {exc.args[0]!r}") from None


def _counts_by(num: Numbers, value: Any, what: str) -> dict[int, int]:
    """A JSON object of whole-number keys (ms, or unix seconds) to counts."""
    if not isinstance(value, dict):
        raise num.error(what, f"expected an object, got {value!r:.80}")
    counts: dict[int, int] = {}
    for key, count in value.items():
        at = num.whole(num.decimal(str(key), f"{what} key"), f"{what} key")
        counts[at] = counts.get(at, 0) + num.whole(count, f"{what}[{key!r:.20}]")
    return counts


def _opt_real(num: Numbers, value: Any, what: str) -> float | None:
    return None if value is None else num.real(value, what)


def histogram_of(entries: list[Entry], source: str | None) -> HdrHistogram | None:
    tally = histogram.PerRequest("locust", source)
    for entry in entries:
        tally.add_tally(entry.response_times)  # Locust's buckets: rounded ms
    return tally.histogram()


def bucket_percentiles(entries: list[Entry]) -> Percentiles:
    """The percentiles as Locust itself reads them from its buckets (the response time
    at or below which the given share of requests fall), over every entry together."""
    times: dict[int, int] = {}
    for entry in entries:
        for rounded_ms, count in entry.response_times.items():
            times[rounded_ms] = times.get(rounded_ms, 0) + count
    total = sum(times.values())
    if not total:
        return Percentiles()
    values = {}
    for name, pct in PERCENTILES:
        left = total - int(total * round(pct / 100.0, 6))  # requests at or above it; 0.999 as Locust writes it
        for rounded_ms in sorted(times, reverse=True):
            left -= times[rounded_ms]
            if left <= 0:
                values[name] = float(rounded_ms)
                break
    return Percentiles(**values)


def within_bounds(p: Percentiles, low: float | None, high: float | None, notes: list[str]) -> Percentiles:
    """Locust rounds each response time to about two significant digits before it
    buckets it (1 ms below 100 ms, 10 ms below 1 s, 100 ms below 10 s, then 1 s), and
    reads percentiles from those buckets: a percentile can lie up to half a bucket
    beyond the exact min or max it also reports (1,002.7 ms is bucket 1,000). The true
    percentile lies within [min, max], so such a value is set to the bound, which is
    within that rounding of it. A value further out is left for the invariants to refuse."""
    changes = {}
    for name, _ in PERCENTILES:
        value = getattr(p, name)
        if value is None:
            continue
        for bound, beyond in ((low, value < (low or 0.0)), (high, high is not None and value > high)):
            if bound is not None and beyond and abs(value - bound) <= _half_bucket(max(value, bound)):
                changes[name] = bound
                notes.append(f"{name} {value:g} is Locust's bucket of {bound:g} ms, its exact "
                             f"{'min' if bound is low else 'max'}: set to it")
    return dataclasses.replace(p, **changes)


def _half_bucket(ms: float) -> float:
    """Half the width of Locust's response time bucket at `ms` (locust.stats)."""
    return 0.5 if ms < 100 else 5.0 if ms < 1000 else 50.0 if ms < 10000 else 500.0


def series_from_json(entries: list[Entry], source: str | None) -> list[SecondSample]:
    """Requests and failures by second; Locust keeps no times by second."""
    tally = histogram.PerRequest("locust", source, seconds_field="num_reqs_per_sec")
    for entry in entries:
        seconds = sorted(set(entry.num_reqs_per_sec) | set(entry.num_fail_per_sec))
        tally.add_seconds(seconds, [entry.num_reqs_per_sec.get(s, 0) for s in seconds],
                          [entry.num_fail_per_sec.get(s, 0) for s in seconds])
    return tally.series()


def read_console_row(text: str, source: str | None) -> tuple[int, int, float, float, float] | None:
    """Requests, failures, mean, min and max of the console's last Aggregated stats row."""
    rows = _CONSOLE_ROW.findall(text)
    if not rows:
        return None
    num = Numbers("locust", source)
    reqs, fails, avg, low, high, _ = rows[-1]
    return (num.integer(reqs, "# reqs"), num.integer(fails, "# fails"), num.decimal(avg, "Avg"),
            num.decimal(low, "Min"), num.decimal(high, "Max"))


def read_summary(stderr: str, source: str | None = None) -> Summary | None:
    num = Numbers("locust", source)
    rps = None
    pct_names: list[str] = []
    pcts: dict[str, float] = {}
    errors: dict[str, int] = {}
    in_errors = False
    for line in stderr.splitlines():
        if m := _AGGREGATED.match(line):
            rps = num.decimal(m.group(3), "req/s of the Aggregated row")
        elif m := _PCT_HEADER.match(line):
            pct_names = m.group(1).split()
        elif (m := _PCT_ROW.match(line)) and pct_names:
            values = m.group(1).split()
            for label, value in zip(pct_names, values):
                if label in _PCT_NAMES and value != "N/A":
                    pcts[_PCT_NAMES[label]] = num.decimal(value, f"the {label} percentile")
        elif line.startswith("Error report"):
            in_errors = True
        elif in_errors and (m := _ERROR_ROW.match(line)):
            errors[m.group(2)] = errors.get(m.group(2), 0) + num.integer(m.group(1), "error report occurrences")
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
    if not text.split("\n", 1)[0].replace('"', "").startswith(header_start.replace('"', "")):
        raise ParseError("locust", f"the {what} CSV does not start with {header_start!r}", str(path))
    # Locust writes a whole error message in one field (a server's error page, say): a field
    # may be as long as the file, beyond the csv module's default limit of 128 KiB. The
    # limit is the module's global; it is raised for this read only.
    limit = csv.field_size_limit()
    csv.field_size_limit(max(limit, len(text)))
    try:
        return list(csv.DictReader(text.splitlines()))
    except csv.Error as exc:
        raise ParseError("locust", f"the {what} CSV is malformed: {exc}", str(path)) from None
    finally:
        csv.field_size_limit(limit)


def read_stats_csv(path: Path, distribution: Path | None = None) -> StatsRow:
    """The Aggregated row of a stats CSV (Locust 1.x and 2.x), or the Total row of 0.x's
    requests CSV, with the percentiles of its distribution CSV when given."""
    with open(path, errors="replace") as fh:
        if fh.read(len(_STATS_0X)) == _STATS_0X:
            return _read_0x(path, distribution)
    rows = [r for r in _rows(path, "Type,Name,Request Count", "stats") if r.get("Name") == "Aggregated"]
    if not rows:
        raise ParseError("locust", "the stats CSV has no Aggregated row", str(path))
    row = rows[-1]
    num = Numbers("locust", str(path))

    def cell(label: str) -> str:
        value = row.get(label)
        if not isinstance(value, str):
            raise num.error(f"the stats CSV's Aggregated row, {label}", "missing")
        return value

    requests = num.integer(cell("Request Count"), "Request Count")
    pcts = {name: num.decimal(cell(label), label) for label, name in _PCT_NAMES.items()
            if row.get(label) not in (None, "", "N/A") and requests}
    timed = {label: num.decimal(cell(label), label) if requests else None
             for label in ("Average Response Time", "Min Response Time", "Max Response Time", "Requests/s")}
    return StatsRow(
        requests=requests, failures=num.integer(cell("Failure Count"), "Failure Count"),
        mean_ms=timed["Average Response Time"], min_ms=timed["Min Response Time"],
        max_ms=timed["Max Response Time"],
        avg_content_size=num.decimal(cell("Average Content Size"), "Average Content Size"),
        rps=timed["Requests/s"], percentiles=Percentiles(**pcts))


# Locust 0.x (--csv X wrote X_requests.csv and X_distribution.csv), every field quoted.
_STATS_0X = '"Method","Name","# requests"'
_DISTRIBUTION_0X = '"Name","# requests","50%"'


def _read_0x(path: Path, distribution: Path | None) -> StatsRow:
    """Locust 0.x's `# requests` counted the successful requests alone in some versions and
    every request in later ones; the file does not say which. A row with more failures than
    requests shows the first; no failure at all makes them the same; else it is refused."""
    rows = _rows(path, _STATS_0X, "0.x requests")
    num = Numbers("locust", str(path))
    totals = [r for r in rows if r.get("Method") == "None" and r.get("Name") in ("Total", "Aggregated")]
    if not totals:
        raise ParseError("locust", "the 0.x requests CSV has no Total row", str(path))
    pairs = [(num.integer(r.get("# requests") or "", "# requests"),
              num.integer(r.get("# failures") or "", "# failures")) for r in rows]
    requests, failed = pairs[rows.index(totals[-1])]
    counted = requests
    notes = ["figures from Locust 0.x's requests CSV (whole ms); its times are those of the requests it counted"]
    if any(f > r for r, f in pairs):
        requests += failed
        notes.append("`# requests` leaves the failures out (a row has more failures than requests): "
                     "requests = # requests + # failures; Requests/s and the content size, which are per "
                     "request counted, are scaled to all requests")
    elif failed:
        raise ParseError("locust", "Locust 0.x's `# requests` left failures out in some versions and not in "
                         "others, and this file does not show which: its counts are unknown", str(path))
    row = totals[-1]
    share = counted / requests if requests else 1.0  # of the requests, those Locust counted
    timed = {k: num.decimal(row.get(k) or "", k) if requests else None
             for k in ("Average response time", "Min response time", "Max response time", "Requests/s")}
    pcts = _distribution_0x(distribution) if distribution else {}
    if not pcts and requests:
        pcts = {"p50_ms": num.decimal(row.get("Median response time") or "", "Median response time")}
    return StatsRow(requests=requests, failures=failed, mean_ms=timed["Average response time"],
                    min_ms=timed["Min response time"], max_ms=timed["Max response time"],
                    avg_content_size=num.decimal(row.get("Average Content Size") or "", "Average Content Size") * share,
                    rps=None if timed["Requests/s"] is None or not share else timed["Requests/s"] / share,
                    percentiles=Percentiles(**pcts), notes=tuple(notes))


def _distribution_0x(path: Path) -> dict[str, float]:
    """The Total row's percentiles from 0.x's distribution CSV."""
    rows = [r for r in _rows(path, _DISTRIBUTION_0X, "0.x distribution")
            if r.get("Name") in ("None Total", "Total", "Aggregated")]
    if not rows:
        return {}
    num = Numbers("locust", str(path))
    return {name: num.decimal(rows[-1][label], label) for label, name in _PCT_NAMES.items()
            if rows[-1].get(label) not in (None, "", "N/A")}


def read_failures_csv(path: Path) -> dict[str, int]:
    num = Numbers("locust", str(path))
    errors: dict[str, int] = {}
    for number, row in enumerate(_rows(path, "Method,Name,Error,Occurrences", "failures"), 2):
        if not all(isinstance(row.get(k), str) for k in ("Method", "Name", "Error", "Occurrences")):
            raise ParseError("locust", f"failures CSV line {number} is malformed", str(path))
        key = f"{row['Method']} {row['Name']}: {row['Error']}"
        errors[key] = errors.get(key, 0) + num.integer(row["Occurrences"], f"failures CSV line {number}, Occurrences")
    return errors


def classify_errors(errors: dict[str, int]) -> tuple[Failures, dict[int, int]]:
    """Failure classes of Locust's error report; an HTTP error's status comes from its text."""
    codes: dict[int, int] = {}
    rest: dict[str, int] = {}
    for text, count in errors.items():
        if m := _STATUS.search(text):
            code = int(m.group(1) or m.group(2))
            codes[code] = codes.get(code, 0) + count
        else:
            rest[text] = count
    counts = failures.tally(rest, FAILURE_TABLE)
    counts["http_4xx"] = sum(n for code, n in codes.items() if code < 500)
    counts["http_5xx"] = sum(n for code, n in codes.items() if code >= 500)
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
    num = Numbers("locust", str(path))
    samples: list[tuple[int, int, int]] = []
    for number, row in enumerate(_rows(path, "Timestamp,User Count", "stats history"), 2):
        if row.get("Name") != "Aggregated":
            continue
        cells = [row.get(k) for k in ("Timestamp", "Total Request Count", "Total Failure Count")]
        if not all(isinstance(c, str) for c in cells):
            raise ParseError("locust", f"stats history line {number} is malformed", str(path))
        samples.append(tuple(num.integer(c, f"stats history line {number}") for c in cells))  # type: ignore
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
