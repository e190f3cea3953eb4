"""What toolbench observes around a tool's run, part of the result schema (toolbench.record.schema):
what the run cost the generator and the target, by toolbench's monitors, and what toolbench's
own probe requests measured during it. Absent figures are None, never 0."""
from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Self


@dataclass(frozen=True)
class ProcessCost:
    """What a watched process tree cost its machine, the figures every monitor of toolbench gives
    alike: the generator's (GeneratorCost) and the target's (ServerCost). CPU seconds are those the
    kernel counted for the tree; CPU % is of one core (a tree on several cores can exceed 100).
    Peaks are over the monitor's samples. Connections and TIME-WAIT are not among them: each
    kind counts them on sockets of its own (the tool's to the target, the server's port)."""

    cpu_user_s: float | None = None
    cpu_system_s: float | None = None
    cpu_mean_pct: float | None = None
    cpu_peak_pct: float | None = None
    cpu_us_per_request: float | None = None
    rss_peak_bytes: int | None = None
    threads_peak: int | None = None
    processes_peak: int | None = None
    open_files_peak: int | None = None  # open descriptors: files, sockets, pipes
    sockets_peak: int | None = None  # socket descriptors held by the tree's processes
    samples: int = 0
    interval_s: float | None = None
    monitor_cpu_s: float | None = None  # the monitor's own CPU, its `ss` calls included
    # Worker processes (cores) the server may keep busy, known of a server toolbench started;
    # a GeneratorCost leaves it None (unknown).
    workers: int | None = None
    notes: list[str] = field(default_factory=list)

    @classmethod
    def from_shared(cls, other: ProcessCost) -> Self:
        """This kind of cost with `other`'s shared figures (a sampler's ServerCost read as a
        GeneratorCost, say); the figures only this kind has are absent."""
        return cls(**{f.name: getattr(other, f.name) for f in fields(ProcessCost)})


@dataclass(frozen=True)
class GeneratorCost(ProcessCost):
    """What running the tool cost the generator, from toolbench's monitor of the tool's process
    tree; `host_*` and `time_wait_peak` count the whole host."""

    connections_peak: int | None = None  # the tool's established connections to the target
    time_wait_peak: int | None = None  # host-wide
    host_established_peak: int | None = None
    load_avg_1m_peak: float | None = None
    host_cpu_peak_pct: float | None = None  # the busiest core
    host_memory_used_peak_bytes: int | None = None
    tcp_cwnd_mean: float | None = None  # segments, the tool's connections to the target
    tcp_rcv_space_mean: float | None = None  # bytes
    tcp_rtt_mean_ms: float | None = None


@dataclass(frozen=True)
class ServerCost(ProcessCost):
    """What serving a cell cost the target, from toolbench's server monitor over the target's
    whole process tree (every process group toolbench started for it). CPU seconds are those
    spent from the monitor's start to its stop, in the kernel's clock ticks (10 ms).
    Connections are the server side of its port, by `ss`."""

    connections_peak: int | None = None  # established connections on the server's port
    connections_by_state_peak: dict[str, int] = field(default_factory=dict)  # ss state name -> its peak
    time_wait_peak: int | None = None  # on the server's port, the server's side
    accept_queue_peak: int | None = None  # connections waiting to be accepted (the listen queue)
    listen_backlog: int | None = None  # the listen queue's size, as the kernel applies it
    wall_s: float | None = None  # from the monitor's start to its stop


def cpu_us_per_request(cpu_user_s: float | None, cpu_system_s: float | None,
                       requests_total: int | None) -> float | None:
    """CPU microseconds per request; absent when the CPU time or the count is unknown, or no
    request was made."""
    if cpu_user_s is None or not requests_total:
        return None
    return (cpu_user_s + (cpu_system_s or 0.0)) / requests_total * 1e6


@dataclass(frozen=True)
class ProbeSummary:
    """Independent requests timed by toolbench, each on a fresh connection: `baseline_ms`
    before the load, `samples_ms` during it (at `sample_offsets_s` after the tool started).
    `tool_ms` is the tool's own figure compared with the probe's median (`tool_metric`
    names it); the flags and `findings` say what the comparison shows."""

    baseline_ms: list[float] = field(default_factory=list)
    samples_ms: list[float] = field(default_factory=list)
    failures: int = 0
    findings: list[str] = field(default_factory=list)
    sample_offsets_s: list[float] = field(default_factory=list)
    baseline_failures: int = 0
    errors: list[str] = field(default_factory=list)  # distinct failure messages, a few
    interval_s: float | None = None
    baseline_p50_ms: float | None = None
    p50_ms: float | None = None
    p95_ms: float | None = None
    max_ms: float | None = None
    slowdown: float | None = None  # p50_ms / baseline_p50_ms
    tool_ms: float | None = None
    tool_metric: str | None = None  # "p50_ms" or "mean_ms"
    server_bound: bool | None = None  # the probe slowed down far beyond its baseline
    tool_disagrees: bool | None = None  # the tool's figure and the probe's differ beyond tolerance


@dataclass(frozen=True)
class ForeignProcess:
    """A process outside the target's, the tool's and toolbench's trees, busy during a cell."""

    pid: int
    name: str
    cpu_pct: float  # of one core, over the cell

    def __str__(self) -> str:  # as exports write it, one a line
        return f"{self.name} (pid {self.pid}) {self.cpu_pct:g} %"


@dataclass(frozen=True)
class CellMachine:
    """What the machine running the cell did besides the cell (toolbench.run.quiet): the CPU
    of every process that is neither the target's, the tool's nor toolbench's, and the time a
    hypervisor stole, each as a share of one core over the cell's wall time; what the cell
    inherited (sockets in TIME_WAIT when it started, the settle it waited); its place in the run's
    order; and the CPUs its tool was allowed. None: not measured (a remote generator)."""

    foreign_cpu_pct: float | None = None
    steal_pct: float | None = None
    foreign: list[ForeignProcess] = field(default_factory=list)  # the busiest, at most five
    time_wait_at_start: int | None = None  # host-wide
    settle_s: float | None = None  # waited before the cell for the previous one's connections to close
    position: int | None = None  # 1-based, in the order the run's cells ran
    tool_cpus: list[int] | None = None  # the tool's affinity as the kernel gave it; None: not read
    disturbed_by: str | None = None  # why the cell is disturbed, when it is
    # CPU seconds over the tool's run (toolbench.run.quiet): the processes seen outside the cell
    # with the children they reaped (foreign_cpu_pct is taken from it), the machine's total
    # (/proc/stat: its CPUs' time less idle and steal; runs before 2026-12-03 summed its busy
    # ticks) and the known processes' own time (the tool, the target, toolbench, kernel threads;
    # None: the tool's CPU unknown). Runs before the evening of 2026-12-03 took foreign_cpu_pct
    # from the larger of the seen (without reaped children) and the total less the known, which
    # holds the kernel's work on idle CPUs and so grows with the cell's own rate.
    cpu_total_s: float | None = None
    cpu_known_s: float | None = None
    cpu_seen_s: float | None = None


@dataclass(frozen=True)
class TlsHandshakes:
    """The TLS connections a target toolbench started served during a cell, from its own log
    (toolbench.servers.tls_log): each connection that carried a request, whether its handshake
    was full (a new session) or resumed one (from the server's session cache or a ticket), and
    the HTTP version it carried. toolbench's probe's connections are left out of every count
    (`probe_connections` says how many there were). `tls_version` and `cipher` are the most
    common over the connections; `lines_unread` counts log lines that did not read as one."""

    connections: int
    handshakes_full: int
    handshakes_resumed: int
    http1_connections: int = 0  # HTTP/1.1 (or 1.0) over TLS
    http2_connections: int = 0  # HTTP/2 over TLS, by ALPN
    tls_version: str | None = None  # "TLSv1.3"
    cipher: str | None = None  # as OpenSSL names it: "TLS_AES_256_GCM_SHA384"
    probe_connections: int = 0
    lines_unread: int = 0

    def __post_init__(self) -> None:
        from toolbench.record import invariants  # it reads the schema, which reads this module

        invariants.check_tls(self)

    @property
    def resumed_pct(self) -> float | None:
        """Resumed handshakes of all, in %; None when there was no connection."""
        return self.handshakes_resumed / self.connections * 100.0 if self.connections else None


# The kinds TargetLogCounts counts, in the order the report lists them.
TARGET_LOG_KINDS = ("limit_req", "limit_req_delayed", "upstream_timeout", "upstream_refused", "upstream_queue_full",
                    "upstream_reset", "worker_connections", "open_files", "listen_queue_full", "worker_timeout",
                    "other")
# Each kind in words, after its count: "1,204 requests refused by nginx's limit_req (503)".
TARGET_LOG_WORDS = {
    "limit_req": "requests refused by nginx's limit_req (503)",
    "limit_req_delayed": "requests delayed by nginx's limit_req burst",
    "upstream_timeout": "upstream timeouts (504)",
    "upstream_refused": "connections to the upstream refused (502)",
    "upstream_queue_full": "connections to the upstream's unix socket refused, its listen queue full (502)",
    "upstream_reset": "upstream connections reset or closed before the answer (502)",
    "worker_connections": "times nginx ran out of worker_connections (closing idle connections or dropping new ones)",
    "open_files": "\"Too many open files\" errors",
    "listen_queue_full": "uWSGI warnings that its listen queue was full (one a second while it is)",
    "worker_timeout": "gunicorn workers killed by WORKER TIMEOUT",
    "other": "other error lines",
}


@dataclass(frozen=True)
class TargetLogCounts:
    """The lines a target toolbench started wrote to its own error logs while a cell ran
    (toolbench.servers.target_log): nginx's error.log, uWSGI's and gunicorn's stderr, each read from
    where it stood when the cell started to where it stood when it stopped, one line one count,
    by kind. toolbench's probe's requests during the cell are among them (a few). `logs` names
    the logs read; `lines_unread` counts lines that did not read as a line of their log (too long,
    not its format, a traceback's continuation)."""

    limit_req: int = 0  # nginx "limiting requests": refused by limit_req (503 unless limit_req_status says)
    limit_req_delayed: int = 0  # nginx "delaying request": held by limit_req's burst, then served
    upstream_timeout: int = 0  # nginx "upstream timed out" (504)
    upstream_refused: int = 0  # nginx: connecting to the upstream refused (111) (502)
    upstream_queue_full: int = 0  # nginx: connecting to the upstream's unix socket: its listen queue full (11) (502)
    upstream_reset: int = 0  # nginx: the upstream reset or closed the connection before its answer (502)
    worker_connections: int = 0  # nginx "worker_connections are not enough" (reusing idle ones, or dropping)
    open_files: int = 0  # any: "Too many open files" (24)
    listen_queue_full: int = 0  # uWSGI "listen queue of socket ... full": its master's, once a second while full
    worker_timeout: int = 0  # gunicorn "WORKER TIMEOUT": a worker killed by its arbiter
    other: int = 0  # an error or warning line of none of the kinds above
    lines_unread: int = 0
    logs: list[str] = field(default_factory=list)  # "nginx", "uwsgi", "gunicorn"

    def __post_init__(self) -> None:
        from toolbench.errors import SchemaError

        for name in (*TARGET_LOG_KINDS, "lines_unread"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise SchemaError(f"target_log.{name}: {value!r} is not a whole number of lines")

    def counted(self) -> dict[str, int]:
        """The kinds with at least one line, in TARGET_LOG_KINDS's order."""
        return {name: n for name in TARGET_LOG_KINDS if (n := getattr(self, name))}


NETWORK_MACHINES = ("target", "generator", "both")


@dataclass(frozen=True)
class NetworkCounters:
    """The kernel's network counters on one machine over a cell (toolbench.hosts.netcounters):
    each a delta from the cell's start to its end, machine-wide (whatever else ran there is in
    them too). `machine`: the target's, the generator's, or "both" when they are one machine
    (one set, never counted twice). `resets_received` is Tcp EstabResets (connections reset from
    ESTABLISHED or CLOSE_WAIT); `accept_queue_peak` the most connections waiting in the target's
    listening socket at a sample of its monitor. None: not read."""

    machine: str
    listen_overflows: int | None = None  # TcpExt ListenOverflows: the accept queue was full
    listen_drops: int | None = None  # TcpExt ListenDrops
    syn_retransmits: int | None = None  # TcpExt TCPSynRetrans
    resets_sent: int | None = None  # Tcp OutRsts
    resets_received: int | None = None  # Tcp EstabResets
    time_wait_at_end: int | None = None  # sockets in TIME_WAIT when the cell ended
    accept_queue_peak: int | None = None

    def __post_init__(self) -> None:
        from toolbench.record import invariants  # it reads the schema, which reads this module

        invariants.check_network(self)

    def __str__(self) -> str:  # as exports write it, one a line
        shown = ", ".join(f"{f.name} {getattr(self, f.name)}" for f in fields(self)
                          if f.name != "machine" and getattr(self, f.name) is not None)
        return f"{self.machine}: {shown or 'nothing read'}"


@dataclass(frozen=True)
class PathRequests:
    """The requests of one method and path (the query left out) a target toolbench started served
    during a cell, from its nginx's access log (toolbench.servers.access_log): how many, by status,
    and per second of the cell (`per_second[0]` is the second from the cell's start, each request in
    the second its log line was written, as it was answered)."""

    method: str
    path: str
    count: int
    by_status: dict[int, int] = field(default_factory=dict)
    per_second: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class TargetRequests:
    """What the target's own access log says a cell sent it, per method and path: kept for the
    cells of a workload (issue 32), to judge each tool's fidelity to it (the mix, the pace, the
    stages). toolbench's probe's requests are left out (`probe_requests` says how many);
    `other_requests` counts those beyond the first MAX_PATHS methods and paths (counted, not kept
    by path); `lines_unread` the log lines that did not read as one of its lines. `started_epoch_s`:
    the Unix time of the cell's start, second 0 of every `per_second`."""

    paths: list[PathRequests] = field(default_factory=list)
    requests: int = 0
    other_requests: int = 0
    probe_requests: int = 0
    lines_unread: int = 0
    started_epoch_s: float | None = None

    def __post_init__(self) -> None:
        from toolbench.errors import SchemaError

        for name in ("requests", "other_requests", "probe_requests", "lines_unread"):
            _whole(getattr(self, name), f"target_requests.{name}")
        for each in self.paths:
            where = f"target_requests.paths[{each.method} {each.path}]"
            for n in (each.count, *each.by_status.values(), *each.per_second):
                _whole(n, where)
            if sum(each.by_status.values()) != each.count or sum(each.per_second) != each.count:
                raise SchemaError(f"{where}: {each.count} requests, but {sum(each.by_status.values())} by status "
                                  f"and {sum(each.per_second)} by second")
        if sum(p.count for p in self.paths) + self.other_requests != self.requests:
            raise SchemaError(f"target_requests: {self.requests} requests, but the paths and the others "
                              f"add up to {sum(p.count for p in self.paths) + self.other_requests}")

    def count(self, path: str, method: str | None = None) -> int:
        """The requests to `path` (of `method`, or of any)."""
        return sum(p.count for p in self.paths if p.path == path and (method is None or p.method == method))


def _whole(value: object, where: str) -> None:
    from toolbench.errors import SchemaError

    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise SchemaError(f"{where}: {value!r} is not a whole number of requests")
