"""The monitor of one generator's part of a cell: on this machine toolbench.hosts.monitor (psutil);
on a generator reached over SSH the sampler toolbench.servers.sampler, the one that watches a
remote target, run there on the tool's process tree. Both give the tool's CPU, memory and
sockets; whether the generator was the limit is judged by the rule of the report
(toolbench.report.bounds): the tool used what its design lets it use of that host."""
from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path

from toolbench.contract.cell import Cell
from toolbench.contract.cores import GENERATOR_BOUND_SHARE, usable_cores
from toolbench.contract.host import Completed, Host, Running
from toolbench.errors import HostError, TargetError
from toolbench.hosts import monitor
from toolbench.hosts.ssh import SSHHost
from toolbench.record.schema import GeneratorCost
from toolbench.scenario.read import Scenario
from toolbench.servers import cost, remote


class GeneratorWatch:
    def __init__(self, scenario: Scenario, cell: Cell, host: Host, tool_dir: Path, workdir: Path) -> None:
        self._spec, self._cell, self._host = scenario.monitor, cell, host
        self._tool_dir, self._series = tool_dir, workdir / "monitor.jsonl"
        self._local: monitor.Monitor | None = None
        self._remote: remote.RemoteSampler | None = None
        self._report: monitor.MonitorReport | cost.ServerReport | None = None
        self._cores: int | None = None
        self._there: remote.Machine | None = None
        self.notes: list[str] = []

    def prepare(self) -> None:
        """What starting needs of the host, asked before the common start: the sampler then
        starts while the tool waits for it."""
        if not self._spec.enabled:
            return
        try:
            # The tool may use the CPUs the placement gave it, not every one of its host's.
            self._cores = self._cell.cpus or self._host.facts().cpu_count
            if isinstance(self._host, SSHHost):
                self._there = remote.machine(self._host, self._host.label, {}, {})
        except (HostError, TargetError) as exc:
            self.notes.append(f"{self._host.label}: the generator's monitor cannot run: {exc}")

    def start(self, running: Running) -> None:
        """Watches the started tool; a monitor that cannot start costs its figures, with a note."""
        if not self._spec.enabled:
            return
        try:
            if self._there is not None:
                self._remote = remote.RemoteSampler(self._there, self._tool_dir, [running.pid], 0,  # type: ignore[arg-type]
                                                    self._spec.interval_s, self._series, running.pid)
                self._remote.start()
            elif not isinstance(self._host, SSHHost):
                self._local = monitor.Monitor(self._spec.interval_s, monitor.port_of(self._cell.url), self._series)
                self._local.start(running.pid, running.started)
        except (HostError, TargetError) as exc:
            self.notes.append(f"{self._host.label}: the generator's monitor did not start: {exc}")

    def stop(self) -> None:
        with contextlib.suppress(HostError, OSError):
            if self._remote is not None and self._report is None:
                self._report = self._remote.stop()
            elif self._local is not None and self._report is None:
                self._report = self._local.stop()

    def summary(self, completed: Completed, requests_total: int | None) -> tuple[GeneratorCost | None, bool | None]:
        """What the part cost its generator, and whether that generator was the limit."""
        if isinstance(self._report, cost.ServerReport):
            server = cost.summarize(self._report, requests_total)
            figures = GeneratorCost.from_shared(server)
        elif self._report is not None or completed.cpu_user_s is not None:
            report = self._report if isinstance(self._report, monitor.MonitorReport) else None
            figures = monitor.summarize(report, wall_s=completed.wall_s, cpu_user_s=completed.cpu_user_s,
                                        cpu_system_s=completed.cpu_system_s, requests_total=requests_total,
                                        tool=self._cell.tool)
        else:
            return None, None
        figures = dataclasses.replace(figures, notes=[*figures.notes, *self.notes])
        return figures, self._bound(figures)

    def _bound(self, figures: GeneratorCost) -> bool | None:
        cores = usable_cores(self._cell.tool, figures.processes_peak, self._cores)
        if figures.cpu_mean_pct is None or not cores:
            return None
        return figures.cpu_mean_pct / (cores * 100.0) >= GENERATOR_BOUND_SHARE
