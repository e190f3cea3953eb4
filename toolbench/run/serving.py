"""The targets of a run, served in turn: each started once for all its cells (or once per
cell with `restart: per-cell`), sized for the highest concurrency of its cells, and watched
while each cell runs. How a target starts is passed in (a `TargetStarter`), so that the
runner's logic can be driven without starting any process."""
from __future__ import annotations

import contextlib
import dataclasses
import itertools
import os
import shlex
import socket
import ssl
import urllib.parse
import warnings
from pathlib import Path
from typing import Callable, ContextManager, Iterator, Mapping

from toolbench.contract.host import Host
from toolbench.errors import Notice
from toolbench.hosts import netcounters
from toolbench.hosts.lifeline import Lifeline, watching
from toolbench.hosts.placement import Pin
from toolbench.hosts.ssh import SSHHost
from toolbench.record.manifest import Component, TargetRecord
from toolbench.record.schema import ServerCost, TargetLogCounts, TlsHandshakes
from toolbench.record.observed import NetworkCounters
from toolbench.run.plan import PlannedCell
from toolbench.scenario.read import Scenario
from toolbench.scenario.targets import TargetSpec
from toolbench.servers import cost, remote, stacks, tls_log
from toolbench.servers import target_log as error_logs
from toolbench.servers import access_log
from toolbench.record.observed import TargetRequests
from toolbench.servers.process import RunningTarget, Sampler
from toolbench.servers.ready import wait_until_ready

# (spec, its folder in the run, the highest concurrency it will serve) -> the running target
TargetStarter = Callable[[TargetSpec, Path, int], ContextManager[RunningTarget]]
TLS_HANDSHAKE_TIMEOUT_S = 5.0


def local_starter(life: Lifeline | None, pin: Pin | None = None,
                  limits: Mapping[str, int] | None = None) -> TargetStarter:
    """Targets started on this machine, every process recorded in the run's lifeline and, when
    placed, on the target's CPUs (`pin`), with the scenario's ulimits raised (`limits`)."""

    @contextlib.contextmanager
    def start(spec: TargetSpec, workdir: Path, max_concurrency: int) -> Iterator[RunningTarget]:
        with watching(life), stacks.start(spec, workdir, max_concurrency, pin, limits) as target:
            yield target

    return start


_LOGS = ("target.stdout.txt", "target.stderr.txt")


def remote_starter(host: SSHHost, address: str, tools: Mapping[str, str],
                   places: Mapping[str, str], cpus: tuple[int, ...] | None = None) -> TargetStarter:
    """Targets on another machine (`hosts.target`, at `address`, its programs at `tools`,
    given at `places` (file:line) in the scenario):
    a bundled stack (toolbench.servers.remote) or a command, each started there in process
    groups of its own, in a folder of its own, its output kept there and fetched when it
    stops; checked ready from this machine; stopped by killing its groups. A bundled stack's
    cost is sampled there; a command's is not (absent). `cpus`: where its servers run there
    (taskset); toolbench's own commands and sampler there are not placed."""
    # Checked once, before any target starts: a missing taskset there fails the run, not each target.
    placed = host.with_cpus(cpus) if cpus is not None else host

    @contextlib.contextmanager
    def start(spec: TargetSpec, workdir: Path, max_concurrency: int) -> Iterator[RunningTarget]:
        if spec.bundled:
            with remote.start(host, spec, workdir, max_concurrency, address, tools, places, placed) as target:
                yield RemoteTarget.of(target, host)
            return
        workdir.mkdir(parents=True, exist_ok=True)
        assert spec.url is not None, "a command or a URL target has its url (servers.spec)"
        if spec.command is None:
            wait_until_ready(spec.ready, spec.url, spec.name or "target")
            yield RunningTarget(base_url=spec.url, label=spec.display)
            return
        folder = host.workspace(workdir)
        try:
            # Its output goes to files there: a server's log streamed over SSH while nobody
            # reads it would fill the channel and stall the server.
            argv = ["sh", "-c", 'exec "$@" >target.stdout.txt 2>target.stderr.txt', "sh", *shlex.split(spec.command)]
            running = placed.start(argv, cwd=Path(folder), stdout=workdir / "launch.stdout.txt",
                                 stderr=workdir / "launch.stderr.txt")
            try:
                wait_until_ready(spec.ready, spec.url, spec.name or "target")
                yield RemoteTarget.of(RunningTarget(base_url=spec.url, label=spec.display), host)
            finally:
                running.wait(0)  # kills its process group there
        finally:
            host.collect(folder, list(_LOGS), workdir)

    return start


@dataclasses.dataclass(frozen=True)
class Batch:
    """Cells served by one start of one target."""

    name: str
    spec: TargetSpec
    cells: list[PlannedCell]
    workdir: Path

    @property
    def max_concurrency(self) -> int:
        return max(p.cell.concurrency for p in self.cells)

    @property
    def served(self) -> TargetSpec:
        """The spec, asked to serve the protocols of these cells, and to log every request when one
        of them runs a workload (toolbench.servers.access_log)."""
        return dataclasses.replace(self.spec, serve=frozenset(p.cell.protocol for p in self.cells),
                                   access_log=any(p.cell.workload is not None for p in self.cells))


def batches(scenario: Scenario, todo: list[PlannedCell], targets_dir: Path) -> list[Batch]:
    """Consecutive cells of one target share a start, unless it restarts per cell. The plan runs
    each repetition's targets in turn (toolbench.run.plan.expand): with one target that is one
    start for the run; with several, one per target and repetition, each in a folder of its own."""
    several = len(scenario.matrix.target or scenario.targets) > 1
    found = []
    for name, group in itertools.groupby(todo, key=lambda p: p.cell.target):
        spec = scenario.targets[name]
        cells = list(group)
        if spec.restart == "per-cell":
            found += [Batch(name, spec, [p], targets_dir / name / p.cell.id) for p in cells]
        elif several:
            found.append(Batch(name, spec, cells, targets_dir / name / f"rep{cells[0].cell.repetition}"))
        else:
            found.append(Batch(name, spec, cells, targets_dir / name))
    return found


def manifest_entry(name: str, spec: TargetSpec, target: RunningTarget | None,
                   error: str | None = None) -> TargetRecord:
    served = served_tls(target) if target is not None else None
    return TargetRecord(name=name, kind=spec.kind, label=spec.display, restart=spec.restart,
                        url=target.base_url if target else spec.url, version=target.version if target else None,
                        error=error, tls_version=served[0] if served else None,
                        tls_cipher=served[1] if served else None,
                        components=[Component(n, v) for n, v in target.components] if target else [])


def served_tls(target: RunningTarget, timeout_s: float = TLS_HANDSHAKE_TIMEOUT_S) -> tuple[str, str] | None:
    """The TLS version and cipher the target serves, by one handshake of toolbench's own (Python's
    ssl, trusting the target's certificate when toolbench made it, else the system's); None when it
    serves no TLS or the handshake fails (its cells say why, each)."""
    url = next((u for u in (target.urls.get("https"), target.urls.get("h2"), target.base_url)
                if u and u.startswith("https://")), None)
    if url is None:
        return None
    parts = urllib.parse.urlsplit(url)
    try:
        context = ssl.create_default_context(cafile=target.ca_file)
        with socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 443), timeout=timeout_s) as raw:
            with context.wrap_socket(raw, server_hostname=parts.hostname) as tls:
                version, cipher = tls.version(), tls.cipher()
    except (OSError, ValueError, ssl.SSLError):
        return None
    return (version, cipher[0]) if version and cipher else None


@dataclasses.dataclass(frozen=True)
class RemoteTarget(RunningTarget):
    """A target started on another machine (`hosts.target`), with the Host that reaches it: the
    kernel's network counters of a cell are read there (toolbench.hosts.netcounters)."""

    machine: Host | None = None

    @classmethod
    def of(cls, target: RunningTarget, machine: Host) -> "RemoteTarget":
        return cls(**{f.name: getattr(target, f.name) for f in dataclasses.fields(target)}, machine=machine)


def network_watches(scenario: Scenario, target: RunningTarget,
                    generator: Host | None) -> list[netcounters.MachineCounters]:
    """Whose kernel counters a cell reads: the target's machine and the generator's (`generator`,
    None: not this cell's to read), or one set, "both", when they are one machine. A target's
    machine is known when toolbench started it (here, or there over SSH), or when its URL is on
    the loopback (the generator's own machine); another URL's machine is not."""
    gen_key: object = None
    gen_read: netcounters.Reader | None = None
    if generator is not None and generator.remote:
        gen_key, gen_read = ("ssh", scenario.generator.address, scenario.generator.port), _on(generator)
    elif generator is not None:
        gen_key, gen_read = "here", netcounters.read_here
    target_key: object = None
    target_read: netcounters.Reader | None = None
    machine = target.machine if isinstance(target, RemoteTarget) else None
    if machine is not None:
        target_key, target_read = ("ssh", scenario.target_host.address, scenario.target_host.port), _on(machine)
    elif target.pids and target.sampler is None:
        target_key, target_read = "here", netcounters.read_here
    elif _loopback(target.base_url):
        target_key, target_read = gen_key, gen_read
    if target_read is not None and target_key == gen_key:
        return [netcounters.MachineCounters("both", target_read)]
    return [netcounters.MachineCounters(name, read) for name, read in (("target", target_read),
                                                                       ("generator", gen_read)) if read is not None]


def _on(host: Host) -> netcounters.Reader:
    return lambda: netcounters.read_on(host)


def _loopback(url: str) -> bool:
    try:
        name = urllib.parse.urlsplit(url).hostname or ""
    except ValueError:
        return False
    return name in ("localhost", "::1") or name.startswith("127.")


@dataclasses.dataclass(frozen=True)
class Serving:
    """The target a cell loads: its name in the scenario, its spec, the running server."""

    name: str
    spec: TargetSpec
    running: RunningTarget


class CellWatch:
    """The server's side of one cell: its process tree sampled from the tool's start to its end,
    and, for a cell over TLS (`protocol` https or h2), the handshakes its log gained meanwhile. Absent for a target
    toolbench did not start, or with the monitor turned off (the handshakes: without a log)."""

    def __init__(self, scenario: Scenario, spec: TargetSpec, target: RunningTarget, series: Path,
                 protocol: str = "http1", generator: Host | None = None) -> None:
        # The kernel's network counters, from start to stop: the target's machine, and the
        # generator's (`generator`, the cell's host) when given (network_watches).
        self._network = network_watches(scenario, target, generator)
        enabled = scenario.monitor.enabled and bool(target.pids)
        self._monitor: Sampler | None = None
        if enabled and target.sampler is not None:  # it runs on another machine: sampled there
            self._monitor = target.sampler(scenario.monitor.interval_s, series)
        elif enabled:
            self._monitor = cost.ServerMonitor(target.pids, target.port, scenario.monitor.interval_s, series)
        self._workers = spec.workers(target.cores or len(os.sched_getaffinity(0)))
        self.report: cost.ServerReport | None = None
        self.series = series if enabled else None
        tls = protocol in ("https", "h2")
        self._log = Path(target.handshake_log) if tls and target.handshake_log and target.sampler is None else None
        self._http2 = protocol == "h2"
        self._log_from: int | None = None
        self._log_to: int | None = None
        # The target's own error logs (toolbench.servers.target_log), where they stood at start and stop.
        self._error_logs = list(target.logs) if target.sampler is None else []
        self._error_spans: list[error_logs.Span] = []
        # The log of every request, kept for a workload's cells (toolbench.servers.access_log).
        self._access = target.access_log if target.sampler is None else None
        self._access_window: access_log.Window | None = None

    def start(self) -> None:
        if self._log is not None:  # before the monitor: the probe's baseline lines settle first
            self._log_from = tls_log.settled_size(self._log)
        self._error_spans = error_logs.mark(self._error_logs)
        if self._access is not None:
            self._access_window = access_log.mark(self._access)
        for counters in self._network:
            counters.start()
        if self._monitor is not None:
            self._monitor.start()

    def stop(self) -> None:
        if self._monitor is not None and self.report is None:
            self.report = self._monitor.stop()
        for counters in self._network:
            counters.stop()
        if self._log is not None and self._log_from is not None and self._log_to is None:
            self._log_to = tls_log.settled_size(self._log)
        if self._error_spans and self._error_spans[0].end is None:
            self._error_spans = error_logs.ended(self._error_spans)
        if self._access_window is not None and self._access_window.end is None:
            self._access_window = access_log.ended(self._access_window)

    def summary(self, requests_total: int | None) -> ServerCost | None:
        if self.report is None:
            return None
        return dataclasses.replace(cost.summarize(self.report, requests_total), workers=self._workers)

    def handshakes(self, probe_requests: int = 0) -> TlsHandshakes | None:
        """The TLS connections the cell made, read from the log between start and stop; those of
        the probe's requests meanwhile (`probe_requests`, each on a fresh connection in the cell's
        protocol) left out. None: a cell in clear, no log, or a log that could not be read."""
        if self._log is None or self._log_from is None or self._log_to is None:
            return None
        return tls_log.read(self._log, self._log_from, self._http2, probe_requests, end=self._log_to)

    def target_log(self) -> TargetLogCounts | None:
        """The lines the target wrote to its error logs from start to stop, by kind; None: a target
        toolbench did not start here, or a log that could not be read."""
        return error_logs.read(self._error_spans)

    def target_requests(self) -> TargetRequests | None:
        """The requests the target's access log shows from start to stop, per method and path, the
        probe's counted apart; None: no access log kept (a cell without a workload), or unreadable."""
        return access_log.read(self._access_window) if self._access_window is not None else None

    def network(self) -> list[NetworkCounters]:
        """The kernel's network counters over the cell, one per machine read (the target's with its
        listening socket's accept-queue peak, by the server's monitor); a machine whose counters
        could not be read is left out, said once as a notice."""
        found = []
        queue = cost.summarize(self.report).accept_queue_peak if self.report is not None else None
        for counters in self._network:
            result = counters.result(queue if counters.machine != "generator" else None)
            if result is not None:
                found.append(result)
            elif counters.problem:
                warnings.warn(Notice(counters.problem), stacklevel=2)
        return found
