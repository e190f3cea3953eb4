"""Readers for Locust's CSV set (--csv: stats, stats history, failures, exceptions, and
0.x's requests and distribution CSVs). Each raises only ParseError; the JSON stats and the
console tables are read in locust_output."""
from __future__ import annotations

import csv
import re
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
# Locust 0.13 and 0.14 (--csv X wrote X_stats.csv and X_stats_history.csv), every field quoted;
# 1.x and 2.x name the same columns otherwise, and put the timestamp first in the history.
STATS_013, HISTORY_013 = "Type,Name,# requests", "Type,Name,Timestamp"
STATS_1X, HISTORY_1X = "Type,Name,Request Count", "Timestamp,User Count"
# The Aggregated row's figures, by the column that holds each in either form.
_COLUMNS = {
    STATS_1X: ("Request Count", "Failure Count", "Average Response Time", "Min Response Time",
               "Max Response Time", "Average Content Size", "Requests/s"),
    STATS_013: ("# requests", "# failures", "Average response time", "Min response time",
                "Max response time", "Average Content Size", "Requests/s"),
}
_CUMULATIVE = {HISTORY_1X: ("Total Request Count", "Total Failure Count"), HISTORY_013: ("# requests", "# failures")}
# The version Locust logs as it starts (at its default log level), beside its CSVs in its stderr.
_STARTED = re.compile(r"Starting Locust (\d+)\.(\d+)")


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
    # Written again as the run ended (Locust 0.x to 1.1 did so), not only once a second.
    final: bool = False


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


def header(path: Path) -> str:
    """The start of a CSV's first line, quotes taken out: older Locusts quote every field."""
    with open(path, errors="replace") as fh:
        return fh.readline(200).replace('"', "")


def read_stats_csv(path: Path, distribution: Path | None = None, stderr: str = "") -> StatsRow:
    """The Aggregated row of a stats CSV (Locust 0.13 to 2.x), or the Total row of 0.x's
    requests CSV, with the percentiles of its distribution CSV when given. `stderr`: the run's
    log, whose start line names the version where the CSV does not."""
    first = header(path)
    if first.startswith(STATS_0X.replace('"', "")):
        return _read_0x(path, distribution, stderr)
    form = STATS_013 if first.startswith(STATS_013) else STATS_1X
    rows = [r for r in _rows(path, form, "stats") if r.get("Name") == "Aggregated"]
    if not rows:
        raise ParseError("locust", "the stats CSV has no Aggregated row", str(path))
    row = rows[-1]
    num = Numbers("locust", str(path))

    def cell(label: str) -> str:
        value = row.get(label)
        if not isinstance(value, str):
            raise num.error(f"the stats CSV's Aggregated row, {label}", "missing")
        return value

    count, failures, mean, low, high, size, rate = _COLUMNS[form]
    requests = num.integer(cell(count), count)
    notes = []
    pcts = {}
    for label, name in PCT_NAMES.items():
        if row.get(label) in (None, "", "N/A") or not requests:
            if requests and row.get(label) == "N/A":  # printed, but no figure in it
                notes.append(f"the stats CSV's {label} is N/A for {requests} requests: left absent")
            continue
        pcts[name] = num.decimal(cell(label), label)
    timed = {label: num.decimal(cell(label), label) if requests else None for label in (mean, low, high, rate)}
    if form == STATS_013:
        notes.append("figures from Locust 0.13/0.14's stats CSV (whole ms); its # requests counts failures too")
    started = _STARTED.search(stderr)
    final = form == STATS_013 or started is not None and started.group(1) == "1" and started.group(2) in ("0", "1")
    return StatsRow(
        requests=requests, failures=num.integer(cell(failures), failures),
        mean_ms=timed[mean], min_ms=timed[low], max_ms=timed[high],
        avg_content_size=num.decimal(cell(size), size),
        rps=timed[rate], percentiles=Percentiles(**pcts), notes=tuple(notes), final=final)


def _read_0x(path: Path, distribution: Path | None, stderr: str) -> StatsRow:
    """The Total row of Locust 0.x's requests CSV (named Aggregated from 0.12 on)."""
    rows = _rows(path, STATS_0X, "0.x requests")
    num = Numbers("locust", str(path))
    totals = [r for r in rows if r.get("Method") == "None" and r.get("Name") in ("Total", "Aggregated")]
    if not totals:
        raise ParseError("locust", "the 0.x requests CSV has no Total row", str(path))
    pairs = [(num.integer(r.get("# requests") or "", "# requests"),
              num.integer(r.get("# failures") or "", "# failures")) for r in rows]
    row = totals[-1]
    counted, failed = pairs[rows.index(row)]
    left_out, why = _failures_left_out(pairs, (counted, failed), row.get("Name"), stderr)
    requests = counted + failed if left_out else counted
    notes = ["figures from Locust 0.x's requests CSV (whole ms); its times are those of the requests it counted", why]
    if left_out and failed:
        notes.append("Requests/s and the content size, which are per request counted, are scaled to all requests")
    share = counted / requests if requests else 1.0  # of the requests, those Locust counted
    # Locust writes 0 for the times of a row that counted none: no time at all.
    timed = {k: num.decimal(row.get(k) or "", k) if counted else None
             for k in ("Average response time", "Min response time", "Max response time", "Requests/s")}
    pcts = _distribution_0x(distribution) if distribution else {}
    if not pcts and counted:
        pcts = {"p50_ms": num.decimal(row.get("Median response time") or "", "Median response time")}
    return StatsRow(requests=requests, failures=failed, mean_ms=timed["Average response time"],
                    min_ms=timed["Min response time"], max_ms=timed["Max response time"],
                    avg_content_size=num.decimal(row.get("Average Content Size") or "", "Average Content Size") * share,
                    rps=None if timed["Requests/s"] is None or not share else timed["Requests/s"] / share,
                    percentiles=Percentiles(**pcts), notes=tuple(notes), final=True)


def _failures_left_out(pairs: list[tuple[int, int]], total: tuple[int, int], total_name: str | None,
                       stderr: str) -> tuple[bool, str]:
    """Whether 0.x's `# requests` leaves the failures out, and why that reading: Locust up to 0.9
    counted successes alone there, 0.10 on (its pull request 939) every request, in the same form of
    file. What the run's own files show decides; failing that, the reading of the versions that wrote
    this form for years (up to 0.9), with the other reading's figures in the note."""
    started = _STARTED.search(stderr)
    if started and started.group(1) == "0":
        version = f"0.{started.group(2)}"
        if int(started.group(2)) < 10:
            return True, (f"Locust {version} (its log says so) counted successes alone in `# requests`: "
                          "requests = # requests + # failures")
        return False, f"Locust {version} (its log says so) counts every request in `# requests`, failures too"
    if any(f > r for r, f in pairs):
        return True, ("`# requests` leaves the failures out (a row has more failures than requests, as Locust "
                      "0.9 and before wrote): requests = # requests + # failures")
    if total_name == "Aggregated":
        return False, ("the total row is named Aggregated, as Locust 0.12 on named it, whose `# requests` "
                       "counts failures too")
    counted, failed = total
    if not failed:
        return False, "no request failed: `# requests` is every request, as Locust counted it in any version"
    return True, (f"`# requests` counted successes alone up to Locust 0.9 and every request from 0.10, in this "
                  f"same form, and nothing beside it tells which wrote it: read as 0.9 and before, "
                  f"{counted} + {failed} failed = {counted + failed} requests; from Locust 0.10 or 0.11 it "
                  f"would be {counted} requests, {failed} of them failed")


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


def series_from_history(path: Path) -> tuple[list[SecondSample], list[str]]:
    """Per-second requests from the Aggregated rows' cumulative totals, and what was made of
    them. Locust 0.13 to 1.x write a row at the end of the run as well as one each interval, so
    the last often shares a second with the one before (and two rows can share any second when
    a write runs late): their counts are cumulative, so the later row stands for that second."""
    if not path.read_text(errors="replace").strip():
        return [], []
    form = HISTORY_013 if header(path).startswith(HISTORY_013) else HISTORY_1X
    num = Numbers("locust", str(path))
    samples: list[tuple[int, int, int]] = []
    merged = 0
    for number, row in enumerate(_rows(path, form, "stats history"), 2):
        if row.get("Name") != "Aggregated":
            continue
        cells = [row.get(k) for k in ("Timestamp", *_CUMULATIVE[form])]
        if not all(isinstance(c, str) for c in cells):
            raise ParseError("locust", f"stats history line {number} is malformed", str(path))
        sample = tuple(num.integer(c, f"stats history line {number}") for c in cells)  # type: ignore
        if samples and samples[-1][0] == sample[0]:
            samples[-1] = sample
            merged += 1
        else:
            samples.append(sample)  # type: ignore
    notes = [f"the stats history CSV has two Aggregated rows for {merged} second(s) (Locust writes one at the "
             "end of the run too): the later, whose counts include the earlier's, is taken"] if merged else []
    series = []
    previous = (0, 0)
    first = samples[0][0] if samples else 0
    for second, total, failed in samples:
        series.append(SecondSample(second=second - first, requests=total - previous[0],
                                   errors=failed - previous[1]))
        previous = (total, failed)
    return series, notes
