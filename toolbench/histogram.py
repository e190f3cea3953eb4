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
import functools
import math
import operator
import struct
import zlib
from typing import Iterable

import numpy as np
from hdrh.histogram import HdrHistogram

from toolbench.errors import SchemaError
from toolbench.numbers import MAX_VALUE
from toolbench.schema import PERCENTILES, Percentiles

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
    counts = np.ctypeslib.as_array(hist.counts)
    if hist.get_total_count() > MAX_COUNT or (len(counts) and int(counts.max()) > MAX_COUNT):
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


def percentiles_ms(hist: HdrHistogram) -> Percentiles:
    if hist.get_total_count() == 0:
        return Percentiles()
    values = {name: hist.get_value_at_percentile(p) / 1000.0 for name, p in PERCENTILES}
    return Percentiles(**values)
