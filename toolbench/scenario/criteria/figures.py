"""The figures a criterion may name: a fixed table from each name to the schema field (or the
one rule over schema fields) it reads. A figure a result does not have is None, never 0."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from toolbench.record import stats
from toolbench.record.schema import PERCENTILES, RunResult, cpu_us_per_request


@dataclass(frozen=True)
class Figure:
    name: str
    meaning: str
    read: Callable[[RunResult], float | int | None]
    by_toolbench: bool = False  # measured by toolbench's monitor or probe, not reported by the tool


def _error_rate(r: RunResult) -> float | None:
    c = r.measurement.counts
    if c.requests_failed is None or not c.requests_total:
        return None
    return c.requests_failed / c.requests_total


def _cpu_us(r: RunResult) -> float | None:
    if r.cost is None:
        return None
    if r.cost.cpu_us_per_request is not None:
        return r.cost.cpu_us_per_request
    return cpu_us_per_request(r.cost.cpu_user_s, r.cost.cpu_system_s, r.measurement.counts.requests_total)


def _latency(field: str) -> Callable[[RunResult], float | None]:
    return lambda r: getattr(r.measurement.latency, field)


def _percentile(field: str) -> Callable[[RunResult], float | None]:
    return lambda r: getattr(r.measurement.latency.percentiles, field)


def _count(field: str) -> Callable[[RunResult], int | None]:
    return lambda r: getattr(r.measurement.counts, field)


def _generator(field: str) -> Callable[[RunResult], float | int | None]:
    return lambda r: getattr(r.cost, field) if r.cost is not None else None


def _server(field: str) -> Callable[[RunResult], float | int | None]:
    return lambda r: getattr(r.server_cost, field) if r.server_cost is not None else None


def _probe(field: str) -> Callable[[RunResult], float | None]:
    return lambda r: getattr(r.probe, field) if r.probe is not None else None


_TABLE = [
    Figure("rps", "successful requests/s (rates.rps_ok): what rankings use", stats.throughput),
    Figure("rps_attempted", "every request/s, failed ones included (rates.rps, else rates.rps_derived)",
           stats.attempted),
    Figure("error_rate", "failed / all requests, a fraction (1% is 0.01)", _error_rate),
    Figure("requests_total", "requests made (counts.requests_total)", _count("requests_total")),
    Figure("requests_ok", "successful requests (counts.requests_ok)", _count("requests_ok")),
    Figure("requests_failed", "failed requests (counts.requests_failed)", _count("requests_failed")),
    *[Figure(name, f"latency.{name}", _latency(name)) for name in ("mean_ms", "min_ms", "max_ms", "stdev_ms",
                                                                   "ttfb_mean_ms", "connect_mean_ms")],
    *[Figure(name, f"latency.percentiles.{name}", _percentile(name)) for name, _ in PERCENTILES],
    Figure("duration_s", "the run's length as the tool measured it (timing.duration_s)",
           lambda r: r.measurement.timing.duration_s),
    Figure("received_bytes_per_s", "transfer.received_bytes_per_s",
           lambda r: r.measurement.transfer.received_bytes_per_s),
    Figure("cpu_us_per_request", "the generator's CPU µs per request (cost)", _cpu_us, True),
    *[Figure(name, f"the generator's {name} (cost.{name})", _generator(name), True)
      for name in ("cpu_mean_pct", "cpu_peak_pct", "rss_peak_bytes", "connections_peak")],
    *[Figure(f"server_{name}", f"the target's {name} (server_cost.{name})", _server(name), True)
      for name in ("cpu_us_per_request", "cpu_mean_pct", "cpu_peak_pct", "rss_peak_bytes", "connections_peak")],
    Figure("probe_p50_ms", "the probe's median during the load (probe.p50_ms)", _probe("p50_ms"), True),
    Figure("probe_slowdown", "the probe's median over its baseline (probe.slowdown)", _probe("slowdown"), True),
]
FIGURES: dict[str, Figure] = {f.name: f for f in _TABLE}


def read(name: str, result: RunResult) -> float | None:
    value = FIGURES[name].read(result)
    return None if value is None else float(value)
