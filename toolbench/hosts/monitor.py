"""The generator monitor: while a tool runs, samples its whole process tree and the host
every `interval`, and the TCP window and RTT of the tool's connections to the target.

What the reference study watched on its generator (CPU, memory, load average, socket
count, TCP window) becomes a time series in the cell's folder and summary figures on the
RunResult. Everything is read from /proc, except the per-connection TCP figures, which
come from one `ss` call per sample filtered by the kernel to the target's port. Cheap
reads are the point: the monitor must not take the CPU it is there to measure.
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence, TypeVar

from toolbench.hosts.monitor_read import (HostSample, TcpSample, ToolSample, TreeState, host_reader, read_tcp,
                                          read_tool, ss_available)
from toolbench.record.schema import GeneratorCost, cpu_us_per_request

# A single-threaded tool above this share of one core is saturating itself.
SELF_BOUND_PCT = 90.0

# One `ss` call costs 3 to 9 ms of CPU (most of it the `ss` process itself), the rest of a
# sample 1 to 3 ms: so the TCP figures are read at most every 2 s, however short the
# interval, and not at the start, when the tool has not connected yet. A congestion window
# and an RTT change slowly; what the study watched was their level, not their jitter.
TCP_MIN_INTERVAL_S = 2.0
# This many samples in a row at 0% CPU, to the end of the run, mean a hung tool.
IDLE_SAMPLES = 3

N = TypeVar("N", int, float)


@dataclass(frozen=True)
class Sample:
    t_s: float  # seconds since the tool started
    host: HostSample
    tool: ToolSample | None = None
    tcp: TcpSample | None = None


@dataclass(frozen=True)
class MonitorReport:
    samples: list[Sample]
    interval_s: float
    monitor_cpu_s: float  # the sampling thread's own CPU plus that of its `ss` calls
    notes: list[str] = field(default_factory=list)


class Monitor:
    """Samples in a thread of its own from start() to stop()."""

    def __init__(self, interval_s: float, target_port: int | None, series_path: Path | None = None) -> None:
        self.interval_s = interval_s
        self.target_port = target_port
        self.series_path = series_path
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._samples: list[Sample] = []
        self._notes: list[str] = []
        self._cpu_s = 0.0
        self._pid: int | None = None
        self._started = 0.0

    def start(self, pid: int, started: float | None = None) -> None:
        """Watches the process `pid` and its descendants; `started` is its spawn time
        (time.monotonic()), so that the first sample's CPU % covers the time since then."""
        self._pid = pid
        self._started = started if started is not None else time.monotonic()
        self._thread = threading.Thread(target=self._loop, name="toolbench-monitor", daemon=True)
        self._thread.start()

    def stop(self) -> MonitorReport:
        """Ends the sampling thread, then writes the series. A write that fails (a full disk)
        leaves no partial series behind and is raised once the monitor has stopped."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10.0)
        report = MonitorReport(list(self._samples), self.interval_s, self._cpu_s, list(self._notes))
        if self.series_path is not None:
            try:
                write_series(self.series_path, report.samples)
            except OSError:
                if self.series_path.is_file():
                    with contextlib.suppress(OSError):
                        self.series_path.unlink()
                raise
        return report

    def _loop(self) -> None:
        begin_cpu = time.thread_time()
        try:
            self._sample_until_stopped()
        except Exception as exc:  # a monitor fault costs the series, never the cell
            self._notes.append(f"the monitor stopped early: {type(exc).__name__}: {exc}")
        self._cpu_s += time.thread_time() - begin_cpu

    def _sample_until_stopped(self) -> None:
        assert self._pid is not None
        read_host = host_reader()
        use_ss = self.target_port is not None and ss_available()
        if self.target_port is not None and not use_ss:
            self._notes.append("ss is not installed (package iproute2): the TCP window and RTT "
                               "of the tool's connections are absent")
        tree = TreeState()
        last_t = self._started
        tool_seen = False
        next_at = time.monotonic()
        # Times are compared with a little slack: a sample runs a moment after it was due.
        next_tcp_at = next_at + min(self.interval_s, TCP_MIN_INTERVAL_S) - 0.05
        while True:
            now = time.monotonic()
            tool = read_tool(self._pid, tree, max(now - last_t, 1e-6))
            last_t = now
            tcp = None
            if use_ss and tool is not None and now >= next_tcp_at:
                next_tcp_at = next_at + TCP_MIN_INTERVAL_S - 0.05
                tcp, ss_cpu, problem = read_tcp(self.target_port, tool.socket_inodes)  # type: ignore[arg-type]
                self._cpu_s += ss_cpu
                if problem and problem not in self._notes:
                    self._notes.append(problem)
            if tool is None and not tool_seen:
                self._notes.append("the tool exited before the monitor's first sample: its CPU time and "
                                   "peak memory come from the kernel's account at exit, and there is no "
                                   "time series of it")
            tool_seen = tool_seen or tool is not None
            sample = Sample(round(now - self._started, 3), read_host(),
                            dataclasses.replace(tool, socket_inodes=frozenset()) if tool else None, tcp)
            self._samples.append(sample)
            if tool is None:
                return  # the tool is gone: nothing more to watch
            next_at += self.interval_s
            if self._stop.wait(max(0.0, next_at - time.monotonic())):
                return


def write_series(path: Path, samples: Sequence[Any]) -> None:
    """One JSON object per line and per sample (the generator's or the server's): the time
    series kept beside the result, without the socket inodes a sample keeps for itself."""
    with open(path, "w", encoding="utf-8") as fh:
        for sample in samples:
            row = dataclasses.asdict(sample)
            for part in row.values():
                if isinstance(part, dict):
                    part.pop("socket_inodes", None)
            fh.write(json.dumps(row, sort_keys=True) + "\n")


def summarize(report: MonitorReport | None, *, wall_s: float | None, cpu_user_s: float | None = None,
              cpu_system_s: float | None = None, requests_total: int | None = None, tool: str = "the tool") -> GeneratorCost:
    """The figures of a run. CPU seconds come from the kernel's account at exit when the
    host gives it (exact, short-lived children included), else from the last samples."""
    samples = report.samples if report else []
    tools = [s.tool for s in samples if s.tool is not None]
    tcps = [s.tcp for s in samples if s.tcp is not None]
    notes = list(report.notes) if report else []
    if cpu_user_s is None and tools:
        cpu_user_s, cpu_system_s = tools[-1].cpu_user_s, tools[-1].cpu_system_s
    cpu_s = (cpu_user_s or 0.0) + (cpu_system_s or 0.0) if cpu_user_s is not None else None
    cost = GeneratorCost(
        cpu_user_s=cpu_user_s, cpu_system_s=cpu_system_s,
        cpu_mean_pct=cpu_s / wall_s * 100.0 if cpu_s is not None and wall_s else None,
        cpu_us_per_request=cpu_us_per_request(cpu_user_s, cpu_system_s, requests_total),
        **tree_peaks(tools),
        connections_peak=peak([t.established for t in tcps]),
        time_wait_peak=peak([s.host.tcp_time_wait for s in samples]),
        host_established_peak=peak([s.host.tcp_established for s in samples]),
        load_avg_1m_peak=peak([s.host.load_1m for s in samples]),
        host_cpu_peak_pct=peak([max(s.host.cpu_pct_per_core) for s in samples if s.host.cpu_pct_per_core]),
        host_memory_used_peak_bytes=peak([s.host.memory_used_bytes for s in samples]),
        tcp_cwnd_mean=_mean([t.cwnd_mean for t in tcps]),
        tcp_rcv_space_mean=_mean([t.rcv_space_mean for t in tcps]),
        tcp_rtt_mean_ms=_mean([t.rtt_mean_ms for t in tcps]),
        samples=len(samples),
        interval_s=report.interval_s if report else None,
        monitor_cpu_s=report.monitor_cpu_s if report else None,
        notes=notes)
    return dataclasses.replace(cost, notes=notes + _findings(cost, tool, samples))


def _findings(cost: GeneratorCost, tool: str, samples: list[Sample]) -> list[str]:
    found = []
    idle = _idle_tail(samples)
    if idle is not None:
        found.append(f"{tool} used no CPU from {idle:g}s to its end while it held its process open: "
                     "it was stuck waiting, not working slowly")
    if (cost.cpu_peak_pct is not None and cost.cpu_peak_pct >= SELF_BOUND_PCT
            and cost.threads_peak == 1 and cost.processes_peak == 1):
        found.append(f"{tool} runs on one thread and used {cost.cpu_peak_pct:.0f}% of a core at its peak: "
                     "the generator, not the server, is likely what limits the throughput")
    return found


def _idle_tail(samples: list[Sample], at_least: int = IDLE_SAMPLES) -> float | None:
    """When the tool's last samples all show 0% CPU, the time the idling began."""
    tools = [(s.t_s, s.tool) for s in samples if s.tool is not None]
    tail = 0
    for _, tool in reversed(tools):
        if tool.cpu_pct > 0:
            break
        tail += 1
    if tail < at_least or tail == len(tools):
        return None
    return tools[len(tools) - tail][0]


def peak(values: Sequence[N | None]) -> N | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def tree_peaks(trees: Sequence[ToolSample]) -> dict[str, float | int | None]:
    """The peaks of a process tree's samples, by their ProcessCost field names: the tool's
    tree and the server's are summed up alike."""
    return {"cpu_peak_pct": peak([t.cpu_pct for t in trees]), "rss_peak_bytes": peak([t.rss_bytes for t in trees]),
            "threads_peak": peak([t.threads for t in trees]), "processes_peak": peak([t.processes for t in trees]),
            "open_files_peak": peak([t.fds for t in trees]), "sockets_peak": peak([t.sockets for t in trees])}


def _mean(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return sum(present) / len(present) if present else None


def port_of(url: str | None) -> int | None:
    """The target's port, by which the tool's connections are found."""
    if not url:
        return None
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    try:
        return parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return None

