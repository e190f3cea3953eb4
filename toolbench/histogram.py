"""HDR histograms of per-request latency, stored in results as base64 strings.

Values are recorded in microseconds from 1 µs to 1 hour with 3 significant
digits, so histograms from any tool, worker or repetition merge exactly."""
from __future__ import annotations

from typing import Iterable

from hdrh.histogram import HdrHistogram

from toolbench.errors import SchemaError
from toolbench.schema import PERCENTILES, Percentiles

LOWEST_US = 1
HIGHEST_US = 3_600_000_000
SIGNIFICANT_DIGITS = 3


def new() -> HdrHistogram:
    return HdrHistogram(LOWEST_US, HIGHEST_US, SIGNIFICANT_DIGITS)


def record_ms(hist: HdrHistogram, value_ms: float, count: int = 1) -> None:
    """Record a latency; values below 1 µs are clamped to it (HDR cannot hold 0)."""
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
    try:
        return HdrHistogram.decode(text.encode("ascii"))
    except Exception as exc:  # the library raises bare exceptions on bad input
        raise SchemaError(f"not an HDR histogram: {exc}") from None


def merge(encoded: Iterable[str]) -> HdrHistogram:
    total = new()
    for text in encoded:
        total.add(decode(text))
    return total


def percentiles_ms(hist: HdrHistogram) -> Percentiles:
    if hist.get_total_count() == 0:
        return Percentiles()
    values = {name: hist.get_value_at_percentile(p) / 1000.0 for name, p in PERCENTILES}
    return Percentiles(**values)
