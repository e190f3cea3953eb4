"""The numbers behind the latency distribution views: an HDR histogram's percentile
distribution and its requests per latency bucket (percentiles per second: toolbench.record.timings).

Pure functions over histograms; the report's sections draw them."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hdrh.histogram import HdrHistogram

from toolbench.record.histogram import Level, nonzero, percentile_levels

BUCKETS_PER_DECADE = 10


def distribution(hist: HdrHistogram) -> tuple[list[Level], float]:
    """The levels of HdrHistogram's percentile distribution below 100 % (the HDR plot's
    points: 1/(1-p) cannot place 100 %), and the maximum, in ms."""
    return [lv for lv in percentile_levels(hist) if lv.percentile < 100.0], hist.get_max_value() / 1000.0


@dataclass(frozen=True)
class Bucket:
    low_ms: float  # inclusive
    high_ms: float  # exclusive
    count: int

    @property
    def middle_ms(self) -> float:
        """Where a log axis draws the bucket: its geometric middle (half its top when it starts at 0)."""
        return math.sqrt(self.low_ms * self.high_ms) if self.low_ms > 0 else self.high_ms / 2.0


def buckets(hist: HdrHistogram, resolution_ms: float | None = None) -> list[Bucket]:
    """Requests per latency bucket, BUCKETS_PER_DECADE to a decade, each at least the
    resolution of the times wide (whole-ms times in buckets of whole ms: no empty bucket
    between two whole milliseconds). Every value recorded is counted in exactly one bucket;
    empty buckets between the fastest and the slowest request are kept (a real 0)."""
    values, counts = _recorded(hist)
    if not len(values):
        return []
    edges = _edges(float(values[0]), float(values[-1]), resolution_ms)
    tallies = np.histogram(values, bins=edges, weights=counts)[0]
    return [Bucket(float(lo), float(hi), int(n)) for lo, hi, n in zip(edges[:-1], edges[1:], tallies)]


def _recorded(hist: HdrHistogram) -> tuple[np.ndarray, np.ndarray]:
    """Each recorded bucket's lowest value (ms; a whole-ms time reads back exactly) and its count."""
    indices, counts = nonzero(hist)
    values = np.array([hist.get_value_from_index(i) for i in indices.tolist()], np.float64) / 1000.0
    return values, counts


def _edges(low: float, high: float, resolution_ms: float | None) -> np.ndarray:
    step = resolution_ms if resolution_ms and resolution_ms > 0 else None
    first = math.floor(math.log10(max(low, 1e-3)) * BUCKETS_PER_DECADE)
    last = math.floor(math.log10(max(high, 1e-3)) * BUCKETS_PER_DECADE) + 1
    edges = 10.0 ** (np.arange(first, last + 1) / BUCKETS_PER_DECADE)
    if step:  # whole steps: a bucket never splits one step of the tool's clock
        edges = np.unique(np.ceil(np.round(edges / step, 9)) * step)
        if low < edges[0]:
            edges = np.concatenate([[math.floor(low / step) * step], edges])
    else:
        edges = np.unique(np.round(edges, 12))
    if edges[-1] <= high:  # the slowest request falls in the last bucket, never past it
        edges = np.append(edges, edges[-1] * 10 ** (1 / BUCKETS_PER_DECADE) if not step else high + step)
    return edges
