"""The schema's invariants, checked in one place for every adapter's output.

`parse_checked` is the one way core code reads a tool's output: the adapter's parse,
toolbench's derived figures, and `check` on both, raising nothing but ParseError. A
parser that crashes (any other exception) is a ParserCrash, a ParseError too, so one
broken adapter or one hostile output costs one failed cell, never the run.

What `check` holds a Measurement to, naming the field that breaks it:
- every number is finite, not negative and at most numbers.MAX_VALUE; a field the
  schema types as a whole number holds one (series, status codes, failure classes too);
- requests_ok + requests_failed == requests_total where all three are known, and
  each of ok and failed is at most the total; status code counts add up to at most
  the total; an HTTP status has three digits;
- latency: min <= mean <= max, every percentile within [min, max], percentiles
  non-decreasing from p50 to p99.9 -- within the figures' own rounding (below);
- the histograms decode as toolbench's HDR histograms and hold at most requests_total
  values;
- the per-second series has increasing seconds, spanning at most twice the
  run's duration plus MAX_SERIES_SLACK_S, and never over MAX_SERIES_S;
- a workload's figures per request name (`by_request`): each name once, with its count, its
  counts and latency as above, and the names' total, ok and failed add up to the cell's.

Rounding. Tools round their figures: ab's table to whole milliseconds, siege to
hundredths of a second; `Latency.resolution_ms` says the step. Two figures each
rounded to that step can be out of order by up to one step while the true values
are in order, so an order is checked with the step as slack. A percentile read from
an HDR histogram is the highest value its bucket holds: at 3 significant digits up to
1/1024 above the value recorded, so above the exact max by at most that much; that
relative slack is allowed too. Nothing wider is: a tool whose figures are rounded
more coarsely (Locust's percentile buckets) must bring them into line itself where
that is truthful, as derive does for percentiles it reads from whole-millisecond
per-request times; anything else out of order is a ParseError, not a figure to
publish. The check never changes a value."""
from __future__ import annotations

import dataclasses
import functools
import math
import typing
from typing import Any, Callable, Iterator

from toolbench.errors import ParseError, SchemaError
from toolbench.record import histogram, numbers
from toolbench.record.schema import (PERCENTILES, ConnectionTimes, Counts, Latency, Measurement, SecondSample,
                                     SiegeFigures, TimesRow, TlsHandshakes)
from toolbench.record.observed import NETWORK_MACHINES, NetworkCounters

MAX_SERIES_S = histogram.MAX_SERIES_S
MAX_SERIES_SLACK_S = 10.0
_FLOAT_NOISE = 1e-9
TABLE_STEP_MS = 1.0  # ab's Connection Times table is in whole ms


def check(m: Measurement, source: str | None = None) -> Measurement:
    """`m` itself when it holds every invariant; else a ParseError naming the field."""
    problem = next(_problems(m), None)
    if problem is not None:
        raise ParseError(m.tool, problem, source)
    return m


def _problems(m: Measurement) -> Iterator[str]:
    yield from _numbers(m, "")
    yield from _counts(m.counts)
    yield from _latency(m.latency, "latency")
    if m.latency_uncorrected is not None:
        yield from _latency(m.latency_uncorrected, "latency_uncorrected")
    for name in ("histogram", "histogram_uncorrected"):
        yield from _histogram(getattr(m, name), name, m.counts.requests_total)
    yield from _series(m.series, m.timing.duration_s, m.latency.resolution_ms)
    yield from _siege(m.siege)
    yield from _by_request(m)


def check_tls(t: TlsHandshakes) -> TlsHandshakes:
    """`t` itself when its counts are whole, not negative and add up: full + resumed handshakes
    are the connections, and those by HTTP version at most that many; else a SchemaError
    (a stored record that breaks them is refused as it loads)."""
    problem = next(_tls(t), None)
    if problem is not None:
        raise SchemaError(f"tls: {problem}")
    return t


def _tls(t: TlsHandshakes) -> Iterator[str]:
    for name in ("connections", "handshakes_full", "handshakes_resumed", "http1_connections", "http2_connections",
                 "probe_connections", "lines_unread"):
        value = getattr(t, name)
        if isinstance(value, bool) or not isinstance(value, int):
            yield f"{name}: {value!r} is not a whole number"
            return
        why = numbers.problem(value)
        if why is not None:
            yield f"{name}: {why}"
            return
    if t.handshakes_full + t.handshakes_resumed != t.connections:
        yield (f"{t.handshakes_full} full + {t.handshakes_resumed} resumed handshakes are not the "
               f"{t.connections} connections")
    elif t.http1_connections + t.http2_connections > t.connections:
        yield (f"{t.http1_connections} HTTP/1 + {t.http2_connections} HTTP/2 connections are more than the "
               f"{t.connections} connections")


# ---- numbers ----

@functools.lru_cache(maxsize=None)
def _hints(tp: type) -> dict[str, Any]:
    return typing.get_type_hints(tp)


def _numbers(value: Any, path: str, hint: Any = None) -> Iterator[str]:
    """Every number below `value`, against its type hint where the schema gives one."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        hints = _hints(type(value))
        for f in dataclasses.fields(value):
            if f.name != "fidelity":
                yield from _numbers(getattr(value, f.name), _join(path, f.name), hints[f.name])
    elif isinstance(value, list):
        item = _arg(hint, 0)
        for i, sub in enumerate(value):
            yield from _numbers(sub, f"{path}[{i}]", item)
    elif isinstance(value, dict):
        key_t, val_t = _arg(hint, 0), _arg(hint, 1)
        for key, sub in value.items():
            yield from _numbers(key, f"{path} key {key!r}", key_t)
            yield from _numbers(sub, f"{path}[{key!r}]", val_t)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        problem = _number(value, _wants_int(hint))
        if problem:
            yield f"{path}: {problem}"


def _number(value: float, whole: bool) -> str | None:
    why = numbers.problem(value)
    if why is None and whole and not isinstance(value, int):
        return f"{value!r} is not a whole number"
    return why


def _wants_int(hint: Any) -> bool:
    options = typing.get_args(hint) if typing.get_origin(hint) is not None else (hint,)
    return int in options and float not in options


def _arg(hint: Any, index: int) -> Any:
    args = typing.get_args(hint)
    return args[index] if len(args) > index else None


def _join(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


# ---- counts ----

def _counts(c: Counts) -> Iterator[str]:
    total, ok, failed = c.requests_total, c.requests_ok, c.requests_failed
    if total is not None:
        for name, part in (("requests_ok", ok), ("requests_failed", failed)):
            if part is not None and part > total:
                yield f"counts.{name}: {part} is more than requests_total, {total}"
    if None not in (total, ok, failed) and ok + failed != total:
        yield f"counts.requests_failed: requests_ok {ok} + requests_failed {failed} is not requests_total {total}"
    for code in c.status_codes:
        if not isinstance(code, int) or isinstance(code, bool) or not 100 <= code <= 999:
            yield f"counts.status_codes: {code!r} is not an HTTP status (three digits)"
    answered = sum(n for n in c.status_codes.values() if isinstance(n, int))
    if total is not None and answered > total:
        yield f"counts.status_codes: {answered} responses by status, more than requests_total, {total}"


# ---- latency ----

def _latency(lat: Latency, path: str) -> Iterator[str]:
    step = lat.resolution_ms or 0.0

    def after(low: float, high: float) -> bool:
        """high is not below low, within the figures' rounding."""
        return low <= high + step + histogram.RELATIVE_STEP * max(low, high) + _FLOAT_NOISE

    pcts = [(name, getattr(lat.percentiles, name)) for name, _ in PERCENTILES]
    known = [(name, value) for name, value in pcts if value is not None]
    for (lo_name, lo), (hi_name, hi) in zip(known, known[1:]):
        if not after(lo, hi):
            yield f"{path}.percentiles.{hi_name}: {hi:g} is below {lo_name}, {lo:g}"
    named = [(f"{path}.{name}", getattr(lat, name)) for name in ("min_ms", "mean_ms", "max_ms")]
    for (lo_name, lo), (hi_name, hi) in zip(named, named[1:]):
        yield from _order(lo_name, lo, hi_name, hi, after)
    if lat.min_ms is not None and lat.max_ms is not None:
        yield from _order(f"{path}.min_ms", lat.min_ms, f"{path}.max_ms", lat.max_ms, after)
    if lat.connection_times is not None:
        yield from _times_rows(lat.connection_times, f"{path}.connection_times")
    for name, value in known:
        yield from _order(f"{path}.min_ms", lat.min_ms, f"{path}.percentiles.{name}", value, after)
        yield from _order(f"{path}.percentiles.{name}", value, f"{path}.max_ms", lat.max_ms, after)


def _times_rows(table: ConnectionTimes, path: str) -> Iterator[str]:
    """Each row's min <= mean <= max and min <= median <= max, within the table's whole ms."""
    def after(low: float, high: float) -> bool:
        return low <= high + TABLE_STEP_MS + _FLOAT_NOISE

    for f in dataclasses.fields(table):
        row: TimesRow = getattr(table, f.name)
        for middle in ("mean_ms", "median_ms"):
            yield from _order(f"{path}.{f.name}.min_ms", row.min_ms, f"{path}.{f.name}.{middle}",
                              getattr(row, middle), after)
            yield from _order(f"{path}.{f.name}.{middle}", getattr(row, middle), f"{path}.{f.name}.max_ms",
                              row.max_ms, after)


def _siege(figures: SiegeFigures | None) -> Iterator[str]:
    if figures is not None and figures.availability_pct is not None and figures.availability_pct > 100.0:
        yield f"siege.availability_pct: {figures.availability_pct:g} is more than 100"


def _order(lo_name: str, lo: float | None, hi_name: str, hi: float | None,
           after: Callable[[float, float], bool]) -> Iterator[str]:
    if lo is not None and hi is not None and not after(lo, hi):
        yield f"{hi_name}: {hi:g} is below {lo_name.rsplit('.', 1)[-1]}, {lo:g}"


# ---- a workload's figures per request name ----

def _by_request(m: Measurement) -> Iterator[str]:
    """Each name once, with its count, its counts and latency holding as the cell's do; the names'
    requests_total, requests_ok and requests_failed add up to the cell's where all are known."""
    seen: set[str] = set()
    for i, figures in enumerate(m.by_request):
        path = f"by_request[{i}]"
        if not isinstance(figures.name, str) or not figures.name or figures.name in seen:
            yield f"{path}.name: {figures.name!r} is not a name, or a name given twice"
            return
        seen.add(figures.name)
        if figures.counts.requests_total is None:
            yield f"{path}.counts.requests_total: absent; a request name's figures start with its count"
            return
        yield from (f"{path}.{problem}" for problem in _counts(figures.counts))
        yield from _latency(figures.latency, f"{path}.latency")
    for name in ("requests_total", "requests_ok", "requests_failed") if m.by_request else ():
        cell, parts = getattr(m.counts, name), [getattr(f.counts, name) for f in m.by_request]
        if cell is not None and None not in parts and sum(parts) != cell:
            yield f"by_request: the request names' {name} add up to {sum(parts)}, not the cell's {cell}"


# ---- histograms and series ----

def _histogram(encoded: str | None, name: str, total: int | None) -> Iterator[str]:
    if encoded is None:
        return
    try:
        count = histogram.decode(encoded).get_total_count()
    except SchemaError as exc:
        yield f"{name}: {exc}"
        return
    if total is not None and count > total:
        yield f"{name}: holds {count} values, more than requests_total, {total}"


def _series(series: list[SecondSample], duration_s: float | None, step: float | None) -> Iterator[str]:
    if not series:
        return
    last = -1
    for i, sample in enumerate(series):
        if not isinstance(sample.second, int) or sample.second <= last:
            yield f"series[{i}].second: {sample.second!r} does not follow second {last}"
            return
        last = sample.second
        top, mean = sample.latency_max_ms, sample.latency_mean_ms
        if top is not None and mean is not None and mean > top + (step or 0.0) + _FLOAT_NOISE:
            yield f"series[{i}].latency_max_ms: {top:g} is below latency_mean_ms, {mean:g}"
    limit = float(MAX_SERIES_S)
    if duration_s is not None and math.isfinite(duration_s):
        limit = min(limit, 2 * duration_s + MAX_SERIES_SLACK_S)
    if last > limit:
        yield (f"series: runs over {last} s, more than the run's duration allows ({limit:g} s)"
               if limit < MAX_SERIES_S else f"series: runs over {last} s, more than {MAX_SERIES_S} s")


# ---- the kernel's network counters ----

def check_network(n: NetworkCounters) -> NetworkCounters:
    """`n` itself when it names its machine and every figure is absent or a whole, non-negative
    number; else a SchemaError (a stored record that breaks it is refused as it loads)."""
    if n.machine not in NETWORK_MACHINES:
        raise SchemaError(f"network.machine: {n.machine!r} is not one of {', '.join(NETWORK_MACHINES)}")
    for f in dataclasses.fields(n):
        value = getattr(n, f.name)
        if f.name == "machine" or value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaError(f"network.{f.name}: {value!r} is not a whole number")
        why = numbers.problem(value)
        if why is not None:
            raise SchemaError(f"network.{f.name}: {why}")
    return n
