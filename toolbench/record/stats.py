"""Statistics over repetitions, the noise of a figure, and each tool's peak over the
concurrency sweep.

Pure functions over RunResults, for the report and for analysis. Throughput means
successful requests per second (`throughput`), everywhere. A cell repeated N times
(`repeat: N`, interleaved across tools by the plan) gets, for its throughput and each
latency figure: median, min, max, quartiles and IQR, and a 95% confidence interval.

Noise is what a comparison needs: half the range of a figure over the repetitions, as a
share of its median; with one repetition, half the range of the cell's whole seconds
(`whole_seconds`: a tool's first and last seconds are partial and are dropped). Two
figures differ only when they are further apart than the noise of both (`differs`);
otherwise they tie.

Why a t-interval of the mean: with the 3 to 10 repetitions a benchmark can afford, a
bootstrap interval is too coarse to mean much (with 3 values it can only span their
range), while the t-interval states its assumption (roughly normal run-to-run noise) and
widens honestly as N shrinks. The median is reported beside it, as the figure to quote,
since one disturbed repetition moves it least. Outliers are flagged, never dropped, with
hyperfine's rule: a modified z-score, 0.6745 x |x - median| / MAD, above 3.5
(Iglewicz and Hoaglin). The HDR histograms of the repetitions merge exactly.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from typing import Iterable

from toolbench.record import derive, histogram
from toolbench.record.schema import PERCENTILES, Fidelity, Percentiles, RunResult, SecondSample, Status

OUTLIER_Z = 3.5
_MAD_SCALE = 0.6745  # makes the MAD comparable to a standard deviation for normal data
# Two-sided 95% critical values of Student's t for 1..30 degrees of freedom.
_T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042)
_Z95 = 1.959964
LATENCY_FIGURES = ("mean_ms",) + tuple(name for name, _ in PERCENTILES)
# A cell that ran; unsupported and missing did not, and a disturbed one is left out of every statistic (its
# figures measured the machine's other work as much as the tool): the report shows it apart.
_RAN = (Status.OK, Status.FAILED, Status.TIMED_OUT, Status.PARTIAL)
# Where no noise could be measured (one repetition, no per-second data), a difference counts only
# beyond this much: said as such in the verdict ("noise not measured"), never shown as a noise.
UNMEASURED_FLOOR_PCT = 10.0
# The fewest repetitions whose spread is taken as a cell's noise between runs: the spread of two
# is too often narrow by luck (and the bundled comparisons run three or more).
MIN_REPETITIONS = 3
# Below this, a difference is a tie whatever the measured noise: half the range of two or
# three samples understates what the next run will show.
MIN_DIFFERENCE_PCT = 5.0


@dataclass(frozen=True)
class CellKey:
    """One cell of the matrix, whatever its repetition."""

    tool: str  # the tool, or the scenario's variant of it (`locust-2p`): each is its own series
    concurrency: int | None
    keepalive: bool | None
    rate_rps: float | None = None
    target_label: str | None = None
    params: tuple[tuple[str, str], ...] = ()  # any extra matrix parameter, sorted

    @property
    def label(self) -> str:
        conn = {True: "ka", False: "close", None: "-"}[self.keepalive]
        rate = f" rate{self.rate_rps:g}" if self.rate_rps is not None else ""
        return f"{self.tool} c{self.concurrency} {conn}{rate}"


@dataclass(frozen=True)
class Spread:
    """One figure over the repetitions that measured it."""

    n: int
    values: list[float]
    repetitions: list[int]  # the repetition number of each value
    median: float
    min: float
    max: float
    q1: float
    q3: float
    iqr: float
    mean: float
    stdev: float | None  # None below two values
    ci95_low: float | None  # t-interval of the mean; None below two values
    ci95_high: float | None
    outliers: list[int] = field(default_factory=list)  # repetition numbers flagged


@dataclass(frozen=True)
class Merged:
    """The repetitions' HDR histograms added together: exact, not an average of percentiles."""

    histogram: str  # base64, as in RunResult.histogram
    count: int
    repetitions: list[int]
    min_ms: float
    mean_ms: float
    max_ms: float
    percentiles: Percentiles


@dataclass(frozen=True)
class Estimate:
    """A figure with its noise: `noise_pct` is half the range of its samples as a share of
    the median, measured over `basis` ("2 repetitions", "3 whole seconds"); None when it could
    not be measured, and then a difference must pass UNMEASURED_FLOOR_PCT. `repetitions`: how
    many the value is the median of; fewer than MIN_REPETITIONS and the verdict says the noise
    between runs is not measured."""

    value: float
    noise_pct: float | None
    basis: str = ""
    repetitions: int = 1

    @property
    def noise_measured(self) -> bool:
        return self.noise_pct is not None and self.repetitions >= MIN_REPETITIONS

    @property
    def half_width(self) -> float:
        pct = self.noise_pct if self.noise_pct is not None else UNMEASURED_FLOOR_PCT
        return abs(self.value) * pct / 100.0


@dataclass(frozen=True)
class CellStats:
    key: CellKey
    runs: int  # repetitions that ran (ok, failed or timed out)
    ok: int
    throughput_rps: Spread | None  # successful requests/s over the ok repetitions
    latency_ms: dict[str, Spread]  # "mean_ms", "p50_ms", ... for the figures the tool gave
    merged: Merged | None
    requests_failed: int | None  # over every repetition that ran
    requests_total: int | None
    error_rate: float | None  # requests_failed / requests_total
    throughput: Estimate | None = None  # the median successful rate with its noise


@dataclass(frozen=True)
class PeakPoint:
    concurrency: int
    throughput: Estimate | None  # successful requests/s: median over the ok repetitions, with its noise
    error_rate: float | None
    failed_runs: int  # repetitions that failed or timed out

    @property
    def throughput_rps(self) -> float | None:
        return self.throughput.value if self.throughput else None


@dataclass(frozen=True)
class Peak:
    """A tool's maximum successful throughput over the concurrency sweep, for one keep-alive
    setting (and target, rate and extra parameters): the one peak model, made by `peaks`."""

    tool: str
    keepalive: bool | None
    rate_rps: float | None
    best: PeakPoint | None
    errors_from_concurrency: int | None  # the lowest concurrency with failed requests or runs
    points: list[PeakPoint]
    target_label: str | None = None

    @property
    def best_rps(self) -> float | None:
        return self.best.throughput_rps if self.best else None

    @property
    def best_concurrency(self) -> int | None:
        return self.best.concurrency if self.best else None


def throughput(result: RunResult) -> float | None:
    """Successful requests per second: what every comparison ranks. Stored in `rates.rps_ok`;
    computed by the same rule for records stored before that field existed."""
    if result.measurement.rates.rps_ok is not None:
        return result.measurement.rates.rps_ok
    return derive.ok_rate(result.measurement.counts, result.measurement.rates, result.measurement.timing.duration_s)[0]


def throughput_derived(result: RunResult) -> bool:
    """Whether the successful rate was computed by toolbench rather than printed by the tool."""
    if result.measurement.rates.rps_ok is not None:
        return result.fidelity_of("rates.rps_ok") is Fidelity.DERIVED
    return derive.ok_rate(result.measurement.counts, result.measurement.rates, result.measurement.timing.duration_s)[1] is Fidelity.DERIVED


def attempted(result: RunResult) -> float | None:
    """Attempted requests per second, failed ones included: the tool's own figure, else derived."""
    return result.measurement.rates.rps if result.measurement.rates.rps is not None else result.measurement.rates.rps_derived


def whole_seconds(result: RunResult) -> list[SecondSample]:
    """The per-second samples that cover a whole second of load. Every tool's clock starts
    and stops mid-second (ab, JMeter and Locust stamp whole epoch seconds; the engine counts
    from its start, ramp-up included), so the first and last samples are dropped."""
    return list(result.measurement.series[1:-1])


def half_range_pct(values: list[float]) -> float | None:
    """Half the range of the values as a percentage of their median; None without two values."""
    if len(values) < 2:
        return None
    middle = statistics.median(values)
    return (max(values) - min(values)) / 2.0 / middle * 100.0 if middle > 0 else None


def estimate(values: list[float], seconds: list[float] | None = None) -> Estimate | None:
    """The median of the repetitions' values, with their noise; with one repetition, the noise
    of its whole seconds (`seconds`), if there are at least two."""
    if not values:
        return None
    value = statistics.median(values)
    if len(values) >= 2:
        return Estimate(value, half_range_pct(values), f"{len(values)} repetitions", len(values))
    if seconds and len(seconds) >= 2:
        return Estimate(value, half_range_pct(seconds), f"{len(seconds)} whole seconds")
    return Estimate(value, None)


def differs(a: Estimate, b: Estimate) -> bool:
    """Further apart than the noise of both (and than MIN_DIFFERENCE_PCT of the larger): a real
    difference. Anything closer is a tie."""
    gap = abs(a.value - b.value)
    return gap > a.half_width + b.half_width and gap > MIN_DIFFERENCE_PCT / 100.0 * max(abs(a.value), abs(b.value))


def rate_estimate(ok: list[RunResult]) -> Estimate | None:
    """The successful rate of a cell's ok repetitions, with its noise."""
    values = [v for r in ok if (v := throughput(r)) is not None]
    seconds = None
    if len(values) == 1:
        (only,) = [r for r in ok if throughput(r) is not None]
        seconds = [float(s.requests - (s.errors or 0)) for s in whole_seconds(only)]
    return estimate(values, seconds)


def t_critical_95(df: int) -> float:
    if df < 1:
        raise ValueError("a t-interval needs at least two values")
    if df <= len(_T95):
        return _T95[df - 1]
    z = _Z95  # Cornish-Fisher expansion: within 0.001 of the table beyond 30 degrees of freedom
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


def modified_z_scores(values: list[float]) -> list[float]:
    """0.6745 (x - median) / MAD. With MAD = 0 (most values equal), any value off the
    median is infinitely far in MAD units: flagged, as hyperfine does."""
    median = statistics.median(values)
    mad = statistics.median([abs(v - median) for v in values])
    if mad == 0:
        return [0.0 if v == median else math.copysign(math.inf, v - median) for v in values]
    return [_MAD_SCALE * (v - median) / mad for v in values]


def spread(values: list[float], repetitions: list[int] | None = None) -> Spread | None:
    if not values:
        return None
    reps = repetitions if repetitions is not None else list(range(1, len(values) + 1))
    n = len(values)
    mean = statistics.fmean(values)
    if n >= 2:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
        stdev = statistics.stdev(values)
        half = t_critical_95(n - 1) * stdev / math.sqrt(n)
        low, high = mean - half, mean + half
    else:
        q1 = q3 = values[0]
        stdev = low = high = None
    outliers = [rep for rep, z in zip(reps, modified_z_scores(values)) if abs(z) > OUTLIER_Z] if n >= 3 else []
    return Spread(n=n, values=list(values), repetitions=list(reps), median=statistics.median(values),
                  min=min(values), max=max(values), q1=q1, q3=q3, iqr=q3 - q1, mean=mean, stdev=stdev,
                  ci95_low=low, ci95_high=high, outliers=outliers)


def key_of(result: RunResult) -> CellKey:
    i = result.identity
    return CellKey(i.label, i.concurrency, i.keepalive, i.rate_rps, i.target_label, tuple(sorted(i.params.items())))


def group(results: Iterable[RunResult]) -> dict[CellKey, list[RunResult]]:
    """The repetitions of each cell, each cell's in the order they came. The cells are in a
    fixed order (target as first met, tool, concurrency, keep-alive on first, rate), not the
    run's: a run shuffles its cells' order per repetition, and its tables must not."""
    groups: dict[CellKey, list[RunResult]] = {}
    targets: dict[str | None, int] = {}
    for result in results:
        targets.setdefault(result.identity.target_label, len(targets))
        groups.setdefault(key_of(result), []).append(result)
    return dict(sorted(groups.items(), key=lambda item: _canonical(item[0], targets)))


def _canonical(key: CellKey, targets: dict[str | None, int]) -> tuple[object, ...]:
    return (targets[key.target_label], key.tool, key.concurrency or 0, key.keepalive is not True,
            key.keepalive is None, key.rate_rps or 0.0, key.params)


def cell_stats(results: Iterable[RunResult]) -> list[CellStats]:
    """One CellStats per cell that ran, in group()'s fixed order."""
    return [_stats(key, reps) for key, reps in group(results).items()
            if any(r.outcome.status in _RAN for r in reps)]


def _stats(key: CellKey, reps: list[RunResult]) -> CellStats:
    ran = [r for r in reps if r.outcome.status in _RAN]
    ok = [r for r in ran if r.outcome.status is Status.OK]
    rps = [(throughput(r), r.identity.repetition) for r in ok]
    latency = {}
    for name in LATENCY_FIGURES:
        pairs = [(_latency(r, name), r.identity.repetition) for r in ok]
        found = spread(*_unzip(pairs))
        if found is not None:
            latency[name] = found
    failed = [r.measurement.counts.requests_failed for r in ran if r.measurement.counts.requests_failed is not None]
    total = [r.measurement.counts.requests_total for r in ran if r.measurement.counts.requests_total is not None]
    return CellStats(key=key, runs=len(ran), ok=len(ok), throughput_rps=spread(*_unzip(rps)), latency_ms=latency,
                     merged=merge(ok), requests_failed=sum(failed) if failed else None,
                     requests_total=sum(total) if total else None,
                     error_rate=sum(failed) / sum(total) if failed and total and sum(total) else None,
                     throughput=rate_estimate(ok))


def _unzip(pairs: list[tuple[float | None, int]]) -> tuple[list[float], list[int]]:
    present = [(v, rep) for v, rep in pairs if v is not None]
    return [v for v, _ in present], [rep for _, rep in present]


def _latency(result: RunResult, name: str) -> float | None:
    if name == "mean_ms":
        return result.measurement.latency.mean_ms
    return getattr(result.measurement.latency.percentiles, name)


def merge(results: Iterable[RunResult]) -> Merged | None:
    """Adds the histograms of the results that have one (repetitions of one cell, say)."""
    with_hist = [r for r in results if r.measurement.histogram]
    if not with_hist:
        return None
    total = histogram.merge(r.measurement.histogram for r in with_hist if r.measurement.histogram)
    if total.get_total_count() == 0:
        return None
    return Merged(histogram=histogram.encode(total), count=total.get_total_count(),
                  repetitions=[r.identity.repetition for r in with_hist],
                  min_ms=total.get_min_value() / 1000.0, mean_ms=total.get_mean_value() / 1000.0,
                  max_ms=total.get_max_value() / 1000.0, percentiles=histogram.percentiles_ms(total))


def peaks(results: Iterable[RunResult]) -> list[Peak]:
    """Per tool and keep-alive setting (and rate, target and parameters): the highest median
    successful rate over the concurrencies, where it is reached, and where errors begin."""
    lines: dict[tuple[str, bool | None, float | None, str | None, tuple[tuple[str, str], ...]],
                list[CellStats]] = {}
    for stats in cell_stats(results):
        k = stats.key
        if k.concurrency is not None:
            lines.setdefault((k.tool, k.keepalive, k.rate_rps, k.target_label, k.params), []).append(stats)
    found = []
    for (tool, keepalive, rate, target, _), cells in lines.items():
        points = sorted((_point(c) for c in cells), key=lambda p: p.concurrency)
        measured = [p for p in points if p.throughput_rps is not None]
        best = max(measured, key=lambda p: p.throughput_rps or 0.0) if measured else None
        errors = [p.concurrency for p in points if (p.error_rate or 0) > 0 or p.failed_runs]
        found.append(Peak(tool=tool, keepalive=keepalive, rate_rps=rate, best=best,
                          errors_from_concurrency=min(errors) if errors else None, points=points,
                          target_label=target))
    return found


def _point(stats: CellStats) -> PeakPoint:
    assert stats.key.concurrency is not None
    return PeakPoint(concurrency=stats.key.concurrency, throughput=stats.throughput,
                     error_rate=stats.error_rate, failed_runs=stats.runs - stats.ok)
