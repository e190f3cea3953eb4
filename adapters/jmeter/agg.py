"""JMeter samples summed as they stream in: counts by outcome and failure class, an
exact tally of the whole-millisecond elapsed times (turned into an HDR histogram at
the end), per-second series, bytes, and time-to-first-byte and connect means.

Samples arrive in `Batch`es of numpy arrays, so a JTL of millions of rows is summed
without a Python object per row. Everything is summed in integers: the figures do
not depend on how the file was cut into batches."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from toolbench.errors import ParseError, ToolbenchError
from toolbench.record import failures, histogram
from toolbench.record.numbers import MAX_VALUE
from toolbench.record.schema import Failures, SecondSample

# A failed sample whose responseCode is not a number carries the Java exception's class
# (`Non HTTP response code: org.apache.http.conn.HttpHostConnectException`). Checked in
# this order (toolbench.record.failures): a ConnectTimeoutException is a timeout, not a connect failure.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("SocketTimeoutException", "ConnectTimeoutException", "TimeoutException")),
    ("connect", ("ConnectException", "NoRouteToHostException", "UnknownHostException",
                 "PortUnreachableException", "BindException")),
    ("read", ("NoHttpResponseException", "SocketException", "EOFException", "ConnectionClosedException",
              "TruncatedChunkException", "MalformedChunkCodingException", "SSLException")),
)
MAX_STATUS = 1000


def is_count(text: str) -> bool:
    """ASCII digits that fit a 64-bit integer (str.isdigit also takes '²' and '٣', which int()
    then refuses or reads as another number)."""
    return 0 < len(text) <= 18 and text.isascii() and text.isdigit()


# A transaction controller's row says so in its response message.
TRANSACTION = "Number of samples in transaction"


@dataclass(frozen=True)
class Batch:
    """Samples as read from a JTL. `code` is the HTTP status, -1 where responseCode is not a
    number; `nonhttp` counts the failed samples with such a code by its text. A column the
    JTL does not have is None."""

    ts_ms: np.ndarray  # int64, the sample's start, epoch ms
    elapsed_ms: np.ndarray  # int64
    ok: np.ndarray  # bool
    code: np.ndarray | None = None
    nonhttp: dict[str, int] = field(default_factory=dict)
    received: np.ndarray | None = None
    sent: np.ndarray | None = None
    latency_ms: np.ndarray | None = None
    connect_ms: np.ndarray | None = None
    threads: np.ndarray | None = None

    def select(self, keep: np.ndarray) -> "Batch":
        """The rows where `keep` is true (nonhttp is the caller's to count over those)."""
        arrays = {name: (None if value is None else value[keep]) for name, value in vars(self).items()
                  if name != "nonhttp"}
        return Batch(nonhttp=self.nonhttp, **arrays)

    @classmethod
    def concat(cls, batches: list["Batch"]) -> "Batch":
        """Several batches of one JTL (the same columns) as one."""
        if len(batches) == 1:
            return batches[0]
        nonhttp: dict[str, int] = {}
        for batch in batches:
            for text, count in batch.nonhttp.items():
                nonhttp[text] = nonhttp.get(text, 0) + count
        arrays = {name: (None if value is None else np.concatenate([getattr(b, name) for b in batches]))
                  for name, value in vars(batches[0]).items() if name != "nonhttp"}
        return cls(nonhttp=nonhttp, **arrays)

    @classmethod
    def of_lists(cls, columns: dict[str, list[int]], nonhttp: dict[str, int]) -> "Batch":
        """From per-row Python lists (the slow paths); a missing key is a missing column."""
        arrays = {name: np.asarray(values, dtype=bool if name == "ok" else np.int64)
                  for name, values in columns.items()}
        return cls(nonhttp=nonhttp, **arrays)


class Aggregate:
    """The running sums of one JTL. `add` takes a batch; the figures come out at the end."""

    def __init__(self) -> None:
        self.rows = 0
        self.ok = 0
        self.classes = dict.fromkeys(failures.CLASSES, 0)
        self.has_codes = True
        self.status = np.zeros(MAX_STATUS, np.int64)
        self.times = histogram.PerRequest("jmeter", seconds_field="timeStamp")  # elapsed ms: the tally and the series
        self.ts_min: int | None = None
        self.end_max: int | None = None
        self.received: int | None = None
        self.sent: int | None = None
        self.latency = [0, 0]  # sum, samples with a response
        self.connect = [0, 0]
        self.has_latency = self.has_connect = False
        # Rows that are no request of their own: sub-results (`label-0`: a redirect followed,
        # an embedded resource) and transaction controllers' rows, which sum their children.
        self.sub_rows = 0
        self.transaction_rows = 0
        self.in_parents = 0  # requests nested in a transaction's parent sample (XML), counted
        self.labels: set[str] = set()
        self.unresolved = 0  # rows labelled like a sub-result (`x-1`) with no `x` row before them
        self.threads_max: int | None = None
        # The samples read, by start (epoch ms, lo included, hi not): one run of a JTL that
        # holds several (jmeter_runs); None: all of them. The readers drop the others.
        self.window: tuple[int, int] | None = None
        # Count sub-samples (a redirect's hops, embedded resources) instead of the samples
        # they belong to (parse --jmeter-subsamples); `held`: each thread's last row, until
        # its next row shows whether it has sub-results (jmeter_jtl._samples).
        self.subsamples = False
        self.held: dict[str, tuple[list[str], int, bool]] = {}

    def add(self, b: Batch) -> None:
        n = len(b.ts_ms)
        if n == 0:
            return
        check_columns(b)
        self.rows += n
        failed = ~b.ok
        self.ok += n - int(np.count_nonzero(failed))
        answered = self._codes(b, failed)
        if answered is not None and bool(answered.all()):
            answered = None  # every sample answered: the sums need no mask
        lo, hi = int(b.ts_ms.min()), int((b.ts_ms + b.elapsed_ms).max())
        self.ts_min = lo if self.ts_min is None else min(self.ts_min, lo)
        self.end_max = hi if self.end_max is None else max(self.end_max, hi)
        self.times.add(b.ts_ms // 1000, b.elapsed_ms, failed)
        self.received = _add(self.received, b.received, answered)
        self.sent = _add(self.sent, b.sent, None)
        self.has_latency |= _mean_into(self.latency, b.latency_ms, answered)
        self.has_connect |= _mean_into(self.connect, b.connect_ms, answered)
        if b.threads is not None:
            top = int(b.threads.max())
            self.threads_max = top if self.threads_max is None else max(self.threads_max, top)

    def _codes(self, b: Batch, failed: np.ndarray) -> np.ndarray | None:
        """Counts status codes and failure classes; returns the mask of samples that got
        an HTTP response (None when the JTL has no responseCode column)."""
        if b.code is None:
            self.has_codes = False
            return None
        answered = (b.code >= 100) & (b.code < MAX_STATUS)
        self.status += np.bincount(b.code[answered], minlength=MAX_STATUS)
        failed_codes = b.code[failed & answered]
        c4 = int(np.count_nonzero((failed_codes >= 400) & (failed_codes < 500)))
        c5 = int(np.count_nonzero((failed_codes >= 500) & (failed_codes < 600)))
        self.classes["http_4xx"] += c4
        self.classes["http_5xx"] += c5
        # A 2xx or 3xx that failed an assertion, or a number outside HTTP's range.
        self.classes["other"] += len(failed_codes) - c4 - c5
        self.classes["other"] += int(np.count_nonzero(failed & (b.code >= 0) & ~answered))
        for name, count in failures.tally(b.nonhttp, FAILURE_TABLE).items():
            self.classes[name] += count
        return answered

    def merge(self, other: "Aggregate", series: bool = True) -> None:
        """Adds the sums of another part of the same file (another run of it: series=False,
        which keeps no per-second series)."""
        self.rows += other.rows
        self.ok += other.ok
        self.sub_rows += other.sub_rows
        self.transaction_rows += other.transaction_rows
        self.in_parents += other.in_parents
        for name, count in other.classes.items():
            self.classes[name] += count
        self.has_codes &= other.has_codes
        self.status += other.status
        self.times.merge(other.times, series)
        if other.ts_min is None:
            return
        self.ts_min = other.ts_min if self.ts_min is None else min(self.ts_min, other.ts_min)
        self.end_max = other.end_max if self.end_max is None else max(self.end_max, other.end_max)
        for name in ("received", "sent"):
            mine, theirs = getattr(self, name), getattr(other, name)
            setattr(self, name, theirs if mine is None else mine if theirs is None else mine + theirs)
        self.latency = [a + b for a, b in zip(self.latency, other.latency)]
        self.connect = [a + b for a, b in zip(self.connect, other.connect)]
        self.has_latency |= other.has_latency
        self.has_connect |= other.has_connect
        if other.threads_max is not None:
            self.threads_max = max(self.threads_max or 0, other.threads_max)

    # ---- the figures ----

    def failures(self) -> Failures:
        if not self.has_codes:
            return Failures()
        return Failures(**self.classes)

    def status_codes(self) -> dict[int, int]:
        return {int(code): int(self.status[code]) for code in np.flatnonzero(self.status)}

    def duration_s(self) -> float | None:
        if self.ts_min is None or self.end_max is None:
            return None
        return (self.end_max - self.ts_min) / 1000.0

    def elapsed_stats(self) -> dict[str, float] | None:
        """Exact min, max, mean and (population) stdev of the elapsed times, in ms."""
        return self.times.stats_ms()

    def histogram(self) -> str | None:
        return self.times.encoded()

    def series(self) -> list[SecondSample]:
        """One sample per whole epoch second from the first sample's to the last's: second 0
        is the second the first sample started in (JMeter stamps a sample with its start)."""
        return self.times.series()

    def latency_mean_ms(self) -> float | None:
        return self.latency[0] / self.latency[1] if self.has_latency and self.latency[1] else None

    def connect_mean_ms(self) -> float | None:
        return self.connect[0] / self.connect[1] if self.has_connect and self.connect[1] else None


def check_columns(b: Batch) -> None:
    """Every figure and every column's sum within MAX_VALUE, so that no int64 sum here can
    wrap round (numpy's integer sums do so silently)."""
    for name in ("ts_ms", "elapsed_ms", "received", "sent", "latency_ms", "connect_ms", "threads"):
        values = getattr(b, name)
        if values is None or not len(values):
            continue
        top = int(values.max())
        if top > MAX_VALUE:
            raise ValueError(f"a sample's {name} is {top}, beyond any figure a load tool measures")
        # The sum is summed only when the largest value times the count could pass the bound.
        if name != "ts_ms" and top * len(values) > MAX_VALUE and float(values.sum(dtype=np.float64)) > MAX_VALUE:
            raise ValueError(f"the samples' {name} add up to more than any run measures")


def _add(total: int | None, values: np.ndarray | None, mask: np.ndarray | None) -> int | None:
    if values is None:
        return total
    part = int(values[mask].sum()) if mask is not None else int(values.sum())
    return part if total is None else total + part


def _mean_into(acc: list[int], values: np.ndarray | None, mask: np.ndarray | None) -> bool:
    """Adds the sum and count of `values` where `mask` (all rows when None) into acc."""
    if values is None:
        return False
    chosen = values[mask] if mask is not None else values
    acc[0] += int(chosen.sum())
    acc[1] += len(chosen)
    return True


class JtlError(ToolbenchError):
    """A JTL that cannot be read; the adapter turns it into a ParseError. `line` is the
    line of the file it is about, where known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(f"line {line}: {message}" if line is not None else message)
        self.message = message
        self.line = line

    def __reduce__(self):  # across processes with its line number apart
        return type(self), (self.message, self.line)


@dataclass(frozen=True)
class Jtl:
    aggregate: Aggregate
    kind: str  # "csv", "csv without header", "xml"
    url: str | None = None
    notes: list[str] = field(default_factory=list)


def no_sample(agg: Aggregate, otherwise: str) -> str:
    """Why a JTL gave no request to count."""
    if agg.transaction_rows:
        return (f"the JTL holds only transaction controllers' samples ({agg.transaction_rows}), which sum requests "
                f"it does not hold: no request to count")
    return otherwise


def add(agg: Aggregate, batch: Batch, line: int | None) -> None:
    """Adds a batch whose first sample is on `line`."""
    try:
        agg.add(batch)
    except ValueError as exc:
        raise JtlError(str(exc), line) from None
    except ParseError as exc:  # from the aggregator: "jmeter: cannot parse output: <what>: <why>"
        raise JtlError(str(exc).split(": ", 2)[-1], line) from None
