"""What toolbench derives from a tool's own figures, and how it judges a cell.

Derived values are marked DERIVED in the fidelity map; nothing is invented where
the inputs are missing."""
from __future__ import annotations

import dataclasses
import enum
import math
from typing import Callable

from toolbench.record import histogram
from toolbench.record.exits import exit_words
from toolbench.record.schema import PERCENTILES, Counts, Fidelity, Latency, Measurement, Rates, Status


def complete(m: Measurement) -> Measurement:
    fidelity = dict(m.fidelity)

    def mark(*names: str) -> None:
        for name in names:
            fidelity.setdefault(name, Fidelity.DERIVED)

    counts, rates, transfer, latency = m.counts, m.rates, m.transfer, m.latency
    duration = m.timing.duration_s
    if counts.requests_failed is None and counts.requests_total is not None and counts.requests_ok is not None:
        counts = dataclasses.replace(counts, requests_failed=counts.requests_total - counts.requests_ok)
        mark("counts.requests_failed")
    if counts.requests_total is not None and duration:
        rates = dataclasses.replace(rates, rps_derived=counts.requests_total / duration)
        mark("rates.rps_derived")
    rps_ok, ok_fidelity = ok_rate(counts, rates, duration)
    if rps_ok is not None and ok_fidelity is not None:
        rates = dataclasses.replace(rates, rps_ok=rps_ok)
        fidelity["rates.rps_ok"] = ok_fidelity
    if transfer.received_bytes is not None and transfer.received_bytes_per_s is None and duration:
        transfer = dataclasses.replace(transfer, received_bytes_per_s=transfer.received_bytes / duration)
        mark("transfer.received_bytes_per_s")
    notes = list(m.notes)
    if m.histogram is not None:
        latency = _from_histogram(m.histogram, m.histogram_resolution_ms, latency, mark, notes)
    latency = _within_extremes(latency, lambda name: fidelity.__setitem__(name, Fidelity.DERIVED), notes)
    return dataclasses.replace(m, counts=counts, rates=rates, transfer=transfer, latency=latency,
                               fidelity=fidelity, notes=notes)


def ok_rate(counts: Counts, rates: Rates, duration_s: float | None) -> tuple[float | None, Fidelity | None]:
    """Successful requests per second. When no request failed, the tool's own rate counts
    successes only and is kept as reported; otherwise successes over the duration. Unknown
    (None) when the tool does not say how many requests succeeded."""
    attempted = rates.rps if rates.rps is not None else rates.rps_derived
    all_ok = counts.requests_failed == 0 or (
        counts.requests_ok is not None and counts.requests_ok == counts.requests_total)
    if all_ok and attempted is not None:
        return attempted, Fidelity.REPORTED if rates.rps is not None else Fidelity.DERIVED
    if counts.requests_ok is not None and duration_s:
        return counts.requests_ok / duration_s, Fidelity.DERIVED
    return None, None


def _from_histogram(encoded: str, step_ms: float | None, latency: Latency,
                    mark: Callable[..., None], notes: list[str]) -> Latency:
    """Fills what the tool left out from its per-request data. A histogram built from
    whole milliseconds cannot tell 0.1 ms from 0.9 ms: a quantile read from it is cut to
    that step, and one below the step is left absent when the tool's other figures are
    finer (it would read as a precise sub-millisecond value)."""
    hist = histogram.decode(encoded)
    if hist.get_total_count() == 0:
        return latency

    def settle(name: str, value: float) -> float | None:
        if step_ms is None:
            return value
        stepped = math.floor(value / step_ms + 1e-9) * step_ms
        if stepped < step_ms and (latency.resolution_ms or 0.0) < step_ms:
            notes.append(f"{name} is below the {step_ms:g} ms step of the per-request times: left absent")
            return None
        return stepped

    changes: dict[str, object] = {}
    for name, read, stepped in (("min_ms", hist.get_min_value, True), ("max_ms", hist.get_max_value, True),
                                ("mean_ms", hist.get_mean_value, False), ("stdev_ms", hist.get_stddev, False)):
        if getattr(latency, name) is not None:
            continue
        value = settle(name[:-3], read() / 1000.0) if stepped else read() / 1000.0
        if value is not None:
            changes[name] = value
            mark(f"latency.{name}")
    derived = histogram.percentiles_ms(hist)
    pct_changes = {}
    for name, _ in PERCENTILES:
        if getattr(latency.percentiles, name) is None:
            value = settle(name.replace("_ms", ""), getattr(derived, name))
            if value is not None:
                pct_changes[name] = _within(name, value, latency, step_ms, notes)
                mark(f"latency.percentiles.{name}")
    changes["percentiles"] = dataclasses.replace(latency.percentiles, **pct_changes)
    return dataclasses.replace(latency, **changes)


class Reach(str, enum.Enum):
    """What one connection of toolbench's own met at the target (toolbench.record.diagnose)."""

    ANSWERS = "answers"
    SILENT = "silent"  # the connection was accepted, the request never answered
    CONNECT_TIMEOUT = "connect timeout"
    REFUSED = "refused"
    UNKNOWN = "unknown"

def _within_extremes(latency: Latency, mark: Callable[..., None], notes: list[str]) -> Latency:
    """A percentile a tool read from its own histogram (the top of a bucket) or rounded
    can lie beyond its exact min or max by that rounding (p99.9 15.111 ms, max 15.109 ms):
    no request took longer than the max, so it is set to the exact extreme. A value beyond
    by more than the rounding is left for the invariants to refuse."""
    changes = {}
    for name, _ in PERCENTILES:
        value = getattr(latency.percentiles, name)
        if value is None:
            continue
        slack = (latency.resolution_ms or 0.0) + histogram.RELATIVE_STEP * value + 1e-9
        for bound, beyond in ((latency.max_ms, latency.max_ms is not None and value > latency.max_ms),
                              (latency.min_ms, latency.min_ms is not None and value < latency.min_ms)):
            if beyond and bound is not None and abs(value - bound) <= slack:
                changes[name] = bound
                mark(f"latency.percentiles.{name}")
    if not changes:
        return latency
    notes.append("percentiles beyond the exact min or max by less than their rounding set to it: "
                 + ", ".join(f"{name} {getattr(latency.percentiles, name):g} -> {value:g} ms"
                             for name, value in changes.items()))
    return dataclasses.replace(latency, percentiles=dataclasses.replace(latency.percentiles, **changes))


def _within(name: str, value: float, latency: Latency, step_ms: float | None, notes: list[str]) -> float:
    """A percentile read from per-request times rounded to a step (ab -g rounds 4.756 ms to
    5) can lie beyond the tool's exact figures by that rounding: above its max or a higher
    percentile it reports, below its min or a lower one. The true percentile lies within
    them, so such a value is set to the nearest: nearer the truth, never further. A value
    beyond by more than the rounding is left for the invariants to refuse."""
    names = [n for n, _ in PERCENTILES]
    at = names.index(name)
    lows = [latency.min_ms] + [getattr(latency.percentiles, n) for n in names[:at]]
    highs = [latency.max_ms] + [getattr(latency.percentiles, n) for n in names[at + 1:]]
    low = max((v for v in lows if v is not None), default=None)
    high = min((v for v in highs if v is not None), default=None)
    slack = (step_ms or 0.0) + histogram.RELATIVE_STEP * value
    for bound, beyond in ((high, high is not None and value > high), (low, low is not None and value < low)):
        if bound is not None and beyond and abs(value - bound) <= slack:
            notes.append(f"{name} read from the per-request times, {value:g} ms, is beyond the tool's own "
                         f"figures by less than their rounding: set to {bound:g} ms")
            return bound
    return value


def cell_status(m: Measurement | None, exit_code: int | None, *, timed_out: bool, interrupted: bool,
          timeout_s: float, stderr: str, ok_exit_codes: tuple[int, ...] = (0,), wall_s: float | None = None,
          reach: Reach | None = None) -> tuple[Status, str | None]:
    """A cell is ok only when the tool ended normally and at least one request succeeded:
    a run of refused connections or of 404s is a failure, whatever the tool says. A failure
    says what happened in words: the tool's own error line, what it counted, or, when it
    counted nothing, whether the target accepts connections and answers (`reach`: asked
    by toolbench after such a cell)."""
    if interrupted:
        return Status.INTERRUPTED, "interrupted before the tool ended; --resume runs the cell again"
    if timed_out:
        return Status.TIMED_OUT, f"no result within the hard limit of {timeout_s:g}s; the tool was killed"
    said = error_line(stderr)
    if exit_code not in ok_exit_codes:
        why = said or (_why_no_success(m, "", wall_s, reach) if m is not None else "")
        return Status.FAILED, exit_words(exit_code) + (f": {why}" if why else "")
    if m is None:
        return Status.FAILED, "no output to parse" + (f": {said}" if said else "")
    counts = m.counts
    if counts_unknown(m):
        # A file of request times alone (ab's -g or -e) tells that requests were answered,
        # not how many ran or failed: unknown is not zero.
        return Status.OK, f"counts unknown: the {m.tool} output read holds request times but no request counts"
    if counts.requests_ok == 0 or (counts.requests_ok is None and not counts.requests_total):
        return Status.FAILED, "no successful request: " + _why_no_success(m, said, wall_s, reach)
    return Status.OK, None


def counts_unknown(m: Measurement) -> bool:
    """No count at all, but request times: the tool's counts are in a file not given."""
    counts = m.counts
    timed = m.histogram is not None or m.latency.max_ms is not None or m.latency.percentiles.p50_ms is not None
    return (timed and counts.requests_total is None and counts.requests_ok is None
            and counts.requests_failed is None and not _failure_summary(counts))


def counted_nothing(m: Measurement | None) -> bool:
    """The tool ran and counted no request at all: no success, no failure of any class."""
    return (m is not None and not m.counts.requests_total and not m.counts.requests_ok
            and not _failure_summary(m.counts))


def _why_no_success(m: Measurement, said: str, wall_s: float | None, reach: Reach | None) -> str:
    """What the tool counted; when it counted nothing, what its open connections or
    toolbench's own connection to the target showed; else the tool's last word on stderr."""
    counted = _failure_summary(m.counts)
    if counted:
        return counted
    ran = wall_s if wall_s is not None else m.timing.duration_s
    within = f"within {ran:.1f}s" if ran else "during the run"
    if m.counts.connections_opened:
        return f"no response {within}: {m.counts.connections_opened} connection(s) open, no request answered"
    nothing = f"{m.tool} counted no request"
    if reach is Reach.CONNECT_TIMEOUT:
        return f"connect timeout: {nothing} {within}, and the target accepted no connection from toolbench either"
    if reach is Reach.SILENT:
        return (f"no response {within}: {nothing}; the target accepts connections (toolbench's own too) "
                "and answered none")
    if reach is Reach.REFUSED:
        return f"{nothing} {within}; the target refuses connections"
    return said or f"no response {within}: {nothing}, neither answered nor failed"


def _failure_summary(counts: Counts) -> str:
    parts = [f"{value} {f.name.replace('_', ' ')}" for f in dataclasses.fields(counts.failures)
             if (value := getattr(counts.failures, f.name))]
    return ", ".join(parts)


def error_line(stderr: str) -> str:
    """The line of a tool's stderr that says what went wrong: the last one, except that a
    tool that prints its usage after an error (ab) gets the line before the usage."""
    lines = [line.strip() for line in stderr.strip().splitlines() if line.strip()]
    for index, line in enumerate(lines):
        if line.lower().startswith("usage:"):
            return lines[index - 1][:300] if index else line[:300]
    return lines[-1][:300] if lines else ""
