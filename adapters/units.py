"""Times printed with a unit (`746.00us`, `1.80ms`), as wrk and h2load print them, read
through toolbench.record.numbers."""
from __future__ import annotations

import re

from toolbench.record.numbers import Numbers

_WITH_UNIT = re.compile(r"^\s*([0-9.+-]+(?:[eE][+-]?[0-9]+)?)([a-zA-Z]*)\s*$")  # linear: no backtracking
TIME_MS = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}


def time_ms(num: Numbers, text: str, what: str) -> float:
    """A time with its unit, in milliseconds."""
    value, unit = _split(num, text, what)
    if unit not in TIME_MS:
        raise num.error(what, f"unknown time unit {unit!r} in {text.strip()[:40]!r}")
    return value * TIME_MS[unit]


def _split(num: Numbers, text: str, what: str) -> tuple[float, str]:
    m = _WITH_UNIT.match(text)
    if m is None:
        raise num.error(what, f"expected a number with a unit, got {text[:40]!r}")
    return num.decimal(m.group(1), what), m.group(2)
