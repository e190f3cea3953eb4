"""Per-worker recording, and the exact merge of what the workers send back.

Timing every request must cost next to nothing, so the hot path only appends a
nanosecond latency to an array('q') and bumps a status-code counter. Once a
second flush() counts the array's values by microsecond into one sample of the
per-second series and into a tally of the run; the tally goes into the HDR
histogram (the library's record_value is pure Python, about 2 µs a call), the sum
of squares and the minimum once per distinct microsecond of the whole run, at its
end (or when it holds PENDING_MAX values), not once per distinct microsecond of
every second: a third of the instructions of a Counter and the histogram every
second (callgrind, 10 s at 12k requests/s)."""
from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from collections.abc import Iterable
from typing import TYPE_CHECKING

from hdrh.histogram import HdrHistogram

from toolbench.record import histogram

if TYPE_CHECKING:
    from toolbench.engine.load import Slot

PENDING_MAX = 1 << 16  # distinct µs values tallied before they go into the HDR histogram
# Open model: responses recorded before Slot.done drains them. Counting a second's worth at
# once holds the loop for ~5 ms at 10,000/s (a tick every second), sending ~50 requests late.
DRAIN_AT = 1024

# Failure classes as the engine sees them; result.py maps them onto the schema's classes.
FAILURE_KINDS = ("connect_refused", "connect_timeout", "connect_other", "tls",
                 "timeout", "reset", "closed", "malformed")
# A workload's responses judged failed (engine.workload_http.judge): by their status, as without a
# workload, or by a check. Responses, unlike FAILURE_KINDS: each is also in the status codes.
JUDGED_KINDS = ("http_4xx", "http_5xx", "check")

# Open model: a send that goes out more than this after its intended time is late. The event
# loop's timers are whole milliseconds and a loaded machine delays a process by a few more, so
# below this a send is on time within the engine's ordinary jitter (which the corrected
# latency includes); above it the engine could not keep up.
LATE_NS = 10_000_000
UNTIL_ANY = 1 << 62  # an end past every send


@dataclass
class Moments:
    """Exact count, sum, sum of squares, min and max of latencies in µs."""

    count: int = 0
    sum_us: int = 0
    sumsq_us: int = 0
    min_us: int | None = None
    max_us: int | None = None

    def add(self, other: "Moments") -> None:
        self.count += other.count
        self.sum_us += other.sum_us
        self.sumsq_us += other.sumsq_us
        if other.min_us is not None:
            self.min_us = other.min_us if self.min_us is None else min(self.min_us, other.min_us)
        if other.max_us is not None:
            self.max_us = other.max_us if self.max_us is None else max(self.max_us, other.max_us)


@dataclass(frozen=True)
class Second:
    """One worker's share of one second of the series."""

    second: int
    responses: int  # HTTP responses, whatever their status
    failed: int  # requests that got no response
    errors: int  # failed, plus responses with status 400 and above
    sum_us: int  # latency of the responses
    max_us: int | None


@dataclass(frozen=True)
class Schedule:
    """Open model: one worker's intended sends in its accounting window (by intended time),
    how many went out before the stop, and how many of its sends went out late."""

    intended: int  # sends due in the window: its share of the rate × the window
    sent: int  # of those, sent before the stop
    late: int  # sends that went out more than LATE_NS after their intended time
    worst_late_ns: int  # the latest of them
    window_ns: int  # the window's length; 0: a run stopped by a request count has none

    @property
    def never_sent(self) -> int:
        return self.intended - self.sent


@dataclass(frozen=True)
class WorkerResult:
    """What a worker process sends back to the parent (pickled)."""

    index: int
    hist: str  # encoded HDR of latency, µs (corrected, in the open model)
    uhist: str | None  # open model only: latency from the actual send
    moments: Moments
    umoments: Moments | None
    codes: dict[int, int]
    failures: dict[str, int]
    received_bytes: int
    sent_bytes: int
    connects: int
    connect_sum_ns: int
    connect_max_ns: int
    ttfb_sum_ns: int
    ttfb_count: int
    window_start_ns: int
    window_end_ns: int
    series: list[Second] = field(default_factory=list)
    note: str | None = None
    silent_conns: int = 0  # connections open since the window began that received nothing in it
    linger_ns: int = 0  # coalesced reads: response's arrival to the next request, summed (Recorder.linger_ns)
    lingered: int = 0
    schedule: Schedule | None = None  # open model only
    tls_handshakes: int = 0  # https: handshakes completed, the warm-up's included
    tls_resumed: int = 0  # of those, the ones that resumed a session
    # A workload (engine.workload_load): its responses judged failed, by JUDGED_KINDS (None: no
    # workload, a 4xx or 5xx status is the failure), its figures per request name, and the most
    # users it ran at once.
    judged: dict[str, int] | None = None
    by_request: list["RequestPart"] = field(default_factory=list)
    users_peak: int | None = None


@dataclass(frozen=True)
class RequestPart:
    """One worker's figures for one request name of a workload."""

    name: str
    hist: str  # encoded HDR of latency, µs, as WorkerResult.hist
    moments: Moments
    codes: dict[int, int]
    failures: dict[str, int]
    judged: dict[str, int]


class Recorder:
    def __init__(self, open_model: bool, judging: bool = False) -> None:
        self.lat = array("q")  # latency in ns, one per response, since the last flush
        self.ulat = array("q") if open_model else None
        # By status code (llhttp only accepts three digits), except 200: the hot path counts
        # only the others, and 200s are the responses left over (codes_by_status()).
        self.codes = [0] * 1000
        self.failures = dict.fromkeys(FAILURE_KINDS, 0)
        # Connections are a property of the whole run (keep-alive ones open before the
        # clock starts), so the warm-up reset keeps them.
        self.connects = 0
        self.connect_sum_ns = 0
        self.connect_max_ns = 0
        self.tls_handshakes = self.tls_resumed = 0  # like connects: kept through the warm-up reset
        # A workload's verdicts on responses (JUDGED_KINDS); None: a 4xx or 5xx status is the failure.
        self.judged: dict[str, int] | None = dict.fromkeys(JUDGED_KINDS, 0) if judging else None
        self.reset()

    def reset(self) -> None:
        """Forget everything recorded so far (the warm-up), keeping the same containers,
        because connections hold bound methods on them."""
        del self.lat[:]
        if self.ulat is not None:
            del self.ulat[:]
        self.codes[:] = [0] * 1000
        for kind in self.failures:
            self.failures[kind] = 0
        if self.judged is not None:
            for kind in self.judged:
                self.judged[kind] = 0
        self.hist = histogram.new()
        self.uhist = histogram.new() if self.ulat is not None else None
        self.pending: Counter[int] = Counter()  # µs -> responses, flushed but not yet in hist
        self.upending: Counter[int] = Counter()  # the same for uhist
        self.moments = Moments()
        self.umoments = Moments() if self.ulat is not None else None
        self.series: list[Second] = []
        self.received_bytes = 0  # of closed connections; live ones keep their own count
        self.gap_ns = 0  # of closed connections: latency not spent waiting for the first byte
        self.silent_conns = 0  # closed connections, open since the window began, that received nothing in it
        # Coalesced reads (the C keep-alive core): from each response's arrival to the next request on
        # its connection, summed, and how many such requests.
        self.linger_ns = 0
        self.lingered = 0
        self._errors_seen = 0
        self._failed_seen = 0
        # Drained since the last flush: the responses, their µs sum and max.
        self._count = self._sum_us = 0
        self._max_us: int | None = None
        self.late = 0  # open model: sends since the window began that went out late (LATE_NS)
        self.worst_late_ns = 0

    def lagged(self, lag_ns: int) -> None:
        """An open-model send went out `lag_ns` after its intended time, more than LATE_NS."""
        self.late += 1
        if lag_ns > self.worst_late_ns:
            self.worst_late_ns = lag_ns

    def schedule(self, slots: Iterable[Slot], window_ns: int, end_ns: int, duration_s: float | None) -> Schedule:
        """The open model's account of the window: the sends due from its start until the nominal
        end, or LATE_NS before the stop if that came sooner (a send due just before the stop may
        still be waiting on its timer, on time: it is not owed), and those of them that went out.
        A run stopped by a request count owes nothing past its count: its due are its sent."""
        counted = duration_s is None
        end = UNTIL_ANY if counted else min(end_ns - LATE_NS, window_ns + int(duration_s * 1e9))
        intended = sent = 0
        for slot in slots:
            due, out = slot.due(window_ns, end)
            intended += due
            sent += out
        window = 0 if counted else max(0, end - window_ns)
        return Schedule(sent if counted else intended, sent, self.late, self.worst_late_ns, window)

    def fail(self, kind: str) -> None:
        self.failures[kind] += 1

    def connected(self, elapsed_ns: int) -> None:
        self.connects += 1
        self.connect_sum_ns += elapsed_ns
        if elapsed_ns > self.connect_max_ns:
            self.connect_max_ns = elapsed_ns

    def handshake(self, resumed: bool) -> None:
        self.tls_handshakes += 1
        self.tls_resumed += resumed

    def codes_by_status(self) -> dict[int, int]:
        """Responses by status code, once everything is flushed."""
        codes = {code: n for code, n in enumerate(self.codes) if n}
        ok = self.moments.count - sum(codes.values())
        if ok:
            codes[200] = ok
        return dict(sorted(codes.items()))

    def errors_total(self) -> int:
        if self.judged is not None:
            return sum(self.failures.values()) + sum(self.judged.values())
        return sum(self.failures.values()) + sum(self.codes[400:])

    def drain(self) -> None:
        """Counts the values recorded so far into the run's tally and the second's sums."""
        count, sum_us, max_us = _drain(self.lat, self.pending, self.moments)
        if count:
            self._count += count
            self._sum_us += sum_us
            self._max_us = max_us if self._max_us is None or max_us is None else max(self._max_us, max_us)
        if self.ulat is not None:
            assert self.umoments is not None
            _drain(self.ulat, self.upending, self.umoments)

    def flush(self, second: int) -> Second:
        """Counts the values recorded since the last flush into the run's tally and into
        one sample of the series."""
        self.drain()
        count, sum_us, max_us = self._count, self._sum_us, self._max_us
        self._count = self._sum_us = 0
        self._max_us = None
        if len(self.pending) + len(self.upending) > PENDING_MAX:
            self.histograms()
        errors_now = self.errors_total()
        failed = sum(self.failures.values())
        sample = Second(second=second, responses=count, failed=failed - self._failed_seen,
                        errors=errors_now - self._errors_seen, sum_us=sum_us, max_us=max_us)
        self._errors_seen = errors_now
        self._failed_seen = failed
        self.series.append(sample)
        return sample

    def histograms(self) -> tuple[HdrHistogram, HdrHistogram | None]:
        """The HDR histograms of everything flushed so far (uncorrected: open model only),
        with the moments complete."""
        _record(self.pending, self.hist, self.moments)
        if self.uhist is not None:
            assert self.umoments is not None
            _record(self.upending, self.uhist, self.umoments)
        return self.hist, self.uhist


def _drain(values: array, tally: Counter[int], moments: Moments) -> tuple[int, int, int | None]:
    """Counts the ns values by µs into `tally`, adds their count, sum and max to `moments`
    (the rest of the moments come from the tally, in _record), and empties the array.
    Returns the count, sum and max. (Only built-ins per value, and no numpy: its import
    is 0.1 s of CPU in every worker.)"""
    if not values:
        return 0, 0, None
    us = [(v + 500) // 1000 for v in values]
    tally.update(us)
    count, sum_us, max_us = len(us), sum(us), max(us)
    moments.count += count
    moments.sum_us += sum_us
    moments.max_us = max_us if moments.max_us is None else max(moments.max_us, max_us)
    del values[:]
    return count, sum_us, max_us


def _record(tally: Counter[int], hist: HdrHistogram, moments: Moments) -> None:
    """Moves the tally into the histogram and the sum of squares and min of `moments`,
    once per distinct value."""
    if not tally:
        return
    top = histogram.HIGHEST_US
    for value_us, count in tally.items():
        hist.record_value(min(max(value_us, 1), top), count)
    moments.sumsq_us += sum(v * v * c for v, c in tally.items())
    low = min(tally)
    moments.min_us = low if moments.min_us is None else min(moments.min_us, low)
    tally.clear()
