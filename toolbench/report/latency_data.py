"""The numbers behind the latency distribution views: an HDR histogram's percentile
distribution and its requests per latency bucket (percentiles per second: toolbench.timings).

Pure functions over histograms; the report's sections draw them."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from hdrh.histogram import HdrHistogram

# As HdrHistogram's own percentile distribution (.hgrm) reports by default.
TICKS_PER_HALF_DISTANCE = 5
BUCKETS_PER_DECADE = 10


@dataclass(frozen=True)
class Level:
    """One step of the percentile distribution: `percentile` of the requests took at most `value_ms`."""

    percentile: float  # 0..100
    value_ms: float
    count: int  # requests up to this value

    @property
    def inverse_tail(self) -> float:
        """1/(1-p): the x of the HDR plot (1 at 0 %, 10 at 90 %, 100 at 99 %)."""
        return 1.0 / (1.0 - self.percentile / 100.0)


def distribution(hist: HdrHistogram) -> tuple[list[Level], float]:
    """The levels of HdrHistogram's percentile distribution below 100 %, and the maximum
    (the 100 % level, which 1/(1-p) cannot place), in ms: the library's own percentile
    iteration (its .hgrm output), walked over the recorded buckets only, as the library's
    pure-Python iterator over every bucket costs seconds on a large run. Each level's value
    is the highest value equivalent to its bucket, as the library reports it."""
    indices, counts = _nonzero(hist)
    total = int(counts.sum())
    levels: list[Level] = []
    level, cumulative = 0.0, 0
    for position, (index, count) in enumerate(zip(indices.tolist(), counts.tolist())):
        cumulative += count
        value_ms = hist.get_highest_equivalent_value(hist.get_value_from_index(index)) / 1000.0
        last = position == len(indices) - 1
        while 100.0 * cumulative / total >= level:
            levels.append(Level(level, value_ms, cumulative))
            level = _next_level(level)
            if last:  # the library steps once at the last bucket, then to 100 %
                break
    return [lv for lv in levels if lv.percentile < 100.0], hist.get_max_value() / 1000.0


def _next_level(level: float) -> float:
    """hdrh's PercentileIterator.increment_iteration_level, to the same floating-point steps."""
    gap = 100.0 - level
    if not gap:
        return level
    half_distance = math.pow(2, (math.log(100 / gap) / math.log(2)) + 1)
    return level + 100.0 / (TICKS_PER_HALF_DISTANCE * half_distance)


def _nonzero(hist: HdrHistogram) -> tuple[np.ndarray, np.ndarray]:
    """The histogram's buckets that hold a value: their indices and counts."""
    counts = np.ctypeslib.as_array(hist.counts)[: hist.counts_len]
    indices = np.flatnonzero(counts)
    return indices, counts[indices].astype(np.int64)


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
    indices, counts = _nonzero(hist)
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
