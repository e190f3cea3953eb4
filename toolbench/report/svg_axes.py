"""Scales and ticks for the report's SVG charts: where a value lands, which values get a tick.

Linear axes get "nice" steps (1, 2, 2.5, 5 × 10^k); log axes get 1-2-5 ticks, thinned to one per
decade (or fewer) when the range is wide. Labels are plain numbers, never powers of ten."""
from __future__ import annotations

import math
from dataclasses import dataclass

_STEPS = (1.0, 2.0, 2.5, 5.0, 10.0)
_LOG_SUBS = (1.0, 2.0, 5.0)


@dataclass(frozen=True)
class Scale:
    """Maps data values on [lo, hi] to pixels on [start, end] (end < start for a y axis)."""
    lo: float
    hi: float
    log: bool = False
    start: float = 0.0
    end: float = 1.0

    def at(self, value: float) -> float:
        if self.log:
            a, b, v = math.log10(self.lo), math.log10(self.hi), math.log10(value)
        else:
            a, b, v = self.lo, self.hi, value
        return self.start + (v - a) / (b - a) * (self.end - self.start)

    def shows(self, value: float) -> bool:
        """Whether a value can be drawn: finite, and above zero on a log axis."""
        return math.isfinite(value) and (value > 0 or not self.log)

    def holds(self, value: float) -> bool:
        """Whether a tick at `value` lies on the axis (rounding aside)."""
        slack = 1e-9 * (abs(self.lo) + abs(self.hi))
        return self.lo - slack <= value <= self.hi + slack


def wants_log(values: list[float], ratio: float = 30.0) -> bool:
    """A log axis when values span a wide range, and only when none is zero or below."""
    return bool(values) and min(values) > 0 and max(values) / min(values) >= ratio


def linear_label(v: float) -> str:
    return f"{v:,.10g}"


def log_label(v: float) -> str:
    return f"{v:g}"


def nice_step(span: float, count: float, integer: bool = False) -> float:
    """The smallest nice step that cuts `span` into at most about `count` parts."""
    raw = span / max(count, 1.0)
    if raw <= 0 or not math.isfinite(raw):
        return 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(s * power for s in _STEPS if s * power >= raw * 0.999999)
    if integer and step != round(step):  # 0.5 or 2.5 steps would put ticks between whole numbers
        step = 1.0 if step < 1 else next(s * power for s in (5.0, 10.0) if s * power >= step)
    return step


def linear_ticks(lo: float, hi: float, step: float) -> list[float]:
    first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    # round(): k * 0.1 is 0.30000000000000004, which would print as such.
    return [round(k * step, 12) + 0.0 for k in range(first, last + 1)]


def log_ticks(lo: float, hi: float, most: int = 9) -> list[float]:
    """1-2-5 values within [lo, hi]; only the powers of ten (every n-th) when there would be too many."""
    first, last = math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1
    for subs, stride in ((_LOG_SUBS, 1), ((1.0,), 1), ((1.0,), 2), ((1.0,), 3), ((1.0,), 5), ((1.0,), 10)):
        found = [_pow(e) * s for e in range(first, last + 1) if e % stride == 0 for s in subs]
        found = [v for v in found if lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)]
        if len(found) <= most:
            return found
    return found


def _pow(e: int) -> float:
    # float("1e-3") is exact where 10.0 ** -3 is 0.0010000000000000002, which prints as such.
    return float(f"1e{e}")


def _below_125(v: float) -> float:
    e = math.floor(math.log10(v))
    return max((_pow(e) * s for s in _LOG_SUBS if _pow(e) * s <= v * (1 + 1e-9)), default=_pow(e - 1) * 5)


def _above_125(v: float) -> float:
    e = math.floor(math.log10(v))
    return min((_pow(e) * s for s in (*_LOG_SUBS, 10.0) if _pow(e) * s >= v * (1 - 1e-9)))


def data_range(values: list[float], log: bool) -> tuple[float, float] | None:
    shown = [v for v in values if math.isfinite(v) and (v > 0 or not log)]
    return (min(shown), max(shown)) if shown else None


@dataclass(frozen=True)
class AxisPlan:
    """One axis, before it is placed on the page: its range and its labelled ticks."""
    lo: float
    hi: float
    log: bool
    ticks: tuple[tuple[float, str], ...]

    def scale(self, start: float, end: float) -> Scale:
        return Scale(self.lo, self.hi, self.log, start, end)


def auto_axis(values: list[float], log: bool, *, from_zero: bool = False, integer: bool = False,
              count: float = 6.0, pad: float = 0.05, most_log: int = 9) -> AxisPlan:
    """A range a little wider than the values, with nice ticks inside it."""
    found = data_range(values, log)
    if log:
        lo, hi = found or (1.0, 10.0)
        lo, hi = _padded_log(lo, hi, pad)
        ticks = log_ticks(lo, hi, most_log)
        if len(ticks) < 2:  # a narrow range: widen it to the 1-2-5 values around it
            lo, hi = _below_125(lo), _above_125(hi)
            ticks = log_ticks(lo, hi, most_log)
        return AxisPlan(lo, hi, True, tuple((t, log_label(t)) for t in ticks))
    lo, hi = found or (0.0, 1.0)
    if from_zero:
        lo, hi = min(0.0, lo), max(0.0, hi)
    if lo == hi:
        delta = 1.0 if lo == 0 or integer else abs(lo) * 0.1
        lo, hi = (lo, hi + delta) if from_zero and lo == 0 else (lo - delta, hi + delta)
    span = hi - lo
    lo, hi = (lo if from_zero and lo == 0 else lo - span * pad), hi + span * pad
    step = nice_step(hi - lo, count, integer)
    return AxisPlan(lo, hi, False, tuple((t, linear_label(t)) for t in linear_ticks(lo, hi, step)))


def fixed_axis(values: list[float], ticks: list[tuple[float, str]], log: bool, pad: float = 0.05) -> AxisPlan:
    """Ticks given with their labels: the range holds the values and every tick."""
    kept = [(at, label) for at, label in ticks if math.isfinite(at) and (at > 0 or not log)]
    lo, hi = data_range(values + [at for at, _ in kept], log) or ((1.0, 10.0) if log else (0.0, 1.0))
    if log:
        lo, hi = _padded_log(lo, hi, pad)
    else:
        span = (hi - lo) or 1.0
        lo, hi = lo - span * pad, hi + span * pad
    return AxisPlan(lo, hi, log, tuple(kept))


def centred_axis(x: float, log: bool, ticks: list[tuple[float, str]] | None, integer: bool) -> AxisPlan:
    """One value in the middle, rather than a zoom into a sliver around it."""
    lo, hi = (x / 2, x * 2) if log and x > 0 else (x - 1, x + 1)
    if ticks is not None:
        return AxisPlan(lo, hi, log and x > 0, tuple(ticks))
    if log and x > 0:
        return AxisPlan(lo, hi, True, tuple((t, log_label(t)) for t in log_ticks(lo, hi)))
    step = nice_step(hi - lo, 4, integer)
    return AxisPlan(lo, hi, False, tuple((t, linear_label(t)) for t in linear_ticks(lo, hi, step)))


def _padded_log(lo: float, hi: float, pad: float) -> tuple[float, float]:
    a, b = math.log10(lo), math.log10(hi)
    span = (b - a) or 1.0
    return 10.0 ** (a - span * pad), 10.0 ** (b + span * pad)
