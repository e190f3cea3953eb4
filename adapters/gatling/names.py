"""A Gatling run's figures per request name (Measurement.by_request): a workload's requests are
named in the simulation (adapters/gatling/workload.py) and every REQUEST record of simulation.log
carries its name (log.NameTally, tallied as the log is read), so each name's figures are its
records' and add up to the run's exactly."""
from __future__ import annotations

from toolbench.adapters.gatling import log as gatling_log
from toolbench.record import histogram
from toolbench.record.schema import Counts, Failures, Latency, Rates, RequestFigures


def by_request(log: gatling_log.Log, duration_s: float | None) -> list[RequestFigures]:
    """Each name's figures, by name; none for a log of one name (a single request's run)."""
    if len(log.names) < 2:
        return []
    return [_figures(name, tally, duration_s) for name, tally in sorted(log.names.items())]


def _figures(name: str, tally: gatling_log.NameTally, duration_s: float | None) -> RequestFigures:
    times = histogram.PerRequest("gatling")
    times.add_tally(tally.elapsed)
    stats = times.stats_ms() or {}
    hist = times.histogram()
    total = sum(tally.elapsed.values())
    percentiles = histogram.percentiles_ms(hist, stats.get("min_ms"), stats.get("max_ms")) if hist else None
    return RequestFigures(
        name=name,
        counts=Counts(requests_total=total, requests_ok=tally.ok, requests_failed=total - tally.ok,
                      failures=Failures(**gatling_log.classes_of(tally.messages))),
        latency=Latency(**stats, **({"percentiles": percentiles} if percentiles else {}), resolution_ms=1.0),
        rates=Rates(rps_derived=total / duration_s, rps_ok=tally.ok / duration_s) if duration_s else Rates())
