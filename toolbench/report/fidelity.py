"""How closely one cell ran its workload (issue 32), judged from what reached the target: its nginx
access log per method, path and second (RunResult.target_requests), against what was asked. The
rules, each stated where the report shows it (toolbench.report.fidelity_section):

- The mix: each request's share of the requests the target logged for the workload's paths, against
  the asked share (a sequence: equal; a mix: weight over the weights' sum). Within tolerance when the
  difference is at most the larger of MIX_TOLERANCE_PP and what the cell itself explains: the
  requests in flight at the stop (at most one per user: 100 x users / logged points) and, for a
  mix drawn at random, 3 standard errors of the draw (300 x sqrt(p(1-p)/logged) points).
- The counts: the tool's own count per request name against the target's per path, which may
  differ by what was in flight at the stop: at most one request per user (the concurrency).
- The pace (closed model with think time): the requests each user sent per second, the logged
  requests over the asked user-seconds (the users times the duration, or the area under the
  stages), against what the think time allows, 1 / (think mean + the tool's mean latency); within
  PACE_TOLERANCE_PCT either way.
- The stages: the per-second series against the asked users, scaled by the achieved rate per user,
  after the whole-second shift (at most MAX_SHIFT_S) that fits best (a tool takes a moment to
  start); a ramp up must rise (its second half above its first, or above the stage before when it
  lasts under 2 s), a ramp down fall, and a hold stay within HOLD_TOLERANCE_PCT of the asked level.
  A ramp down of RAMP_MEAN_MIN_S whole seconds or more must also have its mean, over the level the
  tool held in the stage before, within RAMP_TOLERANCE_PCT of the asked ratio (a half for a ramp to 0): a tool that holds its users to the end and then stops them all at once falls in the stage's
  last second, which the trend alone would take for a ramp down. (A ramp up is not held to its mean:
  a tool's start-up makes its first seconds partial, and the shift is whole seconds.)"""
from __future__ import annotations

import math
from dataclasses import dataclass

from toolbench.record.schema import LoadModel, RunResult
from toolbench.report.workload_source import asked_shares, logged_by_name, logged_per_second
from toolbench.scenario.workload import Stage, Workload

MIX_TOLERANCE_PP = 2.0
PACE_TOLERANCE_PCT = 20.0
HOLD_TOLERANCE_PCT = 25.0
RAMP_TOLERANCE_PCT = 35.0  # wider than a hold's: a ramp's first and last seconds are partly the next stage's
RAMP_MEAN_MIN_S = 3  # whole seconds a ramp down needs before its mean tells a ramp from a cliff
MAX_SHIFT_S = 3


@dataclass(frozen=True)
class NameFit:
    """One request name of one cell."""

    name: str
    asked_pct: float
    logged: int | None  # None: the log cannot tell it from another name with its method and path
    logged_pct: float | None
    tolerance_pp: float | None
    counted: int | None  # the tool's own count; None when it gives none per name
    failed_checks: int | None  # None: the tool gives none per name, or does not count them apart

    @property
    def diff_pp(self) -> float | None:
        return None if self.logged_pct is None else self.logged_pct - self.asked_pct

    @property
    def share_ok(self) -> bool | None:
        if self.diff_pp is None or self.tolerance_pp is None:
            return None
        return abs(self.diff_pp) <= self.tolerance_pp

    @property
    def count_diff(self) -> int | None:
        return None if self.counted is None or self.logged is None else self.counted - self.logged


@dataclass(frozen=True)
class Pace:
    achieved: float  # requests per user per second
    allowed: float  # 1 / (think mean + mean latency)

    @property
    def within(self) -> bool:
        return abs(self.achieved / self.allowed - 1.0) * 100.0 <= PACE_TOLERANCE_PCT


@dataclass(frozen=True)
class StageFit:
    number: int  # from 1
    kind: str  # "ramp up", "hold" or "ramp down"
    observed: float | None  # mean requests/s over its seconds; None: no whole second in it
    expected: float
    followed: bool | None  # None: too short to tell


@dataclass(frozen=True)
class Shape:
    series: list[int]  # logged requests to the workload's paths, per second from the cell's start
    expected: list[float]  # the asked users, scaled by the achieved rate per user, after the shift
    shift_s: int
    stages: tuple[StageFit, ...]


@dataclass(frozen=True)
class CellFit:
    result: RunResult
    names: tuple[NameFit, ...]
    logged: int  # requests to the workload's paths (the probe's left out)
    users: int | None
    pace: Pace | None
    shape: Shape | None

    @property
    def mix_ok(self) -> bool | None:
        judged = [n.share_ok for n in self.names if n.share_ok is not None]
        return all(judged) if judged else None

    @property
    def counts_ok(self) -> bool | None:
        diffs = [n.count_diff for n in self.names if n.count_diff is not None]
        if not diffs or self.users is None:
            return None
        return all(abs(d) <= self.users for d in diffs)


def cell_fit(workload: Workload, r: RunResult) -> CellFit | None:
    """None when the target's log was not read for the cell."""
    logged = r.target_requests
    if logged is None:
        return None
    per_name = logged_by_name(workload, logged)
    total = sum(n for n in per_name.values() if n is not None)
    users = r.identity.concurrency
    tools = {f.name: f for f in r.measurement.by_request}
    names = []
    for name, asked in asked_shares(workload).items():
        n = per_name.get(name)
        own = tools.get(name)
        names.append(NameFit(name, asked, n, 100.0 * n / total if n is not None and total else None,
                             _tolerance(workload, asked, total, users) if total else None,
                             own.counts.requests_total if own else None,
                             own.counts.failures.check if own else None))
    user_s = user_seconds(workload, r)
    return CellFit(r, tuple(names), total, users, _pace(workload, r, total, user_s),
                   _shape(workload, logged_per_second(workload, logged), total, user_s))


def _tolerance(workload: Workload, asked_pct: float, total: int, users: int | None) -> float:
    in_flight = 100.0 * (users or 0) / total
    p = asked_pct / 100.0
    drawn = 300.0 * math.sqrt(p * (1.0 - p) / total) if workload.order == "mix" else 0.0
    return max(MIX_TOLERANCE_PP, in_flight + drawn)


def user_seconds(workload: Workload, r: RunResult) -> float | None:
    """The user-seconds asked: the area under the stages' users, else the users times the duration."""
    if r.identity.model is not LoadModel.CLOSED:
        return None
    if workload.stages:
        if workload.stages[0].users is None:
            return None
        return sum(s.duration_s * (a + b) / 2.0 for s, a, b in _segments(workload.stages))
    duration = r.measurement.timing.duration_s
    return r.identity.concurrency * duration if r.identity.concurrency and duration else None


def _segments(stages: tuple[Stage, ...]) -> list[tuple[Stage, float, float]]:
    """Each stage with the users it starts and ends at (the first from 0)."""
    out, level = [], 0.0
    for stage in stages:
        end = float(stage.users if stage.users is not None else stage.rate_rps or 0.0)
        out.append((stage, level, end))
        level = end
    return out


def _pace(workload: Workload, r: RunResult, total: int, user_s: float | None) -> Pace | None:
    latency_ms = r.measurement.latency.mean_ms
    if workload.think is None or not user_s or not total or latency_ms is None:
        return None
    think_s = (workload.think.min_s + workload.think.max_s) / 2.0
    return Pace(total / user_s, 1.0 / (think_s + latency_ms / 1000.0))


def asked_level(stages: tuple[Stage, ...], t: float) -> float:
    """The asked users (or rate) at `t` seconds into the stages; 0 outside them."""
    start = 0.0
    for stage, a, b in _segments(stages):
        if start <= t < start + stage.duration_s:
            return a + (b - a) * (t - start) / stage.duration_s
        start += stage.duration_s
    return 0.0


def _asked_second(stages: tuple[Stage, ...], second: float) -> float:
    """The asked level's mean over one second (ten midpoints: exact enough for a chart and a verdict)."""
    return sum(asked_level(stages, second + (i + 0.5) / 10.0) for i in range(10)) / 10.0


def _shape(workload: Workload, series: list[int], total: int, user_s: float | None) -> Shape | None:
    if not workload.stages or not series or not total:
        return None
    level_s = user_s or sum(s.duration_s * (a + b) / 2.0 for s, a, b in _segments(workload.stages))
    per_unit = total / level_s if level_s else 0.0

    def expected(shift: int) -> list[float]:
        return [per_unit * _asked_second(workload.stages, t - shift) for t in range(len(series))]

    shift = min(range(min(MAX_SHIFT_S, len(series) - 1) + 1),
                key=lambda s: sum((y - e) ** 2 for y, e in zip(series, expected(s))))
    asked = expected(shift)
    return Shape(series, asked, shift, _stage_fits(workload.stages, series, shift, per_unit))


def _stage_fits(stages: tuple[Stage, ...], series: list[int], shift: int, per_unit: float) -> tuple[StageFit, ...]:
    fits, start, before = [], 0.0, 0.0
    for i, (stage, a, b) in enumerate(_segments(stages), 1):
        end = start + stage.duration_s
        seconds = [series[t] for t in range(len(series)) if start <= t - shift and t - shift + 1 <= end]
        kind = "ramp up" if b > a else ("ramp down" if b < a else "hold")
        expected = per_unit * (a + b) / 2.0
        observed = sum(seconds) / len(seconds) if seconds else None
        ratio = (a + b) / (2.0 * a) if a else None  # a ramp's asked mean over the level it starts from
        fits.append(StageFit(i, kind, observed, expected, _followed(kind, seconds, before, expected, ratio)))
        before = observed if observed is not None else before
        start += stage.duration_s
    return tuple(fits)


def _followed(kind: str, seconds: list[int], before: float, expected: float, ratio: float | None = None) -> bool | None:
    if not seconds:
        return None
    mean = sum(seconds) / len(seconds)
    if kind == "hold":
        return abs(mean - expected) <= HOLD_TOLERANCE_PCT / 100.0 * expected if expected else mean == 0
    # Against the level the tool itself held before (not the asked one scaled by its total, which a
    # tool that holds through the ramp inflates).
    if (kind == "ramp down" and len(seconds) >= RAMP_MEAN_MIN_S and ratio and before
            and abs(mean / before - ratio) > RAMP_TOLERANCE_PCT / 100.0 * ratio):
        return False
    if len(seconds) >= 2:
        half = len(seconds) // 2
        first, second = sum(seconds[:half]) / half, sum(seconds[-half:]) / half
    else:
        first, second = before, mean
    return second > first if kind == "ramp up" else second < first
