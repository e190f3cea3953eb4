"""h2load's per-request log (`--log-file`), read alone or beside its summary.

Its rows, as h2load 1.52's man page gives them: tab-separated, the request's start in µs since
the epoch, its HTTP status (-1 for a failed stream) and the µs until the end of its response;
one row per request done in the measured phase (after any --warm-up-time), in the order
they ended. What follows for the figures:
- a request that never had a stream (a connection refused, or timed out before sending) has
  no row: a log alone counts only the requests done. h2load's bytes, connect times, clients
  and timeouts are in its summary only;
- the times are exact (µs): percentiles, the histogram and the series come from them, over
  the requests answered (a failed stream's time is to its failure, not to a response), as
  h2load's own request times are;
- it prints no run time: a log alone gives the span of its rows, from the first request's
  start to the last response's end."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolbench.errors import ParseError
from toolbench.record import histogram
from toolbench.record.numbers import MAX_VALUE, Numbers
from toolbench.record.schema import (PERCENTILES, Counts, Failures, Fidelity, Latency, Measurement, Omission,
                                     SecondSample, Timing)
from toolbench.record.timings import SecondTally

_ROW = re.compile(r"(\d{1,19})\t(-1|\d{1,3})\t(\d{1,19})\r?")
RESOLUTION_MS = 0.001
PERCENTILE_METRICS = tuple(f"latency.percentiles.{name}" for name, _ in PERCENTILES)


@dataclass(frozen=True)
class Rows:
    start_us: np.ndarray
    status: np.ndarray
    took_us: np.ndarray
    notes: tuple[str, ...]

    @property
    def answered(self) -> np.ndarray:
        return self.status >= 0


@dataclass(frozen=True)
class Times:
    """What the rows give of the latency: percentiles, the histogram and the series."""

    latency: Latency
    histogram: str | None
    series: list[SecondSample]


def looks_like(text: str) -> bool:
    """A head whose first line is a row of the log."""
    first = text.split("\n", 1)[0]
    return _ROW.fullmatch(first) is not None and len(first.split("\t", 1)[0]) >= 13


def read(path: Path, num: Numbers) -> Rows:
    """Every row; a last one cut short (h2load stopped while writing it) is left out, said in a note."""
    starts: list[int] = []
    codes: list[int] = []
    took: list[int] = []
    notes: list[str] = []
    with open(path, "rb") as fh:
        lines = fh.read().decode(errors="replace").split("\n")
    for i, line in enumerate(lines, 1):
        m = _ROW.fullmatch(line)
        if m is None and line.strip():
            if i == len(lines):
                notes.append(f"the log's last row is cut short ({line[:40]!r}): left out")
                continue
            raise num.error(f"log row {i}", f"expected h2load's start µs, status and µs, got {line[:60]!r}")
        if m is not None:
            code = int(m.group(2))
            if code != -1 and code < 100:
                raise num.error(f"log row {i}", f"{code} is not an HTTP status")
            starts.append(int(m.group(1)))
            codes.append(code)
            took.append(int(m.group(3)))
    rows = Rows(np.array(starts, np.int64), np.array(codes, np.int64), np.array(took, np.int64), tuple(notes))
    for values, what in ((rows.start_us, "start time"), (rows.took_us, "request time")):
        if len(values) and int(values.max()) > MAX_VALUE:
            raise num.error(f"log {what}", f"{int(values.max())} is out of range")
    return rows


def times(rows: Rows, num: Numbers) -> Times:
    """Percentiles (within the exact extremes), histogram and series of the answered rows."""
    done = rows.answered
    took = rows.took_us[done]
    first = int(rows.start_us.min()) if len(rows.start_us) else 0
    seconds = (rows.start_us - first) // 1_000_000
    per = histogram.PerRequest("h2load", num.source, unit_ms=0.001, seconds_field="log start time")
    per.add(seconds[done], took, np.zeros(len(took), bool))
    if not done.all():  # counted in their second, their times (to the failure) in no mean
        failed_at, count = np.unique(seconds[~done], return_counts=True)
        per.add_seconds(failed_at.tolist(), count.tolist(), errors=count.tolist())
    hist = histogram.new()
    for value, count in zip(*np.unique(took, return_counts=True)):
        histogram.record_ms(hist, int(value) / 1000.0, int(count))
    per.add_histogram(hist)
    if not len(took):
        return Times(Latency(), None, per.series(first=0) if len(rows.start_us) else [])
    low, high = float(took.min()) / 1000.0, float(took.max()) / 1000.0
    latency = Latency(min_ms=low, mean_ms=float(took.mean()) / 1000.0, max_ms=high,
                      stdev_ms=float(took.std()) / 1000.0, resolution_ms=RESOLUTION_MS,
                      percentiles=histogram.percentiles_ms(hist, low, high))
    return Times(latency, per.encoded(), per.series(first=0))


def tally(rows: Rows) -> SecondTally | None:
    done = rows.answered
    if not done.any():
        return None
    found = SecondTally()
    starts = rows.start_us[done]
    found.add((starts - starts.min()) // 1_000_000, rows.took_us[done] // 1000)
    return found


def alone(rows: Rows, num: Numbers) -> Measurement:
    """A Measurement from the log without its summary: what the rows can give, and notes on what
    they cannot."""
    if not len(rows.status):
        raise ParseError("h2load", "its per-request log holds no row, and there is no summary beside it "
                         "(h2load's stdout): a request that never got a response is not in the log", num.source)
    status = rows.status
    codes = {int(c): int(n) for c, n in zip(*np.unique(status[status >= 0], return_counts=True))}
    ok = sum(n for c, n in codes.items() if 200 <= c < 400)
    failed_streams = int((status < 0).sum())
    total = len(status)
    notes = ["figures from h2load's per-request log alone (--log-file): a request with no stream (a refused or "
             "timed-out connection) has no row and is not counted; the bytes, connect times, clients and "
             "timeouts are in its summary (stdout) only",
             "duration: the span of the log's rows, from the first request's start to the last response's end",
             *rows.notes]
    if failed_streams:
        notes.append(f"{failed_streams} rows say -1, a failed stream: failed, of no known cause, and left out "
                     "of the latency")
    found = times(rows, num)
    span_us = int((rows.start_us + rows.took_us).max() - rows.start_us.min())
    derived = ["timing.duration_s", "counts.requests_total", "counts.requests_ok", "counts.requests_failed",
               "counts.status_codes", "latency.min_ms", "latency.mean_ms", "latency.max_ms", "latency.stdev_ms",
               "histogram", "series", *PERCENTILE_METRICS]
    return Measurement(
        tool="h2load",
        timing=Timing(duration_s=span_us / 1e6 if span_us else None),
        counts=Counts(requests_total=total, requests_ok=ok, requests_failed=total - ok, status_codes=codes,
                      failures=Failures(other=failed_streams + sum(n for c, n in codes.items() if c < 200),
                                        http_4xx=sum(n for c, n in codes.items() if 400 <= c < 500),
                                        http_5xx=sum(n for c, n in codes.items() if c >= 500))),
        latency=found.latency,
        histogram=found.histogram,
        histogram_resolution_ms=RESOLUTION_MS if found.histogram else None,
        series=found.series,
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity={name: Fidelity.DERIVED for name in derived},
        notes=notes,
    )


def beside(summary: Measurement, rows: Rows, done: int, num: Numbers) -> Measurement:
    """The summary's figures, with the percentiles, histogram and series of its log; a log whose
    rows are not the summary's requests done is of another run, and is left out."""
    if len(rows.status) != done:
        return dataclasses.replace(summary, notes=[*summary.notes, (
            f"the per-request log beside it holds {len(rows.status)} rows, not the {done} requests done of this "
            "summary: it is of another run, and is not read")])
    if not done:
        return summary
    found = times(rows, num)
    latency = dataclasses.replace(summary.latency, percentiles=found.latency.percentiles)
    fidelity = summary.fidelity | {name: Fidelity.DERIVED for name in ("histogram", "series", *PERCENTILE_METRICS)}
    notes = [*summary.notes, *rows.notes, "latency percentiles, histogram and series from h2load's per-request "
             "log (µs), over the requests answered; the counts and min, mean, max and sd from its summary"]
    return dataclasses.replace(summary, latency=latency, histogram=found.histogram, series=found.series,
                               histogram_resolution_ms=RESOLUTION_MS, fidelity=fidelity, notes=notes)
