"""What the server spends: while a cell runs, the target's whole process tree (every process
group toolbench started for it: nginx and uWSGI for nginx-uwsgi) is sampled as the generator's
is, by monitor_read, and the server side of its port by `ss`. CPU seconds are the difference
between a sample taken at start() and one at stop(), so they cover exactly the cell."""
from __future__ import annotations

import dataclasses
import json
import math
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from toolbench.hosts.monitor import TCP_MIN_INTERVAL_S, peak, tree_peaks, write_series
from toolbench.hosts.netcounters import listen_queue
from toolbench.hosts.monitor_read import (ServerTcpSample, ToolSample, TreeState, read_server_tcp, read_tool,
                                          ss_available)
from toolbench.record.schema import ServerCost, cpu_us_per_request


@dataclass(frozen=True)
class ServerSample:
    t_s: float  # seconds since the monitor started
    tree: ToolSample | None  # summed over the server's process groups; None once they are gone
    tcp: ServerTcpSample | None = None
    # The accept queue between full `ss` reads, each interval (toolbench.hosts.netcounters.listen_queue).
    listen_queue: int | None = None


@dataclass(frozen=True)
class ServerReport:
    samples: list[ServerSample]
    interval_s: float
    wall_s: float
    cpu_user_s: float | None  # spent between start() and stop()
    cpu_system_s: float | None
    monitor_cpu_s: float
    notes: list[str] = field(default_factory=list)


class ServerMonitor:
    """Samples in a thread of its own from start() to stop()."""

    def __init__(self, pids: int | Sequence[int], port: int | None, interval_s: float = 1.0,
                 series_path: Path | None = None) -> None:
        self.pids = (pids,) if isinstance(pids, int) else tuple(pids)
        self.port = port
        self.interval_s = interval_s
        self.series_path = series_path
        self._trees = {pid: TreeState() for pid in self.pids}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._samples: list[ServerSample] = []
        self._notes: list[str] = []
        self._cpu_s = 0.0
        self._started = self._last_t = 0.0
        self._next_tcp_at = 0.0
        self._baseline: ToolSample | None = None
        self._use_ss = port is not None and ss_available()

    def start(self) -> None:
        if self.port is not None and not self._use_ss:
            self._notes.append("ss is not installed (package iproute2): the server's connections are absent")
        self._started = self._last_t = time.monotonic()
        begin_cpu = time.thread_time()
        self._baseline = self._read_trees(time.monotonic())
        self._cpu_s += time.thread_time() - begin_cpu
        if self._baseline is None:
            self._notes.append("the server was not running when its monitor started")
        self._thread = threading.Thread(target=self._loop, name="toolbench-server-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> ServerReport:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
        begin_cpu = time.thread_time()
        self._samples.append(self._sample(force_tcp=True))  # the end of the window: CPU up to now
        self._cpu_s += time.thread_time() - begin_cpu
        wall_s = time.monotonic() - self._started
        trees = [s.tree for s in self._samples if s.tree is not None]
        user = system = None
        if self._baseline is not None and trees:
            user = round(max(0.0, trees[-1].cpu_user_s - self._baseline.cpu_user_s), 3)
            system = round(max(0.0, trees[-1].cpu_system_s - self._baseline.cpu_system_s), 3)
        if self._samples[-1].tree is None and self._baseline is not None:
            self._notes.append("the server exited before its monitor stopped: the CPU time it spent after the "
                               "monitor's last sample of it is not counted" if trees else
                               "the server exited before the monitor's first sample: its CPU time is absent")
        report = ServerReport(list(self._samples), self.interval_s, round(wall_s, 3), user, system,
                              round(self._cpu_s, 6), list(self._notes))
        if self.series_path is not None:
            write_series(self.series_path, report.samples)
        return report

    def _loop(self) -> None:
        begin_cpu = time.thread_time()
        try:
            while not self._stop.wait(self.interval_s):
                sample = self._sample()
                self._samples.append(sample)
                if sample.tree is None:
                    return  # the server is gone: nothing more to watch
        except Exception as exc:  # a monitor fault costs the series, never the cell
            self._notes.append(f"the server monitor stopped early: {type(exc).__name__}: {exc}")
        finally:
            self._cpu_s += time.thread_time() - begin_cpu

    def _sample(self, force_tcp: bool = False) -> ServerSample:
        now = time.monotonic()
        tree = self._read_trees(now)
        tcp = None
        if self._use_ss and tree is not None and (force_tcp or now >= self._next_tcp_at):
            # Times are compared with a little slack: a sample runs a moment after it was due.
            self._next_tcp_at = now + TCP_MIN_INTERVAL_S - 0.05
            tcp, ss_cpu, problem = read_server_tcp(self.port)  # type: ignore[arg-type]
            self._cpu_s += ss_cpu
            if problem and problem not in self._notes:
                self._notes.append(problem)
        elif self._use_ss and tree is not None:
            # Between the full reads, only the listening socket: its queue fills and drains within seconds.
            waiting, ss_cpu = listen_queue(self.port)  # type: ignore[arg-type]
            self._cpu_s += ss_cpu
            return ServerSample(round(now - self._started, 3), tree, None, waiting)
        return ServerSample(round(now - self._started, 3), tree, tcp)

    def _read_trees(self, now: float) -> ToolSample | None:
        elapsed = max(now - self._last_t, 1e-6)
        self._last_t = now
        found = [read_tool(pid, state, elapsed) for pid, state in self._trees.items()]
        present = [dataclasses.replace(s, socket_inodes=frozenset()) for s in found if s is not None]
        if not present:
            return None
        return ToolSample(*(round(sum(getattr(s, f.name) for s in present), 3)
                            for f in dataclasses.fields(ToolSample) if f.name != "socket_inodes"))


# The figures of a ServerReport besides its samples, as the sampler on another machine prints them.
REPORT_FIELDS = ("interval_s", "wall_s", "cpu_user_s", "cpu_system_s", "monitor_cpu_s", "notes")


def report_figures(report: ServerReport) -> dict[str, Any]:
    return {name: getattr(report, name) for name in REPORT_FIELDS}


def read_report(figures: dict[str, Any], series: Path | None) -> ServerReport:
    """A ServerReport from another machine: its figures, and its samples as write_series wrote them."""
    samples = []
    if series is not None:
        for line in series.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            tree, tcp = row.get("tree"), row.get("tcp")
            samples.append(ServerSample(float(row["t_s"]), ToolSample(**tree) if tree else None,
                                        ServerTcpSample(**tcp) if tcp else None, _count(row.get("listen_queue"))))
    notes = figures.get("notes")
    return ServerReport(samples, **{name: _figure(figures, name) for name in REPORT_FIELDS if name != "notes"},
                        notes=[str(n) for n in notes] if isinstance(notes, list) else [])


def _count(value: Any) -> int | None:
    """A count from another machine's series: absent, or a whole, non-negative number."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"listen_queue: {value!r} is not a non-negative whole number")
    return value


def _figure(figures: dict[str, Any], name: str) -> float | None:
    """A figure from another machine's sampler: a finite, non-negative number, or absent."""
    value = figures.get(name)
    if value is None and name in ("cpu_user_s", "cpu_system_s"):
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ValueError(f"{name}: {value!r} is not a non-negative number")
    return float(value)


def summarize(report: ServerReport | None, requests_total: int | None = None) -> ServerCost:
    """The figures of one cell; CPU µs per request when the cell's request count is known."""
    if report is None:
        return ServerCost()
    trees = [s.tree for s in report.samples if s.tree is not None]
    tcps = [s.tcp for s in report.samples if s.tcp is not None]
    cpu_s = None if report.cpu_user_s is None else report.cpu_user_s + (report.cpu_system_s or 0.0)
    states: dict[str, int] = {}
    for tcp in tcps:
        for state, count in tcp.states.items():
            states[state] = max(states.get(state, 0), count)
    return ServerCost(
        cpu_user_s=report.cpu_user_s, cpu_system_s=report.cpu_system_s,
        cpu_mean_pct=round(cpu_s / report.wall_s * 100.0, 1) if cpu_s is not None and report.wall_s else None,
        cpu_us_per_request=cpu_us_per_request(report.cpu_user_s, report.cpu_system_s, requests_total),
        **tree_peaks(trees),
        connections_peak=peak([t.established for t in tcps]),
        connections_by_state_peak=states,
        time_wait_peak=peak([t.states.get("TIME-WAIT", 0) for t in tcps]),
        accept_queue_peak=peak([t.accept_queue for t in tcps] + [s.listen_queue for s in report.samples]),
        listen_backlog=peak([t.backlog for t in tcps]),
        wall_s=report.wall_s, samples=len(report.samples), interval_s=report.interval_s,
        monitor_cpu_s=report.monitor_cpu_s, notes=list(report.notes))

