"""The probe: requests timed by toolbench itself, independent of the tool under test.

The reference study timed a request by hand during each load, because "many tools show
0 ms response time", and judged a tool's peak only while that hand-timed request stayed
close to its unloaded time: "if, during the load, the hand-timed request is clearly slower
than the baseline, the server ran into trouble first". The probe does both, for every
cell: an unloaded baseline of N requests before the tool starts, then one request every
`probe.interval` while it runs, each on a fresh connection of its own (as a person with
curl would see the server), each timed from connect to the last byte of the body.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import http.client
import os
import socket
import ssl
import statistics
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Protocol

from toolbench.contract.adapter import PROTOCOL_NAMES
from toolbench.contract.cell import Cell
from toolbench.errors import ToolbenchError
from toolbench.record.schema import Latency, ProbeSummary
from toolbench.run import probe_h2
from toolbench.scenario.observation import ProbeSpec
from toolbench.servers.access_log import PROBE_AGENT
from toolbench.scenario.request import RequestSpec

MAX_ERRORS_KEPT = 5


@dataclass(frozen=True)
class ProbeTarget:
    url: str
    method: str = "GET"
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes | None = None
    # The cell's protocol (toolbench.scenario.read.PROTOCOLS): the probe speaks it, over TLS
    # trusting `ca_file` (the target's own certificate) when given, else the system's authorities.
    protocol: str = "http1"
    ca_file: str | None = None

    @classmethod
    def of(cls, url: str, request: RequestSpec, protocol: str = "http1", ca_file: str | None = None) -> "ProbeTarget":
        # The probe names itself, so that a target's access log tells its requests from the tool's.
        headers = {k: v for k, v in request.headers.items() if k.lower() != "user-agent"}
        headers["User-Agent"] = PROBE_AGENT
        if request.body is not None and request.content_type:
            headers.setdefault("Content-Type", request.content_type)
        # UTF-8, as every tool sends it (http.client would encode a str as Latin-1).
        body = request.body.encode("utf-8") if request.body is not None else None
        return cls(url=url, method=request.method, headers=headers, body=body, protocol=protocol, ca_file=ca_file)

    @classmethod
    def for_cell(cls, cell: Cell) -> "ProbeTarget":
        assert cell.url is not None
        return cls.of(cell.url, cell.request, cell.protocol, cell.ca_file)

    @property
    def speakable(self) -> bool:
        """The probe can speak the protocol here: HTTP/2 needs the h2 package."""
        return self.protocol not in HTTP2 or probe_h2.available()

    @property
    def unspoken(self) -> str | None:
        """Why a cell in this protocol has no probe; None when it has one."""
        if self.speakable:
            return None
        return (f"no probe: it speaks {PROTOCOL_NAMES.get(self.protocol, self.protocol)} through the h2 package, "
                "which is not installed here (toolbench's [run] extra brings it)")


HTTP2 = ("h2", "h2c")


@dataclass(frozen=True)
class Samples:
    latencies_ms: list[float] = field(default_factory=list)
    offsets_s: list[float] = field(default_factory=list)  # when each request started
    failures: int = 0
    errors: list[str] = field(default_factory=list)


class ProbeFailure(ToolbenchError):
    """One probe request failed; the message says how, in a few words."""


class _Connection(Protocol):
    """What the probe's stop needs of a connection in flight: its socket, to abort it."""

    sock: socket.socket | None


def timed_request(target: ProbeTarget, timeout_s: float, in_flight: list[_Connection] | None = None) -> float:
    """One request on a fresh connection, in the target's protocol; its time in ms, connect
    (and TLS handshake) included. Any answer with a status below 500 counts: the probe times
    the server, it does not judge the content. The connection is put in `in_flight` while it
    is open, so that stopping can abort it."""
    parts = urllib.parse.urlsplit(target.url)
    path = parts.path or "/"
    if parts.query:
        path += "?" + parts.query
    host, port = parts.hostname or "127.0.0.1", parts.port
    try:
        context = _context(target.ca_file, _alpn(target.protocol)) if parts.scheme == "https" else None
    except (OSError, ssl.SSLError) as exc:
        raise ProbeFailure(f"TLS: the certificate to trust does not load ({_describe(exc)})") from None
    started = time.perf_counter()
    conn: http.client.HTTPConnection | probe_h2.Exchange
    if target.protocol in HTTP2:
        conn = probe_h2.Exchange(host, port or (443 if context else 80), timeout_s, context)
    elif context is not None:
        conn = http.client.HTTPSConnection(host, port, timeout=timeout_s, context=context)
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout_s)
    if in_flight is not None:
        in_flight.append(conn)
    try:
        status = _exchange(conn, target, path)
        elapsed_ms = (time.perf_counter() - started) * 1000.0
    except socket.timeout:
        raise ProbeFailure(f"no answer within {timeout_s:g}s") from None
    except ConnectionRefusedError:
        raise ProbeFailure("connection refused") from None
    except ssl.SSLCertVerificationError as exc:
        raise ProbeFailure(f"TLS: {exc.verify_message or 'certificate not trusted'}") from None
    except (OSError, http.client.HTTPException, probe_h2.H2Failure) as exc:
        raise ProbeFailure(_describe(exc)) from None
    finally:
        if isinstance(conn, http.client.HTTPConnection):
            conn.close()
        if in_flight is not None:
            in_flight.clear()
    if status >= 500:
        raise ProbeFailure(f"HTTP {status}")
    return elapsed_ms


def _exchange(conn: http.client.HTTPConnection | probe_h2.Exchange, target: ProbeTarget, path: str) -> int:
    if isinstance(conn, probe_h2.Exchange):
        return conn.request(target.method, path, target.headers, target.body)
    conn.request(target.method, path, body=target.body, headers=target.headers)
    response = conn.getresponse()
    response.read()
    return response.status


def _alpn(protocol: str) -> str | None:
    return {"https": "http/1.1", "h2": "h2"}.get(protocol)


def _context(ca_file: str | None, alpn: str | None) -> ssl.SSLContext:
    """One context per certificate and protocol, made before any request is timed: loading the
    authorities is not the server's time. No session is kept across requests: each probe
    request pays a full handshake, as a new client does."""
    try:
        stat = os.stat(ca_file) if ca_file else None
    except OSError:
        stat = None  # the context's load says why
    # A target started again (a resumed run) writes a new certificate at the same path.
    return _made_context(ca_file, alpn, (stat.st_mtime_ns, stat.st_size) if stat else None)


@functools.lru_cache(maxsize=16)
def _made_context(ca_file: str | None, alpn: str | None, _version: tuple[int, int] | None) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=ca_file)
    if alpn is not None:
        context.set_alpn_protocols([alpn])
    return context


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror.lower()
    return str(exc) or type(exc).__name__


def baseline(target: ProbeTarget, count: int, timeout_s: float) -> Samples:
    """`count` requests in a row before the load. A target that does not answer is a finding
    later, not an error here; it ends the baseline early: at the first unanswered request,
    or after three failures without a success, rather than waiting out every try."""
    latencies: list[float] = []
    offsets: list[float] = []
    errors: list[str] = []
    failures = 0
    began = time.monotonic()
    for _ in range(count):
        at = time.monotonic() - began
        try:
            latencies.append(round(timed_request(target, timeout_s), 3))
            offsets.append(round(at, 3))
        except ProbeFailure as exc:
            failures += 1
            _keep(errors, str(exc))
            if not latencies and (failures >= 3 or str(exc).startswith("no answer")):
                break
    return Samples(latencies, offsets, failures, errors)


def _keep(errors: list[str], message: str) -> None:
    if message not in errors and len(errors) < MAX_ERRORS_KEPT:
        errors.append(message)


class Probe:
    """One request every `interval_s` in a thread of its own, on the tool's clock: request k
    starts at start + k·interval; one that took longer than an interval makes the probe skip
    the ticks it missed rather than send a burst."""

    def __init__(self, target: ProbeTarget, interval_s: float, timeout_s: float) -> None:
        self.target = target
        self.interval_s = interval_s
        self.timeout_s = timeout_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._latencies: list[float] = []
        self._offsets: list[float] = []
        self._errors: list[str] = []
        self._failures = 0
        self._started = 0.0
        self._in_flight: list[_Connection] = []

    def start(self, started: float | None = None) -> None:
        """`started`: the tool's spawn time (time.monotonic()); offsets count from it."""
        self._started = started if started is not None else time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="toolbench-probe", daemon=True)
        self._thread.start()

    def stop(self) -> Samples:
        """Ends the probe at once: a request still waiting for its answer is aborted and not
        counted (it would only time the end of the load)."""
        self._stop.set()
        for conn in list(self._in_flight):
            if conn.sock is not None:
                with contextlib.suppress(OSError):
                    conn.sock.shutdown(socket.SHUT_RDWR)
        if self._thread is not None:
            self._thread.join(timeout=self.timeout_s + 5.0)
        return Samples(list(self._latencies), list(self._offsets), self._failures, list(self._errors))

    def _loop(self) -> None:
        # The first request waits one interval: the tool needs a moment to open its connections.
        tick = 1
        while not self._stop.wait(max(0.0, self._started + tick * self.interval_s - time.monotonic())):
            at = time.monotonic() - self._started
            try:
                latency = timed_request(self.target, self.timeout_s, self._in_flight)
            except ProbeFailure as exc:
                if self._stop.is_set():
                    return  # aborted by stop()
                self._failures += 1
                _keep(self._errors, str(exc))
            else:
                self._latencies.append(round(latency, 3))
                self._offsets.append(round(at, 3))
            tick = max(tick + 1, int((time.monotonic() - self._started) / self.interval_s) + 1)


def summarize(base: Samples, during: Samples, tool_latency: Latency | None, spec: ProbeSpec,
              tool: str = "the tool") -> ProbeSummary:
    """The probe's figures and what they show: (a) the server slowed down under the load
    (probe median far above the baseline), (b) the tool's latency disagrees with the probe,
    or the tool reports none."""
    base_p50 = _median(base.latencies_ms)
    p50 = _median(during.latencies_ms)
    slowdown = p50 / base_p50 if p50 is not None and base_p50 else None
    server_bound = None
    if p50 is not None and base_p50 is not None:
        # Both a ratio and an absolute floor: on loopback the baseline is a few tenths of
        # a millisecond, and a slowdown from 0.2 to 0.7 ms is scheduling noise, not a server
        # that ran out of capacity.
        server_bound = p50 > max(spec.slowdown_factor * base_p50, base_p50 + spec.slowdown_floor_ms)
    tool_ms, metric = _tool_figure(tool_latency)
    disagrees = _disagrees(tool_ms, p50, tool_latency, spec) if tool_ms is not None and p50 is not None else None
    summary = ProbeSummary(
        baseline_ms=base.latencies_ms, samples_ms=during.latencies_ms, failures=during.failures,
        sample_offsets_s=during.offsets_s, baseline_failures=base.failures,
        errors=_merged_errors(base.errors, during.errors), interval_s=spec.interval_s,
        baseline_p50_ms=base_p50, p50_ms=p50, p95_ms=_quantile(during.latencies_ms, 0.95),
        max_ms=max(during.latencies_ms) if during.latencies_ms else None,
        slowdown=round(slowdown, 2) if slowdown is not None else None,
        tool_ms=tool_ms, tool_metric=metric, server_bound=server_bound, tool_disagrees=disagrees)
    resolution = tool_latency.resolution_ms if tool_latency else None
    return dataclasses.replace(summary, findings=_findings(summary, base, resolution, tool))


def _findings(s: ProbeSummary, base: Samples, resolution_ms: float | None, tool: str) -> list[str]:
    found = []
    asked = len(base.latencies_ms) + base.failures
    if base.failures and not base.latencies_ms:
        found.append(f"the probe could not reach the target before the load ({', '.join(base.errors)}): "
                     "there is no baseline")
    elif base.failures:
        found.append(f"{base.failures} of {asked} baseline requests failed ({', '.join(base.errors)})")
    taken = len(s.samples_ms) + s.failures
    if taken == 0:
        found.append(f"no probe request fell within the run: it was shorter than the probe interval "
                     f"of {s.interval_s:g}s")
    elif s.failures:
        found.append(f"{s.failures} of {taken} probe requests during the load failed "
                     f"({', '.join(s.errors)}): the server turned connections away or stalled")
    if s.server_bound:
        found.append(f"under the load the probe's median was {_ms(s.p50_ms)}, {s.slowdown:g}x its unloaded "
                     f"{_ms(s.baseline_p50_ms)}: the server slowed down first, so this cell's throughput "
                     "shows the server's limit rather than the tool's")
    elif s.server_bound is False:
        found.append(f"the probe stayed near its baseline ({_ms(s.p50_ms)} under load, {_ms(s.baseline_p50_ms)} "
                     "unloaded): the server had capacity to spare")
    found += _tool_findings(s, resolution_ms, tool)
    return found


def _tool_findings(s: ProbeSummary, resolution_ms: float | None, tool: str) -> list[str]:
    if s.p50_ms is None:
        return []
    if s.tool_ms is None:
        return [f"{tool} reports no latency; the probe measured a median of {_ms(s.p50_ms)}"]
    name = "median" if s.tool_metric == "p50_ms" else "mean"
    if resolution_ms and s.tool_ms < resolution_ms:
        return [f"{tool} reports a {name} of {_ms(s.tool_ms)}, below its resolution of {_ms(resolution_ms)}: "
                f"it cannot tell; the probe measured {_ms(s.p50_ms)}"]
    if not s.tool_disagrees:
        return []
    if s.tool_ms > s.p50_ms:
        return [f"{tool}'s {name} ({_ms(s.tool_ms)}) is {s.tool_ms / s.p50_ms:.1f}x the probe's ({_ms(s.p50_ms)}): "
                "the tool's figure includes time its requests waited inside the tool itself"]
    return [f"{tool}'s {name} ({_ms(s.tool_ms)}) is {s.p50_ms / max(s.tool_ms, 1e-3):.1f}x below the probe's "
            f"({_ms(s.p50_ms)}, each on a fresh connection): the tool's figure understates what a new "
            "client waits"]


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.3g} ms" if value < 100 else f"{value:.0f} ms"


def _tool_figure(latency: Latency | None) -> tuple[float | None, str | None]:
    """The tool's median when it gives one (it compares with the probe's median), else its mean."""
    if latency is None:
        return None, None
    if latency.percentiles.p50_ms is not None:
        return latency.percentiles.p50_ms, "p50_ms"
    if latency.mean_ms is not None:
        return latency.mean_ms, "mean_ms"
    return None, None


def _disagrees(tool_ms: float, probe_ms: float, latency: Latency | None, spec: ProbeSpec) -> bool:
    """The tool and the probe time the same server at the same moment, so under a closed
    load they should land in the same range, though not on the same value: the probe pays
    a TCP connect that a keep-alive tool does not, it has a dozen samples against the tool's
    thousands, and a CPU-bound tool adds its own queueing to what it reports. Hence both
    conditions: the larger is more than `tolerance` times the smaller, and they are more
    than `tolerance_ms` apart, plus the tool's rounding step (ab rounds to 1 ms, siege to
    10 ms), so that a rounded 0 next to a 0.4 ms probe is not called a disagreement."""
    resolution = (latency.resolution_ms if latency else None) or 0.0
    if abs(tool_ms - probe_ms) <= spec.tolerance_ms + resolution:
        return False
    low = max(min(tool_ms, probe_ms), resolution, 1e-3)
    return max(tool_ms, probe_ms) / low > spec.tolerance


def _merged_errors(first: list[str], second: list[str]) -> list[str]:
    merged: list[str] = []
    for message in first + second:
        _keep(merged, message)
    return merged


def _median(values: list[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


def _quantile(values: list[float], q: float) -> float | None:
    """Nearest rank: with a dozen samples, an interpolated p95 would be a value never seen."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(round(q * len(ordered))) - 1))]
