"""The common result schema: one versioned RunResult per executed matrix cell.

Every metric is optional: `None` means the tool did not report it and toolbench
could not derive it, and it is shown as absent, never as 0. `fidelity` says, for
each metric that has a value, whether the tool reported it or toolbench derived it.
"""
from __future__ import annotations

import dataclasses
import enum
from dataclasses import dataclass, field
from typing import Any, Mapping

from toolbench.errors import SchemaError
from toolbench.record import codec
# Part of the schema, kept in their own module: toolbench.record.schema.GeneratorCost etc. stay valid.
from toolbench.record.observed import (CellMachine, GeneratorCost, ProbeSummary, ProcessCost, ServerCost,  # noqa: F401
                                       TlsHandshakes, cpu_us_per_request)
from toolbench.record.observed import TargetLogCounts  # noqa: F401
from toolbench.record.observed import NetworkCounters  # noqa: F401
from toolbench.record.observed import PathRequests, TargetRequests  # noqa: F401

SCHEMA_VERSION = 5  # 2: the tool's figures moved into RunResult.measurement; 3: Measurement.coordinated_omission;
#                     4: RunResult.generators, the parts of a cell run on several generators;
#                     5: Status.DISTURBED and RunResult.machine, the machine around the cell



class Fidelity(str, enum.Enum):
    REPORTED = "reported"
    DERIVED = "derived"
    ABSENT = "absent"


class Status(str, enum.Enum):
    OK = "ok"
    FAILED = "failed"
    TIMED_OUT = "timed_out"
    TOOL_MISSING = "tool_missing"
    UNSUPPORTED = "unsupported"
    INTERRUPTED = "interrupted"
    PARTIAL = "partial"  # run on several generators, and some of their parts failed: not summed
    # Ran to its end, but foreign work on the machine (or a hypervisor's steal) took more than the
    # scenario's limit during it: its figures are kept and shown, never used in a verdict.
    DISTURBED = "disturbed"


class Omission(str, enum.Enum):
    """Whether a tool's latency counts the time a request waited to be sent (coordinated omission)."""

    CORRECTED = "corrected"  # timed from each request's intended send time (wrk2, the engine's open model)
    NOT_CORRECTED = "not_corrected"  # timed from the actual send: a stalled sender's wait is not counted


class LoadModel(str, enum.Enum):
    CLOSED = "closed"  # N connections, each sends its next request when the last one ends
    OPEN = "open"  # requests are sent at a fixed rate whatever the responses do


@dataclass(frozen=True)
class Identity:
    scenario: str
    cell_id: str
    tool: str
    tool_version: str | None = None
    target_label: str | None = None
    url: str | None = None
    concurrency: int | None = None
    keepalive: bool | None = None
    repetition: int = 1
    model: LoadModel = LoadModel.CLOSED
    rate_rps: float | None = None
    params: dict[str, str] = field(default_factory=dict)
    variant: str | None = None  # a named tool configuration, e.g. `locust-2p` for Locust on 2 processes
    # http1, https, h2 or h2c (toolbench.scenario.read.PROTOCOLS); a record made before the
    # protocol was a dimension was plain HTTP/1.1, as toolbench then only spoke.
    protocol: str = "http1"

    @property
    def label(self) -> str:
        """How results are told apart in tables and charts: the variant, else the tool."""
        return self.variant or self.tool


@dataclass(frozen=True)
class Timing:
    started_at: str | None = None  # ISO 8601, UTC
    ended_at: str | None = None
    duration_s: float | None = None  # as the tool measured it
    wall_s: float | None = None  # as toolbench measured it, around the tool's process


@dataclass(frozen=True)
class Failures:
    """Failed requests by class. `http` holds HTTP errors whose class the tool does not tell."""

    connect: int | None = None
    timeout: int | None = None
    read: int | None = None
    reset: int | None = None  # the connection was reset by the peer (TCP RST)
    http_4xx: int | None = None
    http_5xx: int | None = None
    http: int | None = None
    other: int | None = None
    check: int | None = None  # the response failed a workload's check (toolbench.scenario.workload.Checks)


@dataclass(frozen=True)
class Counts:
    requests_total: int | None = None
    requests_ok: int | None = None
    requests_failed: int | None = None
    failures: Failures = field(default_factory=Failures)
    status_codes: dict[int, int] = field(default_factory=dict)
    connections_opened: int | None = None


@dataclass(frozen=True)
class Rates:
    """Requests per second. `rps` is the tool's own figure; `rps_derived` is the attempted rate
    (every request, failed ones included) and `rps_ok` the successful rate, which is what
    throughput means in toolbench's comparisons: a server answering 503 fast is not fast."""

    rps: float | None = None  # as the tool reported it
    rps_derived: float | None = None  # attempted: requests_total / duration_s, computed by toolbench
    rps_ok: float | None = None  # successful: requests_ok / duration_s (the tool's rps when none failed)


@dataclass(frozen=True)
class Transfer:
    received_bytes: int | None = None
    sent_bytes: int | None = None
    received_bytes_per_s: float | None = None


PERCENTILES: tuple[tuple[str, float], ...] = (
    ("p50_ms", 50.0),
    ("p66_ms", 66.0),
    ("p75_ms", 75.0),
    ("p80_ms", 80.0),
    ("p90_ms", 90.0),
    ("p95_ms", 95.0),
    ("p98_ms", 98.0),
    ("p99_ms", 99.0),
    ("p999_ms", 99.9),
)


@dataclass(frozen=True)
class Percentiles:
    p50_ms: float | None = None
    p66_ms: float | None = None
    p75_ms: float | None = None
    p80_ms: float | None = None
    p90_ms: float | None = None
    p95_ms: float | None = None
    p98_ms: float | None = None
    p99_ms: float | None = None
    p999_ms: float | None = None


@dataclass(frozen=True)
class TimesRow:
    """One row of ab's Connection Times table: whole milliseconds (sd to 0.1 ms)."""

    min_ms: float | None = None
    mean_ms: float | None = None
    sd_ms: float | None = None
    median_ms: float | None = None
    max_ms: float | None = None


@dataclass(frozen=True)
class ConnectionTimes:
    """ab's Connection Times table, as ab printed it: `connect` is the TCP connect,
    `processing` from the connect to the last byte, `waiting` from the sent request to the
    first byte back, `total` connect + processing (the whole request)."""

    connect: TimesRow = field(default_factory=TimesRow)
    processing: TimesRow = field(default_factory=TimesRow)
    waiting: TimesRow = field(default_factory=TimesRow)
    total: TimesRow = field(default_factory=TimesRow)


@dataclass(frozen=True)
class Latency:
    """Response time of whole requests. `resolution_ms` is the tool's rounding step:
    a value below it (ab's integer milliseconds, siege's hundredths of a second)
    means "less than one step", not zero."""

    min_ms: float | None = None
    mean_ms: float | None = None
    max_ms: float | None = None
    stdev_ms: float | None = None
    percentiles: Percentiles = field(default_factory=Percentiles)
    connect_mean_ms: float | None = None
    ttfb_mean_ms: float | None = None
    resolution_ms: float | None = None
    connection_times: ConnectionTimes | None = None  # ab's own table, whole ms


@dataclass(frozen=True)
class RequestFigures:
    """One named request of a workload, as the tool counted it."""

    name: str
    counts: Counts = field(default_factory=Counts)
    latency: Latency = field(default_factory=Latency)
    rates: Rates = field(default_factory=Rates)


@dataclass(frozen=True)
class SiegeFigures:
    """What siege alone reports. `concurrency` is siege's "Concurrency": the sum of its
    transactions' times over the elapsed time, i.e. the mean number of connections busy
    (not a setting). `availability_pct` is transactions / (transactions + socket
    failures) x 100: siege counts a 5xx both as a transaction and as a failure."""

    concurrency: float | None = None  # connections, mean over the run
    availability_pct: float | None = None


@dataclass(frozen=True)
class SecondSample:
    second: int  # whole seconds since the first request
    requests: int
    errors: int | None = None
    latency_mean_ms: float | None = None
    latency_max_ms: float | None = None


@dataclass(frozen=True)
class Artifact:
    role: str  # stdout, stderr, csv, tsv, json, log, jtl, ...
    path: str  # relative to the run directory, so the folder publishes as it is


@dataclass(frozen=True)
class Warmup:
    """The unmeasured run of the same tool, against the same target with the same
    concurrency, keep-alive and request, just before the cell (the scenario's `warmup`). Its
    output is kept in `path` and never parsed into the result. It warms the target and the
    machine, not the tool's own next process: a tool's ramp (its JVM's JIT, Locust's spawn)
    is in the cell all the same (see RunResult.ramp_s)."""

    duration_s: float  # as asked of the tool
    wall_s: float | None = None  # as toolbench measured it, around the tool's process
    ended_at: str | None = None  # ISO 8601, UTC: before the cell's measured run started
    path: str | None = None  # its raw folder, relative to the run directory


@dataclass(frozen=True)
class Outcome:
    status: Status
    exit_code: int | None = None
    error: str | None = None
    artifacts: list[Artifact] = field(default_factory=list)


# Metric names that carry a fidelity entry: the dotted path of the field in Measurement.
METRICS: frozenset[str] = frozenset(
    ["timing.duration_s", "rates.rps", "rates.rps_derived", "rates.rps_ok"]
    + [f"counts.{f}" for f in ("requests_total", "requests_ok", "requests_failed", "status_codes")]
    + [f"counts.failures.{f.name}" for f in dataclasses.fields(Failures)]
    + [f"transfer.{f.name}" for f in dataclasses.fields(Transfer)]
    + [f"latency.{f.name}" for f in dataclasses.fields(Latency) if f.name not in ("percentiles", "connection_times")]
    + [f"latency.percentiles.{name}" for name, _ in PERCENTILES]
    + ["counts.connections_opened", "histogram", "latency_uncorrected", "histogram_uncorrected", "series"]
)


@dataclass(frozen=True)
class Measurement:
    """What an adapter's parse() reads from a tool's output: the tool's own view of the run.

    `url`, `concurrency` and `tool_version` are what the output itself says, used when
    normalizing output that toolbench did not run."""

    tool: str
    timing: Timing = field(default_factory=Timing)
    counts: Counts = field(default_factory=Counts)
    rates: Rates = field(default_factory=Rates)
    transfer: Transfer = field(default_factory=Transfer)
    latency: Latency = field(default_factory=Latency)
    histogram: str | None = None  # HdrHistogram, base64 of the compressed V2 encoding, in µs
    # The step of the per-request times the histogram was built from (ab -g, JMeter and
    # Locust give whole milliseconds); None: as fine as the histogram itself.
    histogram_resolution_ms: float | None = None
    # Open model only: latency from the actual send, beside `latency`, which runs from the
    # intended send time (coordinated omission corrected, as wrk2 does).
    latency_uncorrected: Latency | None = None
    histogram_uncorrected: str | None = None
    # Whether `latency` runs from the intended send time; None: the tool's adapter does not say.
    coordinated_omission: Omission | None = None
    series: list[SecondSample] = field(default_factory=list)
    fidelity: dict[str, Fidelity] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    url: str | None = None
    concurrency: int | None = None
    tool_version: str | None = None
    siege: SiegeFigures | None = None  # siege's own figures, beside the common ones
    # A workload's figures per request name, which add up to the cell's counts; empty: the tool
    # gives none (or the cell sent one request).
    by_request: list[RequestFigures] = field(default_factory=list)

    def __post_init__(self) -> None:
        unknown = set(self.fidelity) - METRICS
        if unknown:
            raise SchemaError(f"unknown metric names in fidelity: {sorted(unknown)}")

    def fidelity_of(self, metric: str) -> Fidelity:
        if metric not in METRICS:
            raise SchemaError(f"unknown metric {metric!r}")
        value: Any = self
        for part in metric.split("."):
            value = getattr(value, part)
        if value is None or value == [] or value == {}:
            return Fidelity.ABSENT
        return self.fidelity.get(metric, Fidelity.REPORTED)


@dataclass(frozen=True)
class ClockOffset:
    """A generator's clock against toolbench's, measured over SSH before the run: the
    offset read from the round trip with the least time (its error is at most half that)."""

    offset_ms: float  # the generator's clock minus toolbench's
    rtt_ms: float
    round_trips: int


@dataclass(frozen=True)
class GeneratorPart:
    """A cell's part run on one of several generators: its share of the load, its own
    measurement and cost, kept beside the merged figures of RunResult.measurement."""

    name: str  # the scenario's name for the generator
    host: str
    status: Status
    measurement: Measurement
    concurrency: int | None = None
    rate_rps: float | None = None
    requests: int | None = None  # its share of a cell stopped by a request count
    exit_code: int | None = None
    error: str | None = None
    cost: GeneratorCost | None = None
    generator_bound: bool | None = None  # its host's CPU was the limit, by toolbench.hosts.monitor's rule
    clock: ClockOffset | None = None
    path: str | None = None  # its raw folder, relative to the run directory


@dataclass(frozen=True)
class RunResult:
    """One executed cell: what toolbench knows of it (identity, outcome, what it cost, the
    probe, toolbench's own notes) around what the tool measured. A cell that never ran
    (unsupported, tool missing) still has a Measurement, holding only its timing."""

    identity: Identity
    outcome: Outcome
    measurement: Measurement = None  # type: ignore[assignment]  # filled in by __post_init__
    cost: GeneratorCost | None = None
    probe: ProbeSummary | None = None
    notes: list[str] = field(default_factory=list)  # toolbench's own; the tool's are in measurement.notes
    server_cost: ServerCost | None = None  # the target's cost, when toolbench started and watched it
    warmup: Warmup | None = None  # None: no warm-up preceded the cell
    # The tool's known ramp (toolbench.contract.adapter.Adapter.ramp_s) when it has one: a cell
    # measured over less than toolbench.contract.ramp.RAMP_MULTIPLE times it is flagged.
    ramp_s: float | None = None
    # Several generators: each one's part; `measurement` is then their merge, made only when
    # every part succeeded (else the status is PARTIAL). Empty: the cell ran on one generator.
    generators: list[GeneratorPart] = field(default_factory=list)
    machine: CellMachine | None = None  # the machine around the cell; None: not observed
    # The TLS handshakes the target served the cell (https, h2), from its own log: absent for a
    # cell in clear, and for a target toolbench did not start or that runs on another machine.
    # An older record simply lacks it: no new schema version.
    tls: TlsHandshakes | None = None
    # The lines the target (one toolbench started here) wrote to its error logs during the cell, by
    # kind (toolbench.servers.target_log); None: not read. An older record simply lacks it.
    target_log: TargetLogCounts | None = None
    # The kernel's network counters over the cell (toolbench.hosts.netcounters), one per machine: the
    # target's and the generator's, or one "both" when they are the same machine. Empty: not read.
    # An older record simply lacks it.
    network: list[NetworkCounters] = field(default_factory=list)
    # A workload's cell: the requests the target's own access log shows, per method and path, by status
    # and per second (toolbench.servers.access_log); None: not kept. An older record simply lacks it.
    target_requests: TargetRequests | None = None
    schema_version: int = SCHEMA_VERSION

    def __post_init__(self) -> None:
        if self.measurement is None:
            object.__setattr__(self, "measurement", Measurement(tool=self.identity.tool))

    @property
    def all_notes(self) -> list[str]:
        """The tool's notes, then toolbench's."""
        return self.measurement.notes + self.notes

    def fidelity_of(self, metric: str) -> Fidelity:
        return self.measurement.fidelity_of(metric)

    def to_dict(self) -> dict[str, Any]:
        return codec.encode(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "RunResult":
        """A record of any schema version toolbench has written, migrated to this one."""
        from toolbench.record import migrate  # it knows every older layout; loaded with the first record

        return codec.decode(cls, migrate.result(data), "RunResult")
