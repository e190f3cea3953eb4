"""One run of a tool for a cell, on its host, with its watchers: the generator's monitor,
the probe, and the server's monitor; run again after a hang when the tool is known to hang."""
from __future__ import annotations

import dataclasses
import shlex
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from toolbench.contract.adapter import Adapter, Found, RawOutput
from toolbench.contract.cell import Cell
from toolbench.contract.host import Completed, Host, Running
from toolbench.hosts import monitor
from toolbench.record import store
from toolbench.record.schema import Latency, ProbeSummary, ServerCost, TlsHandshakes
from toolbench.run import probe, quiet, serving
from toolbench.run import tool_steps as steps
from toolbench.run.serving import Serving
from toolbench.scenario.read import Scenario

T = TypeVar("T")


@dataclass(frozen=True)
class Watched:
    """What toolbench observed around one run of a tool."""

    monitor: monitor.MonitorReport | None
    baseline: probe.Samples | None
    during: probe.Samples | None
    series: Path | None
    server: serving.CellWatch
    machine: quiet.Watch | None = None  # this machine around the tool's run; None: the tool ran elsewhere


def execute(adapter: Adapter, found: Found, cell: Cell, workdir: Path, host: Host, scenario: Scenario,
            target: Serving) -> tuple[Completed, RawOutput, Watched]:
    """The tool runs in the host's workspace with its watchers (see staged())."""

    def run(argv: list[str], env: dict[str, str], tool_dir: Path) -> tuple[Completed, Watched]:
        return _observed(argv, env, tool_dir, cell, workdir, host, scenario, target)

    return staged(adapter, found, cell, workdir, host, run)


CERTIFICATE = "target-cert.pem"


def _with_certificate(cell: Cell, workdir: Path, tool_dir: str | Path) -> tuple[Cell, list[str]]:
    """The target's certificate travels with the cell's files, so that a tool on another machine
    finds it where it runs; the cell then names that copy."""
    if cell.ca_file is None:
        return cell, []
    shutil.copyfile(cell.ca_file, workdir / CERTIFICATE)
    return dataclasses.replace(cell, ca_file=str(Path(tool_dir) / CERTIFICATE)), [CERTIFICATE]


def staged(adapter: Adapter, found: Found, cell: Cell, workdir: Path, host: Host,
           run: Callable[[list[str], dict[str, str], Path], tuple[Completed, T]]) -> tuple[Completed, RawOutput, T]:
    """The tool runs in the host's workspace (on another machine, a folder there): its input
    files are staged there and its output files collected after, nothing to do on this
    machine; `run` starts it there, its stdout and stderr streaming into `workdir`."""
    tool_dir = host.workspace(workdir)
    outputs: list[str] = []  # nothing to collect should the build fail: the workspace goes all the same
    try:
        cell, certificate = _with_certificate(cell, workdir, tool_dir)
        invocation = adapter.build(cell, Path(tool_dir), found)
        outputs = list(invocation.outputs.values())
        for name, content in invocation.files.items():
            (workdir / name).write_text(content)
        host.stage(workdir, tool_dir, list(invocation.files) + certificate)
        (workdir / "command.txt").write_text(shlex.join(invocation.argv) + "\n" + steps.command_lines(invocation.steps))
        completed, extra = run(invocation.argv, invocation.env, Path(tool_dir))
        # After the tool, before its files travel: the steps read them where it wrote them.
        made, failed = ({}, {}) if completed.interrupted else steps.run(invocation.steps, host, Path(tool_dir), workdir)
    finally:
        host.collect(tool_dir, outputs, workdir)
    files = {role: workdir / name for role, name in invocation.outputs.items() if (workdir / name).exists()}
    raw = RawOutput(stdout=(workdir / "stdout.txt").read_text(errors="replace"),
                    stderr=(workdir / "stderr.txt").read_text(errors="replace"),
                    exit_code=completed.exit_code, files=files | made, step_errors=failed, source=str(workdir))
    return completed, raw, extra


def _observed(argv: list[str], env: dict[str, str] | None, tool_dir: Path, cell: Cell, workdir: Path, host: Host,
              scenario: Scenario, target: Serving) -> tuple[Completed, Watched]:
    """Runs the tool with its watchers: the generator's monitor, the probe, the server's monitor."""
    assert cell.url is not None
    spec = scenario.probe
    # A probe request never waits longer than the whole cell may last.
    probe_timeout = min(spec.timeout_s, cell.timeout_s)
    probed = probe.ProbeTarget.for_cell(cell)  # in the cell's protocol; none where it cannot speak it
    probing = spec.enabled and probed.speakable
    base = probe.baseline(probed, spec.baseline_requests, probe_timeout) if probing else None
    # psutil sees only this machine's processes: a remote tool is not monitored.
    series = workdir / "monitor.jsonl" if scenario.monitor.enabled and not host.remote else None
    mon = monitor.Monitor(scenario.monitor.interval_s, monitor.port_of(cell.url), series) if series else None
    prb = probe.Probe(probed, spec.interval_s, probe_timeout) if probing else None
    server = serving.CellWatch(scenario, target.spec, target.running, workdir / "server.jsonl", cell.protocol,
                               generator=host)
    machine = quiet.Watch(target.running) if not host.remote else None
    try:
        server.start()
        if machine:
            machine.start()  # the window is the tool's run: its warm-up and the probe's baseline are before
        running = host.start(argv, cwd=tool_dir, stdout=workdir / "stdout.txt", stderr=workdir / "stderr.txt",
                             env=env)
        if machine:
            machine.started(running.pid)
        completed = _watch(running, cell.timeout_s, mon, prb)
    finally:
        # However the tool's run ended, its watchers end with it; the monitors last, as
        # writing their series may fail (a full disk).
        if machine:
            machine.stop()
        during = prb.stop() if prb else None
        try:
            server.stop()
        finally:
            report = mon.stop() if mon else None
    return completed, Watched(report, base, during, series, server, machine)


def _watch(running: Running, timeout_s: float, mon: monitor.Monitor | None, prb: probe.Probe | None) -> Completed:
    """Starts the watchers on the running tool and waits for it; whatever happens in between,
    the tool does not outlive this call (a zero wait kills and reaps it). The caller stops
    the watchers."""
    try:
        if mon:
            mon.start(running.pid, running.started)
        if prb:
            prb.start(running.started)
    except BaseException:
        running.wait(0)
        raise
    return running.wait(timeout_s)


class CellWatchers:
    """The watchers of a whole cell run by several tools at once (toolbench.run.scaleout.fleet): the
    probe and the server's monitor, from before the tools start to after the last ends."""

    def __init__(self, scenario: Scenario, cell: Cell, target: Serving, workdir: Path) -> None:
        assert cell.url is not None
        self._scenario, self._cell = scenario, cell
        self._probed = probe.ProbeTarget.for_cell(cell)
        self._timeout_s = min(scenario.probe.timeout_s, cell.timeout_s)
        self.server = serving.CellWatch(scenario, target.spec, target.running, workdir / "server.jsonl",
                                        cell.protocol)
        self._probe: probe.Probe | None = None
        self._base: probe.Samples | None = None
        self._during: probe.Samples | None = None

    def __enter__(self) -> "CellWatchers":
        spec = self._scenario.probe
        if spec.enabled and self._probed.speakable:
            self._base = probe.baseline(self._probed, spec.baseline_requests, self._timeout_s)
            self._probe = probe.Probe(self._probed, spec.interval_s, self._timeout_s)
        self.server.start()
        if self._probe is not None:
            self._probe.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._during = self._probe.stop() if self._probe else None
        finally:
            self.server.stop()

    def probe_summary(self, latency: Latency | None) -> ProbeSummary | None:
        if self._base is None or self._during is None:
            return None
        return probe.summarize(self._base, self._during, latency, self._scenario.probe, tool=self._cell.tool)

    def server_cost(self, requests_total: int | None) -> ServerCost | None:
        return self.server.summary(requests_total)

    def handshakes(self) -> TlsHandshakes | None:
        """The cell's TLS handshakes (toolbench.run.serving.CellWatch.handshakes), the probe's left out."""
        return self.server.handshakes(len(self._during.latencies_ms) if self._during else 0)


def execute_with_retries(adapter: Adapter, found: Found, cell: Cell, workdir: Path, host: Host, scenario: Scenario,
                         run_dir: store.RunDir, target: Serving) -> tuple[Completed, RawOutput, Watched, list[str]]:
    """A tool known to hang now and then at the end of a run (`retries_on_hang`) is run
    again after a hang; the hung attempt's output is kept beside, and noted."""
    attempts = 1 + adapter.retries_on_hang
    hangs: list[str] = []
    for attempt in range(1, attempts + 1):
        completed, raw, watched = execute(adapter, found, cell, workdir, host, scenario, target)
        if not completed.timed_out or attempt == attempts:
            break
        kept = workdir / f"hung-{attempt}"
        kept.mkdir(exist_ok=True)
        stay = {"command.txt", *adapter.build(cell, workdir, found).files}  # what the next attempt needs
        for path in list(workdir.iterdir()):
            if path.is_file() and path.name not in stay:
                path.rename(kept / path.name)
        hangs.append(f"{cell.tool} was still running at the hard limit of {cell.timeout_s:g}s and was killed "
                     f"(attempt {attempt} of {attempts}; its output is in {run_dir.relative(kept)}); it was run again")
    return completed, raw, watched, hangs
