"""HDR histograms of per-request latency, stored in results as base64 strings.

Values are recorded in microseconds from 1 µs to 1 hour with 3 significant
digits, so histograms from any tool, worker or repetition merge exactly.

The HDR library trusts its caller: a negative count, or one of 2^63 or more, is
stored as it is and crashes the whole process (`free(): invalid pointer`) when the
histogram is encoded; a crafted encoding can ask for any size of counts array or
of decompressed payload. So this module refuses such values and encodings itself,
and no parser, however wrong its input, can reach the library with them."""
from __future__ import annotations

import base64
import binascii
import bisect
import functools
import itertools
import math
import operator
import struct
import zlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from hdrh.histogram import HdrHistogram

from toolbench.errors import SchemaError
from toolbench.record.numbers import MAX_VALUE, Numbers, problem
from toolbench.record.schema import PERCENTILES, Percentiles, SecondSample

if TYPE_CHECKING:
    import numpy as np

# numpy is imported where it is used, not here: the engine imports this module for its
# histograms and needs none of numpy, whose import is 0.1 s of CPU in every engine run
# (which its CPU per request counts).

LOWEST_US = 1
HIGHEST_US = 3_600_000_000
SIGNIFICANT_DIGITS = 3
MAX_COUNT = MAX_VALUE  # per histogram; far below the 2^63 at which the library breaks
# A value read back (a percentile) is the highest of its bucket: at 3 significant digits
# a bucket spans at most 1/1024 of its values, so it reads up to that much high.
RELATIVE_STEP = 2.0 ** -10
_EXTERNAL_HEADER = struct.Struct(">II")  # cookie, length of the compressed payload
_PAYLOAD_HEADER = struct.Struct(">IIIIQQd")  # cookie, length, offset, digits, lowest, highest, ratio
_VARINT_BYTES = 9  # the most a count takes in the encoding (LEB128 with ZigZag)


def new() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def record_ms(hist: HdrHistogram, value_ms: float, count: int = 1) -> None:
    """Record a latency; values below 1 µs are clamped to it (HDR cannot hold 0), values
    above an hour to an hour. A count that is not a whole number from 0 to MAX_COUNT in
    all, or a value that is not finite, is a ValueError: parsers check their input before."""
    count = operator.index(count)
    if count < 0 or hist.get_total_count() + count > MAX_COUNT:
        raise ValueError(f"a histogram count must be from 0 to {MAX_COUNT} in all, not {count}")
    if not math.isfinite(value_ms):
        raise ValueError(f"a latency must be a finite number, not {value_ms!r}")
    value_us = max(LOWEST_US, min(HIGHEST_US, round(value_ms * 1000.0)))
    hist.record_value(value_us, count)


def from_ms(values_ms: Iterable[float]) -> HdrHistogram:
    hist = new()
    for value in values_ms:
        record_ms(hist, value)
    return hist


def encode(hist: HdrHistogram) -> str:
    return hist.encode().decode("ascii")


def decode(text: str) -> HdrHistogram:
    """A histogram of toolbench's settings from its encoding. Anything else (another
    range or precision, a payload larger than such a histogram can be, counts beyond
    MAX_COUNT) is a SchemaError, found before the library allocates or trusts anything."""
    _check_encoding(text)
    try:
        hist = HdrHistogram.decode(text.encode("ascii"))
    except Exception as exc:  # the library raises bare exceptions on bad input
        raise SchemaError(f"not an HDR histogram: {exc}") from None
    if hist.get_total_count() > MAX_COUNT or max(hist.counts[: hist.counts_len], default=0) > MAX_COUNT:
        raise SchemaError(f"not an HDR histogram of toolbench: counts beyond {MAX_COUNT}")
    return hist


def _check_encoding(text: str) -> None:
    try:
        blob = base64.b64decode(text.encode("ascii"), validate=True)
    except (AttributeError, UnicodeEncodeError, binascii.Error, ValueError):
        raise SchemaError("not an HDR histogram: not base64 text") from None
    if len(blob) < _EXTERNAL_HEADER.size:
        raise SchemaError("not an HDR histogram: too short")
    unpacker = zlib.decompressobj()
    try:
        payload = unpacker.decompress(blob[_EXTERNAL_HEADER.size:], _max_payload_bytes())
    except zlib.error as exc:
        raise SchemaError(f"not an HDR histogram: {exc}") from None
    if unpacker.unconsumed_tail:
        raise SchemaError("not an HDR histogram of toolbench: its payload is larger than such a histogram")
    if len(payload) < _PAYLOAD_HEADER.size:
        raise SchemaError("not an HDR histogram: the payload is too short")
    _, _, _, digits, lowest, highest, _ = _PAYLOAD_HEADER.unpack_from(payload)
    if (digits, lowest, highest) != (SIGNIFICANT_DIGITS, LOWEST_US, HIGHEST_US):
        raise SchemaError(f"not an HDR histogram of toolbench: {lowest}..{highest} µs at {digits} digits, "
                          f"not {LOWEST_US}..{HIGHEST_US} at {SIGNIFICANT_DIGITS}")


@functools.lru_cache(maxsize=1)
def _max_payload_bytes() -> int:
    return _PAYLOAD_HEADER.size + new().counts_len * _VARINT_BYTES


def merge(encoded: Iterable[str]) -> HdrHistogram:
    total = new()
    for text in encoded:
        part = decode(text)
        if total.get_total_count() + part.get_total_count() > MAX_COUNT:
            raise SchemaError(f"the merged histograms hold more than {MAX_COUNT} values")
        total.add(part)
    return total


def percentiles_ms(hist: HdrHistogram, low_ms: float | None = None, high_ms: float | None = None) -> Percentiles:
    """The percentiles of `hist`. Each is read as the top of its bucket, up to RELATIVE_STEP
    above the value recorded: given the exact extremes, they are kept within them."""
    if hist.get_total_count() == 0:
        return Percentiles()
    found = values_at(hist, [p for _, p in PERCENTILES])
    values = {name: value / 1000.0 for (name, _), value in zip(PERCENTILES, found)}
    if high_ms is not None:
        values = {name: min(value, high_ms) for name, value in values.items()}
    if low_ms is not None:
        values = {name: max(value, low_ms) for name, value in values.items()}
    return Percentiles(**values)


def values_at(hist: HdrHistogram, percentiles: Sequence[float]) -> list[int]:
    """hist.get_value_at_percentile(p) for each p, the same values: the library walks the
    counts from the start for each percentile (a tenth of a second for a run's nine), this
    sums them once and bisects."""
    limit = min(hist.counts_len, hist.encoder.payload.counts_len)  # beyond the payload the library reads 0
    counts = hist.counts[:limit]
    if min(counts, default=0) < 0:  # sums that go down: only the library's own walk gives its answer
        return [hist.get_value_at_percentile(p) for p in percentiles]
    cumulative = list(itertools.accumulate(counts))
    values = []
    for p in percentiles:
        index = bisect.bisect_left(cumulative, hist.get_target_count_at_percentile(p))
        if index == len(cumulative):
            values.append(0)
            continue
        value = hist.get_value_from_index(index)
        values.append(hist.get_highest_equivalent_value(value) if p else hist.get_lowest_equivalent_value(value))
    return values


# ---- the per-request aggregator ----

MAX_SERIES_S = 1_000_000  # 11.6 days of per-second samples; beyond that, broken timestamps
MAX_TALLY_MS = HIGHEST_US // 1000  # a longer time is tallied at the histogram's ceiling


class PerRequest:
    """Per-request times of one run, summed in one pass: an exact tally of whole
    milliseconds (an HDR histogram at the end) and the per-second series. Every tool that
    hands toolbench per-request data (ab -g, Locust's buckets and per-second counts,
    JMeter's JTL, the engine's workers) goes through here.

    Per-second sums are in `unit_ms` (1: whole ms; the engine's 0.001: µs). A value that
    is negative, not a whole number, or beyond numbers.MAX_VALUE is a ParseError naming
    `tool` and `source`; so are seconds spanning more than MAX_SERIES_S. Everything is
    summed in integers: the figures do not depend on how the data was cut into parts."""

    def __init__(self, tool: str, source: str | None = None, unit_ms: float = 1.0,
                 seconds_field: str = "seconds") -> None:
        import numpy as np

        self.num = Numbers(tool, source)
        self.seconds_field = seconds_field  # how the tool's output names its seconds, for errors
        self.unit_ms = unit_ms
        self.tally = np.zeros(0, np.int64)  # index: whole ms, value: requests
        self.parts: list[HdrHistogram] = []  # histograms handed over as they are (the engine's µs)
        self.has_errors = False
        self.sec_base = 0  # the second of index 0 of the per-second arrays
        # requests, errors, timed requests, their time sum and max (in unit_ms)
        self.sec = np.zeros((5, 0), np.int64)

    # ---- adding ----

    def add(self, seconds: np.ndarray, times: np.ndarray, failed: np.ndarray | None = None) -> None:
        """One request per element: its second, its time in whole unit_ms, whether it failed."""
        import numpy as np

        if not len(seconds):
            return
        seconds, times = self._checked(seconds, "second"), self._checked(times, "time")
        if self.unit_ms == 1.0:
            self._tally(np.bincount(np.minimum(times, MAX_TALLY_MS)))
        idx = self._index(int(seconds.min()), int(seconds.max()), seconds)
        size = self.sec.shape[1]
        requests = np.bincount(idx, minlength=size)
        self.sec[0] += requests
        if failed is not None:
            self.has_errors = True
            self.sec[1] += np.bincount(idx[failed], minlength=size)
        self.sec[2] += requests
        self.sec[3] += np.bincount(idx, weights=times, minlength=size).astype(np.int64)
        np.maximum.at(self.sec[4], idx, times)

    def add_tally(self, counts: Mapping[int, int]) -> None:
        """Requests by whole ms, without their seconds (Locust's response time buckets)."""
        import numpy as np

        if not counts:
            return
        ms = self._checked(np.fromiter(counts.keys(), np.int64, len(counts)), "time")
        n = self._checked(np.fromiter(counts.values(), np.int64, len(counts)), "count")
        self._tally(np.bincount(np.minimum(ms, MAX_TALLY_MS), weights=n).astype(np.int64))

    def add_histogram(self, hist: HdrHistogram) -> None:
        self.parts.append(hist)

    def add_seconds(self, seconds: Sequence[int], requests: Sequence[int], errors: Sequence[int] | None = None,
                    timed: Sequence[int] | None = None, time_sum: Sequence[int] | None = None,
                    time_max: Sequence[int | None] | None = None) -> None:
        """Requests already summed by second (Locust's per-second counts, the engine's
        workers): `timed` of them with a time, summing to `time_sum` (unit_ms)."""
        import numpy as np

        if not len(seconds):
            return
        secs = self._checked(np.asarray(seconds, np.int64), "second")
        idx = self._index(int(secs.min()), int(secs.max()), secs)
        columns = (requests, errors, timed, time_sum)
        for row, values in enumerate(columns):
            if values is not None:
                np.add.at(self.sec[row], idx, self._checked(np.asarray(values, np.int64), "count"))
        self.has_errors |= errors is not None
        if time_max is not None:
            top = self._checked(np.asarray([-1 if v is None else v for v in time_max], np.int64).clip(0), "time")
            np.maximum.at(self.sec[4], idx, top)

    def merge(self, other: "PerRequest", series: bool = True) -> None:
        """Adds the sums of another part of the same run; with series=False, of another run
        (days apart, say): the tally only, and no per-second series is kept."""
        import numpy as np

        self._tally(other.tally)
        self.parts.extend(other.parts)
        self.has_errors |= other.has_errors
        if not series:
            self.sec, self.sec_base = np.zeros((5, 0), np.int64), 0
        elif other.sec.shape[1]:
            lo, hi = other.sec_base, other.sec_base + other.sec.shape[1] - 1
            at = self._index(lo, hi, None)
            window = slice(at, at + other.sec.shape[1])
            self.sec[:4, window] += other.sec[:4]
            np.maximum(self.sec[4, window], other.sec[4], out=self.sec[4, window])

    def _checked(self, values: np.ndarray, what: str) -> np.ndarray:
        if len(values) and (int(values.min()) < 0 or int(values.max()) > MAX_VALUE):
            bad = int(values.min()) if int(values.min()) < 0 else int(values.max())
            raise self.num.error(what, problem(bad) or f"{bad} is out of range")
        return values

    def _tally(self, tally: np.ndarray) -> None:
        if len(tally) > len(self.tally):
            tally = tally.copy()
            tally[: len(self.tally)] += self.tally
            self.tally = tally
        else:
            self.tally[: len(tally)] += tally
        if int(self.tally.sum()) > MAX_COUNT:
            raise self.num.error("histogram", f"more than {MAX_COUNT} requests")

    def _index(self, lo: int, hi: int, seconds: np.ndarray | None) -> Any:
        """Grows the per-second arrays to hold seconds lo..hi; the index of `seconds` (of lo without)."""
        import numpy as np

        size = self.sec.shape[1]
        first = lo if size == 0 else min(lo, self.sec_base)
        last = hi if size == 0 else max(hi, self.sec_base + size - 1)
        if last - first > MAX_SERIES_S:
            raise self.num.error(self.seconds_field, f"they span more than {MAX_SERIES_S} s: not the seconds of one run")
        if size == 0:
            self.sec_base = first
        self.sec = np.pad(self.sec, ((0, 0), (self.sec_base - first, last - first + 1 - size - (self.sec_base - first))))
        self.sec_base = first
        return lo - first if seconds is None else seconds - first

    # ---- the figures ----

    @property
    def count(self) -> int:
        return int(self.tally.sum()) + sum(h.get_total_count() for h in self.parts)

    def stats_ms(self) -> dict[str, float] | None:
        """Exact min, max, mean and (population) stdev of the tallied times, in ms."""
        import numpy as np

        total = int(self.tally.sum())
        if total == 0:
            return None
        values = np.flatnonzero(self.tally)
        counts = self.tally[values]
        mean = float(np.dot(values, counts)) / total
        var = float(np.dot((values - mean) ** 2, counts)) / total
        return {"min_ms": float(values[0]), "max_ms": float(values[-1]), "mean_ms": mean, "stdev_ms": var ** 0.5}

    def histogram(self) -> HdrHistogram | None:
        """The tally and the histograms added, in one HDR histogram; None without a value."""
        import numpy as np

        if self.count > MAX_COUNT:
            raise self.num.error("histogram", f"more than {MAX_COUNT} requests")
        hist = new()
        for value in np.flatnonzero(self.tally):
            record_ms(hist, float(value), int(self.tally[value]))
        for part in self.parts:
            hist.add(part)
        return hist if hist.get_total_count() else None

    def encoded(self) -> str | None:
        hist = self.histogram()
        return encode(hist) if hist is not None else None

    def series(self, first: int | None = None) -> list[SecondSample]:
        """One sample per second from the first with a request to the last, numbered from
        `first` (default: the first second with a request is second 0)."""
        base = self.sec_base - (self.sec_base if first is None else first)
        requests, errors, timed, total, top = (row.tolist() for row in self.sec)
        return [SecondSample(second=base + i, requests=requests[i],
                             errors=errors[i] if self.has_errors else None,
                             latency_mean_ms=total[i] * self.unit_ms / timed[i] if timed[i] else None,
                             latency_max_ms=top[i] * self.unit_ms if timed[i] else None)
                for i in range(len(requests))]


# ---- the percentile distribution (HdrHistogram's .hgrm, the HDR plot) ----

TICKS_PER_HALF_DISTANCE = 5  # HdrHistogram's own default, as wrk2 prints it


@dataclass(frozen=True)
class Level:
    """One step of the percentile distribution: `percentile` of the values are at most `value_us`."""

    percentile: float  # 0..100
    value_us: int  # the highest value equivalent to the level's bucket, as the library reports it
    count: int  # values up to this one

    @property
    def value_ms(self) -> float:
        return self.value_us / 1000.0

    @property
    def inverse_tail(self) -> float:
        """1/(1-p): the x of the HDR plot (1 at 0 %, 10 at 90 %, 100 at 99 %); 100 % has none."""
        return 1.0 / (1.0 - self.percentile / 100.0)


def percentile_levels(hist: HdrHistogram, ticks: int = TICKS_PER_HALF_DISTANCE) -> list[Level]:
    """The library's percentile iteration (get_percentile_iterator, which its .hgrm output
    prints), 100 % included, walked over the recorded buckets only: the library's
    pure-Python iterator visits every bucket and costs seconds over a large run's cells."""
    indices, counts = nonzero(hist)
    total = int(counts.sum())
    levels: list[Level] = []
    level, cumulative = 0.0, 0
    for index, count in zip(indices.tolist(), counts.tolist()):
        cumulative += count
        value_us = hist.get_highest_equivalent_value(hist.get_value_from_index(index))
        while 100.0 * cumulative / total >= level:
            levels.append(Level(level, value_us, cumulative))
            level = _next_level(level, ticks)
            if cumulative == total:  # the library steps once at the last bucket, then to 100 %
                levels.append(Level(100.0, value_us, cumulative))
                break
    return levels


def _next_level(level: float, ticks: int) -> float:
    """hdrh's PercentileIterator.increment_iteration_level, to the same floating-point steps."""
    gap = 100.0 - level
    if not gap:
        return level
    half_distance = math.pow(2, (math.log(100 / gap) / math.log(2)) + 1)
    return level + 100.0 / (ticks * half_distance)


def nonzero(hist: HdrHistogram) -> tuple[np.ndarray, np.ndarray]:
    """The histogram's buckets that hold a value: their indices and counts."""
    import numpy as np

    counts = np.ctypeslib.as_array(hist.counts)[: hist.counts_len]
    indices = np.flatnonzero(counts)
    return indices, counts[indices].astype(np.int64)
