"""A human summary of an engine run, laid out like wrk's."""
from __future__ import annotations

from toolbench.record.schema import LoadModel, RunResult, Status

# The note of an open-model run that could not keep up (result.py writes it, render() shows it):
# its sends late, and those due but never sent. Here, so that rendering needs no result.py.
BACKLOG_NOTE = "engine_backlog"
_SHOWN = (("50%", "p50_ms"), ("75%", "p75_ms"), ("90%", "p90_ms"), ("99%", "p99_ms"),
          ("99.9%", "p999_ms"))


def render(result: RunResult, workers: int | None = None) -> str:
    ident, lat, counts = result.identity, result.measurement.latency, result.measurement.counts
    duration = result.measurement.timing.duration_s
    lines = [f"Running {_secs(duration)} test @ {ident.url}"]
    model = (f"open model at {ident.rate_rps or 0:g} requests/s" if ident.model is LoadModel.OPEN
             else "closed model")
    workers = workers or int(ident.params.get("workers", "1"))
    lines.append(f"  {workers} worker{'s' if workers != 1 else ''} and {ident.concurrency} connections, "
                 f"keep-alive {'on' if ident.keepalive else 'off'}, {model}")
    if result.outcome.status is Status.FAILED and not counts.requests_total:
        lines.append(f"  error: {result.outcome.error}")
        return "\n".join(lines) + "\n"
    open_model = ident.model is LoadModel.OPEN
    uncorrected = result.measurement.latency_uncorrected if open_model else None
    title = "Latency (from the intended send time)" if open_model else "Latency"
    lines.append(f"  {title:<38}{'mean':>10}{'stdev':>10}{'max':>10}")
    lines.append(f"  {'':<38}{_ms(lat.mean_ms):>10}{_ms(lat.stdev_ms):>10}{_ms(lat.max_ms):>10}")
    header = "  Latency distribution" + ("           corrected  uncorrected" if uncorrected else "")
    lines.append(header)
    for label, name in _SHOWN:
        row = f"  {label:>8}  {_ms(getattr(lat.percentiles, name)):>10}"
        if uncorrected:
            row += f"   {_ms(getattr(uncorrected.percentiles, name)):>10}"
        lines.append(row)
    extra = []
    if lat.ttfb_mean_ms is not None:
        extra.append(f"time to first byte {_ms(lat.ttfb_mean_ms)} mean")
    if lat.connect_mean_ms is not None:
        extra.append(f"connect {_ms(lat.connect_mean_ms)} mean")
    if extra:
        lines.append("  " + "; ".join(extra))
    received = result.measurement.transfer.received_bytes or 0
    lines.append(f"  {counts.requests_total} requests in {_secs(duration)}, {_bytes(received)} read")
    lines += _failures(result)
    lines += _by_request(result)
    lines += _backlog(result)
    # Requests that ended (answered or failed) per second, as wrk counts them; in the open model
    # `rps` is the rate sent, which the backlog line gives when it fell short.
    rates = result.measurement.rates
    rps = (rates.rps_derived if rates.rps_derived is not None else rates.rps) or 0.0
    lines.append(f"Requests/sec: {rps:>12.2f}")
    lines.append(f"Transfer/sec: {_bytes(result.measurement.transfer.received_bytes_per_s or 0):>12}")
    if result.outcome.status is not Status.OK and result.outcome.error:
        lines.append(f"{result.outcome.status.value}: {result.outcome.error}")
    elif result.outcome.status is Status.INTERRUPTED:
        lines.append("interrupted: figures cover the time until Ctrl-C")
    return "\n".join(lines) + "\n"


def _failures(result: RunResult) -> list[str]:
    lines = []
    f = result.measurement.counts.failures
    # As wrk groups them; the engine's finer kinds stay in its `engine_failures` note.
    failed = [f"{name} {n}" for name, n in (("connect", f.connect), ("read", (f.read or 0) + (f.reset or 0) or None),
                                            ("timeout", f.timeout),
                                            ("malformed", f.other)) if n]
    if failed:
        lines.append("  Socket errors: " + ", ".join(failed))
    if f.check:
        lines.append(f"  Failed checks: {f.check}")
    bad = {code: n for code, n in result.measurement.counts.status_codes.items() if not 200 <= code < 400}
    if bad:
        lines.append(f"  Non-2xx or 3xx responses: {sum(bad.values())} ("
                     + ", ".join(f"{code}: {n}" for code, n in bad.items()) + ")")
    return lines


def _by_request(result: RunResult) -> list[str]:
    """A workload's figures per request name, a line each."""
    named = result.measurement.by_request
    if not named:
        return []
    lines = [f"  {'By request':<24}{'requests':>10}{'failed':>8}{'checks':>8}{'50%':>10}{'99%':>10}{'req/s':>10}"]
    for f in named:
        c, p = f.counts, f.latency.percentiles
        lines.append(f"    {f.name:<22}{c.requests_total or 0:>10}{c.requests_failed or 0:>8}{c.failures.check or 0:>8}"
                     f"{_ms(p.p50_ms):>10}{_ms(p.p99_ms):>10}{f.rates.rps or 0:>10.1f}")
    return lines


def _backlog(result: RunResult) -> list[str]:
    """The open model's backlog, its first clause on a line and each further one indented below."""
    prefix = f"{BACKLOG_NOTE}: "
    said = next((n[len(prefix):] for n in result.measurement.notes if n.startswith(prefix)), None)
    if said is None:
        return []
    first, *rest = said.split("; ")
    return [f"  {first}"] + [f"    {clause}" for clause in rest]


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    if value < 1.0:
        return f"{value * 1000:.2f}us"
    if value < 1000.0:
        return f"{value:.2f}ms"
    return f"{value / 1000:.2f}s"


def _secs(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}s"


def _bytes(value: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{value:.2f}{unit}"
        value /= 1024
    return f"{value:.2f}GB"
