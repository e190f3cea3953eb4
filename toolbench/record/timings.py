"""Per-request times by the second each request started in, for percentiles over time.

A tool that gives per-request timings with their second (ab -g, JMeter's JTL) hands them
to its adapter's `timings`, which fills a SecondTally; the report draws its percentiles."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolbench.record.histogram import MAX_SERIES_S, MAX_TALLY_MS
from toolbench.record.numbers import MAX_VALUE

OVER_TIME = (50.0, 90.0, 99.0)


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
        low, high = int(seconds.min()), int(seconds.max())
        if self._first is not None:
            low, high = min(low, self._first), max(high, self._first + int(self._keys[-1]) // self._stride)
            self._keys += (self._first - low) * self._stride  # re-based on the earliest second
        if high - low > MAX_SERIES_S:
            raise ValueError(f"the seconds span more than {MAX_SERIES_S} s: not the seconds of one run")
        self._first = low
        keys = (seconds - low) * self._stride + np.minimum(times_ms, MAX_TALLY_MS)
        self._keys, self._counts = _summed(np.concatenate([self._keys, keys]),
                                           np.concatenate([self._counts, np.ones(len(keys), np.int64)]))

    @property
    def requests(self) -> int:
        return int(self._counts.sum())

    def percentiles(self) -> list[SecondPercentiles]:
        """OVER_TIME's percentiles of each second with a request, by HdrHistogram's rank
        (the value below which round(p x n) of the second's n requests fall, at least one)."""
        out = []
        seconds = self._keys // self._stride  # sorted, as the keys are
        starts = np.flatnonzero(np.diff(seconds, prepend=-1))
        for start, end in zip(starts, np.append(starts[1:], len(seconds))):
            values, cumulative = self._keys[start:end] % self._stride, np.cumsum(self._counts[start:end])
            total = int(cumulative[-1])
            ranks = [max(1, int(q * total / 100.0 + 0.5)) for q in OVER_TIME]
            at = np.searchsorted(cumulative, ranks)
            out.append(SecondPercentiles(int(seconds[start]), total, tuple(float(values[i]) for i in at)))
        return out


def _summed(keys: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    unique, where = np.unique(keys, return_inverse=True)
    return unique, np.bincount(where, weights=counts, minlength=len(unique)).astype(np.int64)
