"""The numbers behind the latency views: an HDR histogram's percentile distribution, its
requests per latency bucket, and percentiles per second from per-request timings.

Pure functions over histograms and arrays; the report's sections draw them."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable

import numpy as np
from hdrh.histogram import HdrHistogram

from toolbench.histogram import MAX_SERIES_S, MAX_TALLY_MS
from toolbench.numbers import MAX_VALUE

# As HdrHistogram's own percentile distribution (.hgrm) reports by default.
TICKS_PER_HALF_DISTANCE = 5
BUCKETS_PER_DECADE = 10
OVER_TIME = (50.0, 90.0, 99.0)


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
    (the 100 % level, which 1/(1-p) cannot place), in ms. The values are the library's own:
    the highest value equivalent to each level's bucket, as its .hgrm output prints them."""
    levels = [Level(step.percentile_level_iterated_to, step.value_iterated_to / 1000.0, step.total_count_to_this_value)
              for step in hist.get_percentile_iterator(TICKS_PER_HALF_DISTANCE)]
    below = [level for level in levels if level.percentile < 100.0]
    return below, hist.get_max_value() / 1000.0


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
    pairs = [(hist.get_lowest_equivalent_value(step.value_iterated_to), step.count_at_value_iterated_to)
             for step in hist.get_recorded_iterator()]
    values = np.array([v for v, _ in pairs], np.float64) / 1000.0
    return values, np.array([n for _, n in pairs], np.int64)


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


@dataclass(frozen=True)
class SecondPercentiles:
    second: int  # from the first second with a request
    requests: int
    values_ms: tuple[float, ...]  # at OVER_TIME's percentiles


class SecondTally:
    """Per-request times (whole ms) by the second they started in, kept as a sparse count of
    (second, ms) pairs: memory grows with the distinct pairs, not the requests."""

    def __init__(self) -> None:
        self._keys = np.zeros(0, np.int64)
        self._counts = np.zeros(0, np.int64)
        self._first: int | None = None
        self._stride = MAX_TALLY_MS + 1

    def add(self, seconds: np.ndarray, times_ms: np.ndarray) -> None:
        """One request per element; a negative or out-of-range value is a ValueError."""
        if not len(seconds):
            return
        seconds, times_ms = np.asarray(seconds, np.int64), np.asarray(times_ms, np.int64)
        if len(seconds) != len(times_ms):
            raise ValueError("seconds and times differ in length")
        for values in (seconds, times_ms):
            if int(values.min()) < 0 or int(values.max()) > MAX_VALUE:
                raise ValueError(f"a second or time out of range: {int(values.min())}..{int(values.max())}")
        low = int(seconds.min()) if self._first is None else min(self._first, int(seconds.min()))
        if self._first is not None and low < self._first:  # re-base what is there
            self._keys += (self._first - low) * self._stride
        self._first = low
        if int(seconds.max()) - low > MAX_SERIES_S:
            raise ValueError(f"the seconds span more than {MAX_SERIES_S} s: not the seconds of one run")
        keys = (seconds - low) * self._stride + np.minimum(times_ms, MAX_TALLY_MS)
        self._keys, self._counts = _summed(np.concatenate([self._keys, keys]),
                                           np.concatenate([self._counts, np.ones(len(keys), np.int64)]))

    def percentiles(self) -> list[SecondPercentiles]:
        """OVER_TIME's percentiles of each second with a request, by HdrHistogram's rank
        (the value below which round(p x n) of the second's n requests fall, at least one)."""
        out = []
        seconds = self._keys // self._stride
        for second in np.unique(seconds):
            mine = seconds == second
            values, counts = self._keys[mine] % self._stride, self._counts[mine]
            cumulative = np.cumsum(counts)
            total = int(cumulative[-1])
            ranks = [max(1, int(q * total / 100.0 + 0.5)) for q in OVER_TIME]
            at = np.searchsorted(cumulative, ranks)
            out.append(SecondPercentiles(int(second), total, tuple(float(values[i]) for i in at)))
        return out


def _summed(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    unique, where = np.unique(keys, return_inverse=True)
    return unique, np.bincount(where, weights=counts, minlength=len(unique)).astype(np.int64)


def tally(batches: Iterable[tuple[np.ndarray, np.ndarray]]) -> SecondTally:
    found = SecondTally()
    for seconds, times in batches:
        found.add(seconds, times)
    return found
