"""ab's -g file (gnuplot TSV: one row per completed request, its epoch second and times in
whole milliseconds): the histogram and series it gives, and what it adds to ab's own figures."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from hdrh.histogram import HdrHistogram

from toolbench.contract.adapter import RawOutput
from toolbench.errors import ParseError
from toolbench.record import histogram
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Counts, Fidelity, Latency, SecondSample

HEADER = "starttime\tseconds\t"


@dataclass(frozen=True)
class PerRequest:
    """What the -g rows give: one per completed request."""

    rows: int
    histogram: HdrHistogram | None
    series: list[SecondSample]
    exact: dict[str, float]  # the rows' min, max, mean and stdev (ms)


def read(raw: RawOutput) -> PerRequest | None:
    read = read_rows(raw)
    if read is None:
        return None
    tally = histogram.PerRequest("ab", str(raw.files["tsv"]))  # -g times are whole ms
    tally.add(*read)
    return PerRequest(len(read[0]), tally.histogram(), tally.series(), tally.stats_ms() or {})


def read_rows(raw: RawOutput) -> tuple[np.ndarray, np.ndarray] | None:
    """The -g file's requests: each one's epoch second and total time (whole ms)."""
    path = raw.files.get("tsv")
    if path is None:
        return None
    at = Numbers("ab", str(path))
    seconds: list[int] = []
    times: list[int] = []
    with open(path, errors="replace") as fh:
        header = fh.readline()
        if not header.startswith(HEADER):
            raise ParseError("ab", "the -g file has no 'starttime seconds' header", str(path))
        for number, line in enumerate(fh, 2):
            parts = line.rstrip("\n").split("\t")
            if len(parts) != 6:
                raise ParseError("ab", f"line {number}: not a -g row: {line.strip()!r:.80}", str(path))
            seconds.append(at.integer(parts[1], f"line {number}: seconds"))
            times.append(at.integer(parts[4], f"line {number}: ttime"))
    if not seconds:
        return None
    return np.asarray(seconds, np.int64), np.asarray(times, np.int64)


def counts_alone(per: PerRequest, fidelity: dict[str, Fidelity], notes: list[str]) -> Counts:
    """The -g file without ab's stdout: ab writes a row for each completed request (its `Complete
    requests`), and nothing of its status or of a failed read."""
    fidelity["counts.requests_total"] = Fidelity.DERIVED
    notes.append(f"ab's -g file without its stdout: its {per.rows} rows are the completed requests; whether "
                 "any of them failed (a non-2xx status, a failed read) it does not say: failures unknown")
    return Counts(requests_total=per.rows)


def finer(latency: Latency, per: PerRequest, mean_from_curve: bool, fidelity: dict[str, Fidelity],
          notes: list[str]) -> Latency:
    """The rows' exact whole-ms extremes and moments, for the figures stdout did not give (read
    back from the histogram they would be a bucket's edge, up to 2 ms off past a second); and their
    mean in place of the Connection Times table's, which ab rounds to the whole ms, unless the -e
    file's curve gave a finer one."""
    exact = per.exact
    changes = {name: value for name, value in exact.items() if getattr(latency, name) is None}
    if latency.mean_ms is not None and not mean_from_curve and "mean_ms" in exact \
            and exact["mean_ms"] != latency.mean_ms:
        notes.append(f"mean from ab -g's {per.rows} per-request times: {exact['mean_ms']:.4g} ms (each time is "
                     "rounded to the whole ms, so their mean is within 0.5 ms of the true one and usually much "
                     f"closer), where ab's Connection Times row rounds the mean itself: {latency.mean_ms:g} ms")
        changes["mean_ms"] = exact["mean_ms"]
    for name in changes:
        fidelity[f"latency.{name}"] = Fidelity.DERIVED
    if changes and latency.resolution_ms is None:
        changes["resolution_ms"] = 1.0
    return dataclasses.replace(latency, **changes)
