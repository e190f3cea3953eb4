"""One measurement from the parts of a cell run on several generators at once: counts,
bytes and per-second series summed, HDR histograms merged exactly, rates and latency then
derived from the sums as for one tool (toolbench.record.derive). A figure some part lacks is
absent from the merge, never summed from fewer parts; percentiles, which cannot be added,
come only from a merged histogram."""
from __future__ import annotations

import dataclasses
from typing import Sequence

from toolbench.record import derive, histogram
from toolbench.record.schema import Counts, Failures, Fidelity, Latency, Measurement, SecondSample, Timing, Transfer


def measurements(parts: Sequence[Measurement], concurrency: int | None, url: str | None) -> Measurement:
    """The cell's measurement from its parts (at least one), which started together."""
    if not parts:
        raise ValueError("no part to merge")
    first = parts[0]
    hist = _histogram([p.histogram for p in parts])
    uncorrected = _histogram([p.histogram_uncorrected for p in parts])
    merged = Measurement(
        tool=first.tool,
        timing=Timing(duration_s=_max([p.timing.duration_s for p in parts])),
        counts=_counts([p.counts for p in parts]),
        transfer=Transfer(received_bytes=_sum([p.transfer.received_bytes for p in parts]),
                          sent_bytes=_sum([p.transfer.sent_bytes for p in parts])),
        latency=_latency(parts) if hist is None else Latency(resolution_ms=_max([p.latency.resolution_ms
                                                                                 for p in parts])),
        histogram=hist,
        histogram_resolution_ms=_max([p.histogram_resolution_ms for p in parts]),
        latency_uncorrected=(Latency() if uncorrected is not None else None),
        histogram_uncorrected=uncorrected,
        coordinated_omission=first.coordinated_omission,
        series=series([p.series for p in parts]),
        fidelity=_fidelity(parts),
        notes=[],
        url=url,
        concurrency=concurrency,
        tool_version=first.tool_version,
    )
    done = derive.complete(merged)
    if uncorrected is not None:
        # The same derivation for the uncorrected latency, read from its own histogram.
        alone = derive.complete(Measurement(first.tool, histogram=uncorrected,
                                            histogram_resolution_ms=merged.histogram_resolution_ms))
        done = dataclasses.replace(done, latency_uncorrected=alone.latency)
    return done


def series(parts: Sequence[Sequence[SecondSample]]) -> list[SecondSample]:
    """Per-second samples summed by second. The parts' seconds line up: each generator started
    at the same instant of toolbench's clock, its own clock's offset taken off (see
    toolbench.run.scaleout.fleet). A second some part lacks holds only the others'; an error count or a
    maximum is kept only where every part that had the second said it."""
    if any(not p for p in parts):
        return []  # a part without its series: a sum would look whole and be short
    by_second: dict[int, list[SecondSample]] = {}
    for part in parts:
        for sample in part:
            by_second.setdefault(sample.second, []).append(sample)
    merged = []
    for second, samples in sorted(by_second.items()):
        requests = sum(s.requests for s in samples)
        means = [s.latency_mean_ms for s in samples]
        mean = (sum(m * s.requests for m, s in zip(means, samples)) / requests  # type: ignore[operator]
                if requests and all(m is not None for m in means) else None)
        merged.append(SecondSample(second=second, requests=requests,
                                   errors=_sum([s.errors for s in samples]), latency_mean_ms=mean,
                                   latency_max_ms=_max([s.latency_max_ms for s in samples])))
    return merged


def _histogram(encoded: Sequence[str | None]) -> str | None:
    if not encoded or any(e is None for e in encoded):
        return None
    return histogram.encode(histogram.merge([e for e in encoded if e is not None]))


def _counts(parts: Sequence[Counts]) -> Counts:
    codes: dict[int, int] = {}
    if all(p.status_codes for p in parts):
        for part in parts:
            for code, count in part.status_codes.items():
                codes[code] = codes.get(code, 0) + count
    failures = Failures(**{f.name: _sum([getattr(p.failures, f.name) for p in parts])
                           for f in dataclasses.fields(Failures)})
    return Counts(requests_total=_sum([p.requests_total for p in parts]),
                  requests_ok=_sum([p.requests_ok for p in parts]),
                  requests_failed=_sum([p.requests_failed for p in parts]),
                  failures=failures, status_codes=codes,
                  connections_opened=_sum([p.connections_opened for p in parts]))


def _latency(parts: Sequence[Measurement]) -> Latency:
    """Without every part's histogram: the extremes, and the mean weighted by each part's
    successful requests; no percentile (those of the parts cannot be combined)."""
    weights = [p.counts.requests_ok for p in parts]
    means = [p.latency.mean_ms for p in parts]
    mean = None
    if all(w is not None for w in weights) and all(m is not None for m in means) and sum(weights):  # type: ignore[arg-type]
        mean = sum(m * w for m, w in zip(means, weights)) / sum(weights)  # type: ignore[operator, arg-type]
    lows = [p.latency.min_ms for p in parts]
    return Latency(min_ms=None if any(v is None for v in lows) else min(lows),  # type: ignore[type-var]
                   mean_ms=mean, max_ms=_max([p.latency.max_ms for p in parts]),
                   resolution_ms=_max([p.latency.resolution_ms for p in parts]))


def _fidelity(parts: Sequence[Measurement]) -> dict[str, Fidelity]:
    """A summed figure is as the tools reported it when every part's was; a merged latency
    is toolbench's (derive.complete marks it)."""
    names = {name for p in parts for name in p.fidelity}
    kept = {}
    for name in names:
        if name.startswith("counts.") or name.startswith("transfer.") and name != "transfer.received_bytes_per_s":
            said = {p.fidelity.get(name, Fidelity.REPORTED) for p in parts}
            kept[name] = Fidelity.REPORTED if said == {Fidelity.REPORTED} else Fidelity.DERIVED
    return kept


def _sum(values: Sequence[int | None]) -> int | None:
    return None if not values or any(v is None for v in values) else sum(v for v in values if v is not None)


def _max(values: Sequence[float | None]) -> float | None:
    return None if not values or any(v is None for v in values) else max(v for v in values if v is not None)
