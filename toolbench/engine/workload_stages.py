"""A workload's load profile in stages, as times: each stage moves linearly from where the previous
one ended (the first from 0) to its own level over its duration. Closed model: how many users
should be running at a time; open model: when each arrival is due."""
from __future__ import annotations

import math

from toolbench.engine.workload import Stage


def users_at(stages: tuple[Stage, ...], t_s: float) -> int:
    """Users that should be running `t_s` seconds in: the profile's level, rounded down (a user
    starts when the ramp reaches it); past the last stage, its level holds."""
    start, level = 0.0, 0.0
    for stage in stages:
        end_level = float(stage.users or 0)
        if t_s < start + stage.duration_s:
            level = level + (end_level - level) * (t_s - start) / stage.duration_s
            return max(0, math.floor(level + 1e-9))
        start, level = start + stage.duration_s, end_level
    return int(level)


def arrival_s(n: int, stages: tuple[Stage, ...], rate_rps: float | None) -> float | None:
    """When arrival `n` (from 0) is due, in seconds from the start: when the arrivals due so far,
    the integral of the rate, reach n + 0.5. Without stages, at the constant `rate_rps`. None:
    never, the profile ends first."""
    due = n + 0.5
    if not stages:
        return due / rate_rps if rate_rps else None
    start, level = 0.0, 0.0
    for stage in stages:
        low, high, length = level, float(stage.rate_rps or 0.0), stage.duration_s
        area = (low + high) / 2 * length
        if due <= area:
            return start + _within(due, low, high, length)
        due -= area
        start, level = start + length, high
    return None


def _within(due: float, low: float, high: float, length: float) -> float:
    """The time into a stage whose rate goes from `low` to `high` over `length` at which `due`
    arrivals have been due: low·t + (high − low)·t² / (2·length) = due, solved for t."""
    slope = (high - low) / length
    if abs(slope) < 1e-12:
        return due / low
    root = math.sqrt(max(0.0, low * low + 2 * slope * due))
    # The smaller positive root; the two forms are the same number, this one stable as slope → 0.
    return min(length, 2 * due / (low + root)) if low + root > 0 else length
