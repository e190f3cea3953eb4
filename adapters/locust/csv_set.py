"""Readers for Locust's CSV set (--csv: stats, stats history, failures, exceptions, and
0.x's requests and distribution CSVs). Each raises only ParseError; the JSON stats and the
console tables are read in locust_output."""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

from toolbench.errors import ParseError
from toolbench.record.numbers import Numbers
from toolbench.record.schema import PERCENTILES, Percentiles, SecondSample

# Locust's percentile column heads, in its CSVs and its console tables alike: "50%" ... "99.9%".
PCT_NAMES = {f"{pct:g}%": name for name, pct in PERCENTILES}
# Locust 0.x (--csv X wrote X_requests.csv and X_distribution.csv), every field quoted.
STATS_0X = '"Method","Name","# requests"'
DISTRIBUTION_0X = '"Name","# requests","50%"'


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
        if fh.read(len(STATS_0X)) == STATS_0X:
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
    pcts = {name: num.decimal(cell(label), label) for label, name in PCT_NAMES.items()
            if row.get(label) not in (None, "", "N/A") and requests}
    timed = {label: num.decimal(cell(label), label) if requests else None
             for label in ("Average Response Time", "Min Response Time", "Max Response Time", "Requests/s")}
    return StatsRow(
        requests=requests, failures=num.integer(cell("Failure Count"), "Failure Count"),
        mean_ms=timed["Average Response Time"], min_ms=timed["Min Response Time"],
        max_ms=timed["Max Response Time"],
        avg_content_size=num.decimal(cell("Average Content Size"), "Average Content Size"),
        rps=timed["Requests/s"], percentiles=Percentiles(**pcts))


def _read_0x(path: Path, distribution: Path | None) -> StatsRow:
    """Locust 0.x's `# requests` counted the successful requests alone in some versions and
    every request in later ones; the file does not say which. A row with more failures than
    requests shows the first; no failure at all makes them the same; else it is refused."""
    rows = _rows(path, STATS_0X, "0.x requests")
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
    rows = [r for r in _rows(path, DISTRIBUTION_0X, "0.x distribution")
            if r.get("Name") in ("None Total", "Total", "Aggregated")]
    if not rows:
        return {}
    num = Numbers("locust", str(path))
    return {name: num.decimal(rows[-1][label], label) for label, name in PCT_NAMES.items()
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
