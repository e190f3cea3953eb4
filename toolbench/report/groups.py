"""Results grouped the way the report reads them: a series per tool and keep-alive
setting (and run, when several are compared), a point per concurrency holding every
repetition, and each series' peak.

Repetitions are summarised by their median; peaks and their spread come from the
repetition statistics (toolbench.stats), applied to each series."""
from __future__ import annotations

import dataclasses
import statistics
from collections import defaultdict
from dataclasses import dataclass
from typing import Callable, Iterable

from toolbench import stats
from toolbench.schema import Fidelity, RunResult, Status

ERROR_STATUSES = (Status.FAILED, Status.TIMED_OUT, Status.INTERRUPTED)
NOT_RUN = (Status.UNSUPPORTED, Status.TOOL_MISSING)


@dataclass(frozen=True, order=True)
class SeriesKey:
    run: str  # the run's label, "" when the report shows a single run
    tool: str
    variant: str  # extra matrix parameters or the open model's rate, "" when none
    keepalive: bool | None

    @property
    def keepalive_text(self) -> str:
        return "—" if self.keepalive is None else ("on" if self.keepalive else "off")

    @property
    def name(self) -> str:
        """The tool and its variant, without keep-alive or run."""
        return f"{self.tool} {self.variant}".strip()

    @property
    def label(self) -> str:
        run = f" [{self.run}]" if self.run else ""
        return f"{self.name}, keep-alive {self.keepalive_text}{run}"


@dataclass(frozen=True)
class Point:
    key: SeriesKey
    concurrency: int | None
    results: tuple[RunResult, ...]  # every repetition, in repetition order

    @property
    def ok(self) -> tuple[RunResult, ...]:
        return tuple(r for r in self.results if r.outcome.status is Status.OK)

    @property
    def has_errors(self) -> bool:
        return any(r.outcome.status in ERROR_STATUSES or (r.counts.requests_failed or 0) > 0 for r in self.results)

    def median(self, get: Callable[[RunResult], float | int | None]) -> float | None:
        """The median over the repetitions that finished ok and have the metric."""
        return median(get(r) for r in self.ok)

    def spread(self, get: Callable[[RunResult], float | int | None]) -> tuple[float, float] | None:
        values = [float(v) for v in (get(r) for r in self.ok) if v is not None]
        return (min(values), max(values)) if len(values) > 1 else None

    def derived(self, metric: str) -> bool:
        return any(r.fidelity_of(metric) is Fidelity.DERIVED for r in self.ok)

    @property
    def resolution_ms(self) -> float | None:
        """The coarsest rounding step of the repetitions: below it a value means "less than a step"."""
        values = [r.latency.resolution_ms for r in self.ok if r.latency.resolution_ms]
        return max(values) if values else None

    @property
    def rps(self) -> float | None:
        return self.median(rps_of)

    @property
    def rps_derived(self) -> bool:
        return any(r.rates.rps is None and r.rates.rps_derived is not None for r in self.ok)


@dataclass(frozen=True)
class Peak:
    key: SeriesKey
    rps: float | None  # the highest median rate over the series' concurrencies
    rps_derived: bool
    concurrency: int | None  # where that rate was reached
    errors_from: int | None  # the lowest concurrency at which requests or cells failed
    cells_ok: int
    cells: int
    cells_run: int  # cells not skipped as unsupported or for a missing tool
    point: Point | None  # the point of the peak
    why_not_run: str = ""  # when no cell ran: the reason recorded
    spread: stats.Spread | None = None  # the peak's rate over its repetitions


def rps_of(r: RunResult) -> float | None:
    """The rate as the tool reported it, else as toolbench derived it."""
    return r.rates.rps if r.rates.rps is not None else r.rates.rps_derived


def median(values: Iterable[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return statistics.median(present) if present else None


def variant_of(r: RunResult) -> str:
    parts = [f"{k}={v}" for k, v in sorted(r.identity.params.items())]
    if r.identity.rate_rps is not None:
        parts.append(f"open {r.identity.rate_rps:g}/s")
    return " ".join(parts)


def points(runs: Iterable[tuple[str, list[RunResult]]]) -> list[Point]:
    """Every (series, concurrency) with its repetitions, ordered by series then concurrency."""
    by_point: dict[tuple[SeriesKey, int | None], list[RunResult]] = defaultdict(list)
    for label, results in runs:
        for r in results:
            key = SeriesKey(label, r.identity.label, variant_of(r), r.identity.keepalive)
            by_point[(key, r.identity.concurrency)].append(r)
    ordered = sorted(by_point.items(), key=lambda item: (_key_order(item[0][0]), item[0][1] is None, item[0][1] or 0))
    return [Point(key, c, tuple(sorted(rs, key=lambda r: r.identity.repetition))) for (key, c), rs in ordered]


def _key_order(key: SeriesKey) -> tuple[str, str, str, int]:
    # keep-alive on before off, unknown last
    return key.run, key.tool, key.variant, {True: 0, False: 1, None: 2}[key.keepalive]


def series(all_points: list[Point]) -> dict[SeriesKey, list[Point]]:
    out: dict[SeriesKey, list[Point]] = {}
    for p in all_points:
        out.setdefault(p.key, []).append(p)
    return out


def peaks(all_points: list[Point]) -> list[Peak]:
    out = []
    for key, pts in series(all_points).items():
        # Peaks need no latency histogram: without them stats does not merge any, which on a
        # large run would cost seconds for nothing shown here.
        bare = [dataclasses.replace(r, histogram=None) for p in pts for r in p.results]
        found = stats.peaks(bare)  # one line: the series is one tool and keep-alive setting
        line = found[0] if len(found) == 1 else None
        best = next((p for p in pts if line and line.best_rps is not None and p.concurrency == line.best_concurrency),
                    None)
        out.append(Peak(
            key=key, rps=line.best_rps if line else None, rps_derived=best.rps_derived if best else False,
            concurrency=line.best_concurrency if line else None,
            errors_from=line.errors_from_concurrency if line else None,
            cells_ok=sum(len(p.ok) for p in pts), cells=sum(len(p.results) for p in pts),
            cells_run=sum(1 for p in pts for r in p.results if r.outcome.status not in NOT_RUN), point=best,
            why_not_run=next((r.outcome.error or r.outcome.status.value for p in pts for r in p.results
                              if r.outcome.status in NOT_RUN), ""),
            spread=_rate_spread(best)))
    return out


def _rate_spread(point: Point | None) -> stats.Spread | None:
    if point is None:
        return None
    rated = [(rate, r.identity.repetition) for r in point.ok if (rate := rps_of(r)) is not None]
    return stats.spread([v for v, _ in rated], [rep for _, rep in rated])


def leader(all_peaks: list[Peak]) -> Peak | None:
    rated = [p for p in all_peaks if p.rps is not None]
    return max(rated, key=lambda p: p.rps or 0.0) if rated else None
