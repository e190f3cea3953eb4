"""Results grouped the way the report reads them: a series per tool and keep-alive
setting (and run, when several are compared), a point per concurrency holding every
repetition, and each series' peak.

Repetitions are summarised by their median; throughput is successful requests per second
(toolbench.record.stats.throughput) and carries its noise; peaks come from toolbench.record.stats.peaks,
applied to each series."""
from __future__ import annotations

import dataclasses
import functools
import statistics
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable, Iterable

from toolbench.contract.adapter import PROTOCOL_NAMES
from toolbench.record import stats
from toolbench.record.schema import Fidelity, RunResult, Status

ERROR_STATUSES = (Status.FAILED, Status.TIMED_OUT, Status.INTERRUPTED, Status.PARTIAL)
NOT_RUN = (Status.UNSUPPORTED, Status.TOOL_MISSING)


@dataclass(frozen=True, order=True)
class SeriesKey:
    run: str  # the run's label, "" when the report shows a single run
    tool: str
    variant: str  # extra matrix parameters, the open model's rate, the target when several; "" when none
    keepalive: bool | None
    protocol: str = "http1"  # toolbench.scenario.read.PROTOCOLS: cells of two protocols are never alike
    # How the protocol is named where the report holds several ("HTTP/2 over TLS"); "" otherwise.
    protocol_shown: str = field(default="", compare=False)

    @property
    def keepalive_text(self) -> str:
        return "—" if self.keepalive is None else ("on" if self.keepalive else "off")

    @property
    def name(self) -> str:
        """The tool, its variant and, where the report has several, its protocol; without keep-alive or run."""
        return " ".join(part for part in (self.tool, self.variant, self.protocol_shown and f"({self.protocol_shown})")
                        if part)

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
        values = [r.measurement.latency.resolution_ms for r in self.ok if r.measurement.latency.resolution_ms]
        return max(values) if values else None

    @functools.cached_property
    def rate(self) -> stats.Estimate | None:
        """Successful requests/s, median over the ok repetitions, with its noise."""
        return stats.rate_estimate(list(self.ok))

    @property
    def rps(self) -> float | None:
        return self.rate.value if self.rate else None

    @property
    def rps_derived(self) -> bool:
        return any(stats.throughput_derived(r) for r in self.ok if stats.throughput(r) is not None)

    @property
    def attempted(self) -> float | None:
        """Attempted requests/s, failed ones included: median over the ok repetitions."""
        return self.median(stats.attempted)

    @property
    def error_rate(self) -> float | None:
        """Failed over attempted requests, over every repetition that ran and counted them."""
        ran = [r for r in self.results if r.outcome.status not in NOT_RUN and r.measurement.counts.requests_total]
        failed = [r.measurement.counts.requests_failed for r in ran if r.measurement.counts.requests_failed is not None]
        if not ran or len(failed) < len(ran):
            return None
        return sum(failed) / sum(r.measurement.counts.requests_total or 0 for r in ran)


@dataclass(frozen=True)
class Series:
    """One tool and keep-alive setting (and run): its points and its peak."""

    key: SeriesKey
    points: tuple[Point, ...]
    peak: stats.Peak | None  # from toolbench.record.stats.peaks; None when no cell of the series ran

    @property
    def best(self) -> Point | None:
        """The point of the peak."""
        at = self.peak.best_concurrency if self.peak else None
        return next((p for p in self.points if at is not None and p.concurrency == at), None)

    @property
    def rps(self) -> float | None:
        return self.peak.best_rps if self.peak else None

    @property
    def concurrency(self) -> int | None:
        return self.peak.best_concurrency if self.peak else None

    @property
    def errors_from(self) -> int | None:
        return self.peak.errors_from_concurrency if self.peak else None

    @property
    def cells_ok(self) -> int:
        return sum(len(p.ok) for p in self.points)

    @property
    def cells(self) -> int:
        return sum(len(p.results) for p in self.points)

    @property
    def cells_run(self) -> int:
        """Cells not skipped as unsupported or for a missing tool."""
        return sum(1 for p in self.points for r in p.results if r.outcome.status not in NOT_RUN)

    @property
    def why_not_run(self) -> str:
        return next((r.outcome.error or r.outcome.status.value for p in self.points for r in p.results
                     if r.outcome.status in NOT_RUN), "")

    @property
    def spread(self) -> stats.Spread | None:
        """The peak's successful rate over its repetitions."""
        best = self.best
        if best is None:
            return None
        rated = [(rate, r.identity.repetition) for r in best.ok if (rate := stats.throughput(r)) is not None]
        return stats.spread([v for v, _ in rated], [rep for _, rep in rated])


def median(values: Iterable[float | int | None]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return statistics.median(present) if present else None


def variant_of(r: RunResult, with_target: bool = False) -> str:
    parts = [f"{k}={v}" for k, v in sorted(r.identity.params.items())]
    if r.identity.rate_rps is not None:
        parts.append(f"open {r.identity.rate_rps:g}/s")
    if with_target and r.identity.target_label:
        parts.append(f"on {r.identity.target_label}")
    return " ".join(parts)


def protocol_name(protocol: str) -> str:
    return PROTOCOL_NAMES.get(protocol, protocol)


def several_protocols(results: Iterable[RunResult]) -> bool:
    return len({r.identity.protocol for r in results}) > 1


def points(runs: Iterable[tuple[str, list[RunResult]]]) -> list[Point]:
    """Every (series, concurrency) with its repetitions, ordered by series then concurrency.
    A target is part of the variant when the results have several: like is compared with like.
    So is the protocol, always (named where there are several)."""
    runs = [(label, list(results)) for label, results in runs]
    targets = {r.identity.target_label for _, results in runs for r in results}
    named = several_protocols(r for _, results in runs for r in results)
    by_point: dict[tuple[SeriesKey, int | None], list[RunResult]] = defaultdict(list)
    for label, results in runs:
        for r in results:
            protocol = r.identity.protocol
            key = SeriesKey(label, r.identity.label, variant_of(r, len(targets) > 1), r.identity.keepalive, protocol,
                            protocol_name(protocol) if named else "")
            by_point[(key, r.identity.concurrency)].append(r)
    ordered = sorted(by_point.items(), key=lambda item: (_key_order(item[0][0]), item[0][1] is None, item[0][1] or 0))
    return [Point(key, c, tuple(sorted(rs, key=lambda r: r.identity.repetition))) for (key, c), rs in ordered]


def _key_order(key: SeriesKey) -> tuple[str, str, str, int, int]:
    # keep-alive on before off, unknown last; protocols in toolbench's order of them
    order = list(PROTOCOL_NAMES)
    return (key.run, key.tool, key.variant, {True: 0, False: 1, None: 2}[key.keepalive],
            order.index(key.protocol) if key.protocol in order else len(order))


def by_series(all_points: list[Point]) -> dict[SeriesKey, list[Point]]:
    out: dict[SeriesKey, list[Point]] = {}
    for p in all_points:
        out.setdefault(p.key, []).append(p)
    return out


def series(all_points: list[Point]) -> list[Series]:
    out = []
    for key, pts in by_series(all_points).items():
        # Peaks need no latency histogram: without them stats does not merge any, which on a
        # large run would cost seconds for nothing shown here.
        bare = [dataclasses.replace(r, measurement=dataclasses.replace(r.measurement, histogram=None))
                for p in pts for r in p.results]
        found = stats.peaks(bare)  # one line: the series is one tool and keep-alive setting
        out.append(Series(key=key, points=tuple(pts), peak=found[0] if len(found) == 1 else None))
    return out
