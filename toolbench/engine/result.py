"""The workers' results, merged exactly, in the common schema."""
from __future__ import annotations

import dataclasses
import datetime
import math
from collections import defaultdict
from typing import Any

from hdrh.histogram import HdrHistogram

from toolbench.engine.churn_native import churn_path
from toolbench.engine.coordinator import Collected
from toolbench.engine.recorder import LATE_NS, Moments, RequestPart, Schedule, WorkerResult
from toolbench.engine.summary import BACKLOG_NOTE
from toolbench.record import failures, histogram
from toolbench.record.schema import (Counts, Failures, Fidelity, GeneratorCost, Identity, Latency, LoadModel,
                                     Measurement, Omission, Outcome, Rates, RequestFigures, RunResult, SecondSample,
                                     Status, Timing, Transfer)

TOOL = "engine"
# A note for people: the engine's failure kinds are finer than the schema's classes (refused
# vs other connect errors, reset vs closed). The classes are in Counts; nothing reads this back.
FAILURE_DETAIL = "engine_failures"
SILENT_NOTE = "engine_silent_connections"
PYTHON_PATH_NOTE = ("engine_python_path: keep-alive off ran on the engine's pure-Python connection path (its C "
                    "extension is not built here, or TOOLBENCH_ENGINE_CHURN=python asked for it), which costs "
                    "more CPU per request than the C path (bench/README.md)")
TLS_NOTE = "engine_tls"
COALESCE_NOTE = "engine_coalesced_reads"
WORKLOAD_NOTE = "engine_workload"
# Engine failure kinds (engine.recorder.FAILURE_KINDS) to the schema's classes (toolbench.record.failures):
# connect_timeout is a timeout, so timeout comes first.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("timeout",)),
    ("connect", ("connect_refused", "connect_other", "tls")),
    ("reset", ("reset",)),
    ("read", ("closed",)),
    ("other", ("malformed",)),
)


def measurement(out: Collected, version: str | None = None) -> Measurement:
    """The engine's view of the run, as an adapter's parse() would give it."""
    results = out.results
    opts = out.options
    if not results:
        return Measurement(tool=TOOL, url=opts.url, concurrency=opts.connections, tool_version=version,
                           notes=[f"{out.error}"] if out.error else [])
    hist = histogram.merge(r.hist for r in results)
    moments = _moments(r.moments for r in results)
    counts = _counts(results)
    start = min(r.window_start_ns for r in results)
    duration_s = max(1e-9, (max(r.window_end_ns for r in results) - start) / 1e9)
    total = counts.requests_total or 0
    received = sum(r.received_bytes for r in results)
    connects = sum(r.connects for r in results)
    ttfb_count = sum(r.ttfb_count for r in results)
    latency = dataclasses.replace(
        _latency(hist, moments),
        connect_mean_ms=(sum(r.connect_sum_ns for r in results) / connects / 1e6) if connects else None,
        ttfb_mean_ms=(sum(r.ttfb_sum_ns for r in results) / ttfb_count / 1e6) if ttfb_count else None)
    uhist = histogram.merge(r.uhist for r in results if r.uhist) if opts.open_model else None
    umoments = _moments(r.umoments for r in results if r.umoments is not None)
    has_uncorrected = uhist is not None and umoments.count > 0
    detail = _failure_note(results)
    notes = [detail] if detail else []
    sent_rps = _sent_rps(results)
    if opts.open_model:
        notes += _open_notes(results, opts.rate_rps, opts.connections, sent_rps, umoments)
    silent = sum(r.silent_conns for r in results)
    if silent and opts.duration_s is not None and opts.keepalive:
        notes.append(f"{SILENT_NOTE}: {silent} of the connections open when the measured window began "
                     "received no response in it")
    lingered = sum(r.lingered for r in results)
    if lingered:
        mean_us = sum(r.linger_ns for r in results) / lingered / 1e3
        notes.append(f"{COALESCE_NOTE}: the engine read its responses in batches (--coalesce {opts.coalesce_s * 1e6:g}us), "
                     "each timed by the kernel's receive timestamp; a connection waited on average "
                     f"{mean_us:.1f} us between its response's arrival and its next request")
    if opts.workload is not None:
        notes.append(_workload_note(results, opts.open_model))
    if out.target.tls:
        notes.append(_tls_note(results, opts.tls_resume))
    elif not opts.keepalive and churn_path() == "Python" and opts.workload is None:
        notes.append(PYTHON_PATH_NOTE)
    if out.error:
        notes.append(out.error)
    started = out.started_at
    m = Measurement(
        tool=TOOL,
        timing=Timing(started_at=_iso(started), ended_at=_iso(started + duration_s) if started else None,
                      duration_s=duration_s, wall_s=out.wall_s),
        counts=dataclasses.replace(counts, connections_opened=connects),
        # The open model's own rate is the rate it sent, as vegeta's is: its sends due in the window
        # that went out, whatever became of them (a request in flight at the stop is not counted).
        rates=Rates(rps=sent_rps if sent_rps is not None else total / duration_s, rps_derived=total / duration_s),
        transfer=Transfer(received_bytes=received, sent_bytes=sum(r.sent_bytes for r in results),
                          received_bytes_per_s=received / duration_s),
        latency=latency,
        histogram=histogram.encode(hist) if hist.get_total_count() else None,
        latency_uncorrected=_latency(uhist, umoments) if has_uncorrected else None,
        histogram_uncorrected=histogram.encode(uhist) if uhist is not None and uhist.get_total_count() else None,
        coordinated_omission=Omission.CORRECTED if opts.open_model else Omission.NOT_CORRECTED,
        series=_series(results),
        notes=notes, url=opts.url, concurrency=opts.connections, tool_version=version,
        by_request=_by_request(results, duration_s))
    return _with_fidelity(m)


def run_result(out: Collected, version: str | None = None) -> RunResult:
    """A full record, for `--json`: the engine is its own runner here."""
    opts = out.options
    m = measurement(out, version)
    responded = sum(sum(r.codes.values()) for r in out.results)
    if out.interrupted:
        status = Status.INTERRUPTED
    elif not out.results or responded == 0 or (out.error and not out.interrupted):
        status = Status.FAILED
    else:
        status = Status.OK
    error = out.error
    if error is None and status is Status.FAILED:
        error = _why_nothing(m, opts.timeout_s)
    model = LoadModel.OPEN if opts.open_model else LoadModel.CLOSED
    conn = "ka" if opts.keepalive else "close"
    rate = f"-rate{opts.rate_rps:g}" if opts.rate_rps is not None else ""
    identity = Identity(scenario=opts.scenario, cell_id=f"engine-c{opts.connections}-{conn}{rate}-rep1",
                        tool=TOOL, tool_version=version, url=opts.url, concurrency=opts.connections,
                        keepalive=opts.keepalive, protocol="https" if out.target.tls else "http1", model=model, rate_rps=opts.rate_rps,
                        params={"workers": str(out.workers), **opts.extra})
    total = m.counts.requests_total or 0
    cpu = out.cpu_user_s + out.cpu_system_s
    cost = GeneratorCost(cpu_user_s=out.cpu_user_s, cpu_system_s=out.cpu_system_s,
                         cpu_us_per_request=(cpu / total * 1e6) if total else None)
    return RunResult(identity, Outcome(status=status, exit_code=None, error=error), m, cost=cost)


def _counts(results: list[WorkerResult] | list[RequestPart]) -> Counts:
    """The workers' counts (or one request name's parts) summed. A workload's responses are failed
    as judged (its checks may accept a 4xx, or fail a 200); otherwise a 4xx or 5xx status fails."""
    codes: dict[int, int] = defaultdict(int)
    kinds: dict[str, int] = defaultdict(int)
    judged: dict[str, int] | None = None
    for r in results:
        for code, n in r.codes.items():
            codes[code] += n
        for kind, n in r.failures.items():
            kinds[kind] += n
        if r.judged is not None:
            judged = judged if judged is not None else defaultdict(int)
            for kind, n in r.judged.items():
                judged[kind] += n
    by_class = failures.tally(kinds, FAILURE_TABLE)
    if judged is not None:
        http_4xx, http_5xx, check = judged["http_4xx"], judged["http_5xx"], judged["check"]
    else:
        http_4xx = sum(n for c, n in codes.items() if 400 <= c < 500)
        http_5xx = sum(n for c, n in codes.items() if c >= 500)
        check = None
    classes = Failures(connect=by_class["connect"], timeout=by_class["timeout"], read=by_class["read"],
                       reset=by_class["reset"], http_4xx=http_4xx, http_5xx=http_5xx, other=by_class["other"],
                       check=check)
    responses = sum(codes.values())
    judged_failed = http_4xx + http_5xx + (check or 0)
    failed = sum(kinds.values()) + judged_failed
    return Counts(requests_total=responses + sum(kinds.values()), requests_ok=responses - judged_failed,
                  requests_failed=failed, failures=classes, status_codes=dict(sorted(codes.items())))


def _by_request(results: list[WorkerResult], duration_s: float) -> list[RequestFigures]:
    """A workload's figures per request name, in the workload's order: the workers' parts merged
    exactly as the totals are, so that they add up to them."""
    names = list(dict.fromkeys(p.name for r in results for p in r.by_request))
    out = []
    for name in names:
        parts = [p for r in results for p in r.by_request if p.name == name]
        moments = _moments(p.moments for p in parts)
        counts = _counts(parts)
        latency = _latency(histogram.merge(p.hist for p in parts), moments) if moments.count else Latency()
        total = counts.requests_total or 0
        out.append(RequestFigures(name=name, counts=counts, latency=latency,
                                  rates=Rates(rps=total / duration_s, rps_derived=total / duration_s,
                                              rps_ok=(counts.requests_ok or 0) / duration_s)))
    return out


def _series(results: list[WorkerResult]) -> list[SecondSample]:
    """The workers' seconds summed, from the first to the last (a second without any
    is all zeros); the mean and max are of the responses, in µs. (Plain sums, not
    histogram.PerRequest: that would import numpy, 0.1 s of CPU in every run.)"""
    sums: dict[int, list[int]] = {}  # second -> requests, errors, responses, their µs sum and max
    for r in results:
        for s in r.series:
            row = sums.setdefault(s.second, [0, 0, 0, 0, 0])
            row[0] += s.responses + s.failed
            row[1] += s.errors
            row[2] += s.responses
            row[3] += s.sum_us
            row[4] = max(row[4], s.max_us or 0)
    empty = [0, 0, 0, 0, 0]
    rows = [(second, sums.get(second, empty)) for second in range(min(sums, default=0), max(sums, default=-1) + 1)]
    return [SecondSample(second=second, requests=requests, errors=errors,
                         latency_mean_ms=total_us * 0.001 / timed if timed else None,
                         latency_max_ms=top_us * 0.001 if timed else None)
            for second, (requests, errors, timed, total_us, top_us) in rows]


def _latency(hist: HdrHistogram, moments: Moments) -> Latency:
    """Whole-request latency from a merged histogram (percentiles) and exact moments."""
    return Latency(
        min_ms=_ms(moments.min_us), mean_ms=_ms(moments.sum_us / moments.count) if moments.count else None,
        max_ms=_ms(moments.max_us), stdev_ms=_stdev_ms(moments),
        percentiles=histogram.percentiles_ms(hist, _ms(moments.min_us), _ms(moments.max_us)), resolution_ms=0.001)


def _open_notes(results: list[WorkerResult], asked: float | None, connections: int, sent_rps: float | None,
                uncorrected: Moments) -> list[str]:
    notes = ["open model: sends are timed by the event loop's 1 ms timers, so the latency "
             "from the intended send time includes up to about 1 ms of the engine's own lag"]
    backlog = _backlog(_schedule(results), sent_rps, asked, connections, uncorrected)
    return notes + [f"{BACKLOG_NOTE}: {backlog}"] if backlog else notes


def _schedule(results: list[WorkerResult]) -> Schedule | None:
    """The workers' open-model schedules, summed (their windows are each one's own)."""
    parts = [r.schedule for r in results if r.schedule is not None]
    if not parts:
        return None
    return Schedule(intended=sum(p.intended for p in parts), sent=sum(p.sent for p in parts),
                    late=sum(p.late for p in parts), worst_late_ns=max(p.worst_late_ns for p in parts),
                    window_ns=min(p.window_ns for p in parts))


def _sent_rps(results: list[WorkerResult]) -> float | None:
    """Requests/s sent by a timed open-model run: each worker's sent over its window, summed
    (each carries its share of the rate); None for any other run."""
    parts = [r.schedule for r in results]
    if not parts or any(p is None or not p.window_ns for p in parts):
        return None
    return sum(p.sent / (p.window_ns / 1e9) for p in parts if p is not None)


HELD_PCT = 0.5  # a rate sent within this share of the rate asked is held


def _backlog(schedule: Schedule | None, sent_rps: float | None, asked: float | None, connections: int,
             uncorrected: Moments) -> str | None:
    """What the open model owed and did not send on time, in words; None when it kept up."""
    if schedule is None or asked is None or not (schedule.late or schedule.never_sent):
        return None
    short = sent_rps is not None and (1 - sent_rps / asked) * 100 > HELD_PCT
    # A few late sends while the rate held is the machine's jitter, not a backlog: said as such.
    head = "could not keep up" if schedule.never_sent or short else "kept the rate, but some sends went out late"
    said = (f"{head}: {schedule.late:,} sends late, worst {schedule.worst_late_ns / 1e6:,.1f} ms, "
            f"{schedule.never_sent:,} never sent")
    said += f", of {schedule.intended:,} due" if schedule.window_ns else ""
    said += f" (late: more than {LATE_NS / 1e6:g} ms after its intended time)"
    if sent_rps is not None:
        said += f"; sent {sent_rps:,.0f}/s of the {asked:,.0f}/s asked ({(sent_rps / asked - 1) * 100:+.2f} %)"
    if uncorrected.count and (schedule.never_sent or short):
        said += "; " + _limit(asked, connections, uncorrected)
    return said


def _limit(asked: float, connections: int, uncorrected: Moments) -> str:
    """Whether the connections were too few for the rate, by Little's law: a connection carries
    one request at a time, so N of them at a mean latency L (from the actual send) carry N / L."""
    carry = connections / (max(1.0, uncorrected.sum_us / uncorrected.count) / 1e6)  # µs: never 0
    they = f"{connections:,} connection" + ("s" if connections != 1 else "")
    verb = "carry" if connections != 1 else "carries"
    if carry < asked * 1.1:
        return (f"{they}, at the mean latency from the actual send, {verb} about {carry:,.0f}/s: the "
                "connections were the limit (more, -c, would send more, if the server can answer more)")
    return (f"the connections were not the limit ({they} at the mean latency {verb} about {carry:,.0f}/s): "
            "the engine fell behind, its CPU or the machine's load is the limit")


def _workload_note(results: list[WorkerResult], open_model: bool) -> str:
    """How the engine ran a workload, and the most users it ran at once."""
    peak = sum(r.users_peak or 0 for r in results)
    what = "arrivals in progress" if open_model else "users running"
    return (f"{WORKLOAD_NOTE}: a workload runs on the engine's Python path (a coroutine per user, its "
            f"C paths send one request); at most {peak:,} {what} at once (summed over the workers)")


def _tls_note(results: list[WorkerResult], resume: bool) -> str:
    """What TLS did: the engine's handshakes, and how many resumed a session."""
    shakes = sum(r.tls_handshakes for r in results)
    resumed = sum(r.tls_resumed for r in results)
    how = (f"{shakes:,} handshakes, {resumed:,} of them resumed a session" if resume
           else f"{shakes:,} handshakes, session resumption off")
    return (f"{TLS_NOTE}: HTTP/1.1 over TLS (ALPN http/1.1) on the engine's Python path (its C path is "
            f"plain HTTP only); {how}")


def _failure_note(results: list[WorkerResult]) -> str | None:
    kinds: dict[str, int] = defaultdict(int)
    for r in results:
        for kind, n in r.failures.items():
            kinds[kind] += n
    failed = [f"{k}={v}" for k, v in kinds.items() if v]
    return f"{FAILURE_DETAIL}: " + " ".join(failed) if failed else None


def _why_nothing(m: Measurement, timeout_s: float) -> str:
    """Why no request got an HTTP response, in words."""
    f = m.counts.failures
    parts = [f"{n} {words}" for n, words in ((f.connect, "could not connect"),
                                             (f.timeout, f"no response (or no connection) within {timeout_s:g}s"),
                                             (f.read, "connection closed before the response"),
                                             (f.reset, "connection reset before the response"),
                                             (f.other, "malformed response")) if n]
    if parts:
        return "no HTTP response: " + ", ".join(parts)
    opened = m.counts.connections_opened or 0
    ran = f"{m.timing.duration_s:.1f}s" if m.timing.duration_s else "the run"
    if opened:
        return f"no response within {ran}: {opened} connection(s) open, no request answered"
    return f"no response within {ran}: no request completed"


def _with_fidelity(m: Measurement) -> Measurement:
    fidelity: dict[str, Fidelity] = {}
    for section in ("counts", "rates", "transfer", "latency"):
        _walk(getattr(m, section), section, fidelity)
    fidelity["timing.duration_s"] = Fidelity.REPORTED
    fidelity["rates.rps_derived"] = Fidelity.DERIVED
    for name in ("histogram", "latency_uncorrected", "histogram_uncorrected", "series"):
        if getattr(m, name):
            fidelity[name] = Fidelity.REPORTED
    return dataclasses.replace(m, fidelity=fidelity)


def _walk(obj: Any, prefix: str, out: dict[str, Fidelity]) -> None:
    for name, value in obj.__dict__.items():
        path = f"{prefix}.{name}"
        if hasattr(value, "__dataclass_fields__"):
            _walk(value, path, out)
        elif value is not None and value != {} and path != "rates.rps_derived":
            out[path] = Fidelity.REPORTED


def _moments(items: Any) -> Moments:
    total = Moments()
    for m in items:
        total.add(m)
    return total


def _stdev_ms(m: Moments) -> float | None:
    if m.count < 2:
        return None
    mean = m.sum_us / m.count
    return math.sqrt(max(0.0, m.sumsq_us / m.count - mean * mean)) / 1000.0


def _ms(us: float | None) -> float | None:
    return None if us is None else us / 1000.0


def _iso(t: float | None) -> str | None:
    if t is None:
        return None
    return datetime.datetime.fromtimestamp(t, datetime.timezone.utc).isoformat(timespec="milliseconds")
