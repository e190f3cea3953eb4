"""Readers for Locust's output formats: the JSON stats (--json) and the summary
tables it prints to stderr at the end; which file is which (classify). Its CSV set
(--csv) is read in locust_csv. Each raises only ParseError."""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from typing import Any

from hdrh.histogram import HdrHistogram

from toolbench.adapters.locust.csv_set import (DISTRIBUTION_0X, HISTORY_1X, HISTORY_013, PCT_NAMES, STATS_0X, STATS_1X,
                                               STATS_013)
from toolbench.record import failures, histogram
from toolbench.record.numbers import Numbers
from toolbench.adapters.locust.workload import CHECK_PREFIX
from toolbench.record.schema import (PERCENTILES, Counts, Failures, Latency, Percentiles, Rates, RequestFigures,
                                     SecondSample)

_VERSION = re.compile(r"\blocust (\d+\.\d+[\w.\-]*)")
# Every pattern is matched within one line: [^\S\n] is white space that does not run on across
# line ends (from each of thousands of blank lines, `\s` would run over all those after it), and
# no two repetitions next to each other can take the same characters, so that a line that almost
# matches is given up at once, not after trying every way of sharing it out (quadratic).
# The Aggregated row of the console's stats table: reqs, fails, then Avg, Min, Max, Med (whole ms).
_CONSOLE_ROW = re.compile(r"^[^\S\n]+Aggregated[^\S\n]+(\d+)[^\S\n]+(\d+)\([\d.]+%\)[^\S\n]+\|[^\S\n]+"
                          r"(\d+)[^\S\n]+(\d+)[^\S\n]+(\d+)[^\S\n]+(\d+)[^\S\n]+\|", re.MULTILINE)
# The same row at the end of the run: what lies between the bars is digits and spaces.
_AGGREGATED = re.compile(r"^\s+Aggregated\s+(\d+)\s+(\d+)\([\d.]+%\)\s+\|\s[\d\s]+\|\s+([\d.]+)\s+([\d.]+)\s*$")
_PCT_HEADER = re.compile(r"^Type\s+Name\s+((?:[\d.]+%\s+)+)# reqs\s*$")
_PCT_ROW = re.compile(r"^\s+Aggregated((?:\s+(?:\d+|N/A))+)\s*$")
# Occurrences, two spaces or more, the error's text: its trailing spaces are stripped after the
# match, as a lazy `(\S.*?)\s*$` tries the rest of the line from each character (quadratic).
_ERROR_ROW = re.compile(r"^\s*(\d+)\s{2,}(\S.*)$")
# HttpUser: "HTTPError('404 Client Error: ...')"; FastHttpUser: "LocustBadStatusCode(code=404)".
_STATUS = re.compile(r"\b([1-5]\d\d) (?:Client|Server) Error\b|\bcode=([1-5]\d\d)\b")
# Error texts (exception reprs) to failure classes (toolbench.record.failures), first match wins.
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


def version(text: str) -> str | None:
    match = _VERSION.search(text)
    return match.group(1) if match else None


def classify(text: str) -> str:
    """The role of a Locust output file, from its content."""
    head = text.lstrip()[:200]
    if head.startswith(STATS_0X):
        return "stats_csv"
    first = head.replace('"', "")  # a header written with every field quoted (older Locusts) reads the same
    if first.startswith((STATS_1X, STATS_013)):
        return "stats_csv"
    if head.startswith(DISTRIBUTION_0X):
        return "distribution_csv"
    if first.startswith((HISTORY_1X, HISTORY_013)):
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
    return "Aggregated" in text and re.search(r"^[^\S\n]*Type[^\S\n]+Name[^\S\n]", text, re.MULTILINE) is not None


def read_json(text: str, source: str | None) -> list[Entry] | None:
    """The stats entries of every JSON list on stdout (with --processes each worker
    prints its own, usually empty, list before the master's), or None without any."""
    num = Numbers("locust", source)
    decoder = num.decoder()
    docs: list[Any] = []
    # Each list begins a line with "[" and holds no other such line (Locust indents its own): each
    # is decoded from its own stretch of the output, up to the next, so that a failed try costs
    # that stretch, not all the output before it (a JSON error counts the lines up to its place).
    starts = [match.start() for match in re.finditer(r"^\[", text, re.MULTILINE)]
    for start, end in zip(starts, [*starts[1:], len(text)]):
        try:
            doc, _ = decoder.raw_decode(text[start:end])
        except (json.JSONDecodeError, RecursionError):  # not JSON, or lists nested past Python's stack
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
                if label in PCT_NAMES and value != "N/A":
                    pcts[PCT_NAMES[label]] = num.decimal(value, f"the {label} percentile")
        elif line.startswith("Error report"):
            in_errors = True
        elif in_errors and (m := _ERROR_ROW.match(line)):
            text = m.group(2).rstrip()
            errors[text] = errors.get(text, 0) + num.integer(m.group(1), "error report occurrences")
        elif in_errors and not line.strip():
            in_errors = False
    if rps is None and not pcts and not errors:
        return None
    return Summary(rps=rps, percentiles=Percentiles(**pcts), errors=errors)


def classify_errors(errors: dict[str, int]) -> tuple[Failures, dict[int, int]]:
    """Failure classes of Locust's error report; an HTTP error's status comes from its text."""
    codes: dict[int, int] = {}
    rest: dict[str, int] = {}
    checked = 0
    for text, count in errors.items():
        if CHECK_PREFIX in text:  # a workload's check failed (toolbench.adapters.locust.workload)
            checked += count
        elif m := _STATUS.search(text):
            code = int(m.group(1) or m.group(2))
            codes[code] = codes.get(code, 0) + count
        else:
            rest[text] = count
    counts = failures.tally(rest, FAILURE_TABLE)
    counts["http_4xx"] = sum(n for code, n in codes.items() if code < 500)
    counts["http_5xx"] = sum(n for code, n in codes.items() if code >= 500)
    if checked:
        counts["check"] = counts.get("check", 0) + checked
    return Failures(**counts), codes


def by_request(entries: list[Entry], errors: dict[str, int] | None, duration_s: float | None,
               notes: list[str]) -> list[RequestFigures]:
    """Figures per request name (a workload's names), from the entries of each name; none for a
    run of one name. A name's failure classes come from the error list's lines of that name
    (`METHOD name: error`), left out when they do not add up to its failed count."""
    names = sorted({e.name for e in entries})
    if len(names) < 2:
        return []
    figures = []
    for name in names:
        mine = [e for e in entries if e.name == name]
        total = sum(e.num_requests for e in mine)
        failed = sum(e.num_failures for e in mine)
        timed = total - sum(e.num_none_requests for e in mine)
        prefixes = tuple(f"{e.method} {name}: " for e in mine)
        own = {text: n for text, n in (errors or {}).items() if text.startswith(prefixes)}
        failures, codes = classify_errors(own) if sum(own.values()) == failed else (Failures(), {})
        low = min((e.min_response_time for e in mine if e.min_response_time is not None), default=None)
        high = max((e.max_response_time for e in mine), default=None) if timed else None
        rate = Rates(rps_derived=total / duration_s, rps_ok=(total - failed) / duration_s) if duration_s else Rates()
        figures.append(RequestFigures(
            name=name,
            counts=Counts(requests_total=total, requests_ok=total - failed, requests_failed=failed,
                          failures=failures, status_codes=codes),
            latency=Latency(min_ms=low, max_ms=high,
                            mean_ms=sum(e.total_response_time for e in mine) / timed if timed else None,
                            percentiles=within_bounds(bucket_percentiles(mine), low, high, []) if timed
                            else Percentiles(),
                            resolution_ms=1.0 if timed else None),
            rates=rate))
    notes.append("figures per request name from Locust's stats entry of each name; their percentiles are Locust's "
                 "reading of its rounded buckets")
    return figures


def error_line(stderr: str) -> str | None:
    """The last line of a traceback or error message, to say why a run gave nothing."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return lines[-1][:300] if lines else None
