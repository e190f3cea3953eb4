"""One cell on one generator: its warm-up, the tool's run, its parse and the figures
observed beside it (generator cost, server cost, probe), made into the cell's RunResult.
The runner (toolbench.run.runner) calls it for each cell in turn; a cell on several generators
goes to toolbench.run.scaleout.fleet instead."""
from __future__ import annotations

import dataclasses
import warnings

from toolbench.contract import registry
from toolbench.contract.adapter import Adapter, Detection, Found, Missing, RawOutput
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.contract.host import Completed, Host
from toolbench.contract.ramp import ramp_note, short_of_ramp
from toolbench.errors import HostError, Notice, ParseError
from toolbench.hosts import monitor
from toolbench.record import derive, diagnose, store
from toolbench.record.schema import (Artifact, CellMachine, GeneratorCost, Identity, LoadModel, Measurement, Outcome,
                                     ProbeSummary, RunResult, Status, TargetLogCounts, Timing)
from toolbench.run import probe, quiet, warmup
from toolbench.run.execute import Watched, execute_with_retries
from toolbench.run.plan import PlannedCell
from toolbench.run.serving import Serving
from toolbench.run.settle import Inherited
from toolbench.scenario.read import Scenario
from toolbench.servers import target_log


def identity_of(scenario: Scenario, cell: Cell, version: str | None, target: str) -> Identity:
    """`target`: the target as its results carry it, its label (TargetSpec.display), which claims
    and criteria select by and every table shows; the cell's id keeps the scenario's name for it."""
    return Identity(
        scenario=scenario.name, cell_id=cell.id, tool=cell.tool, tool_version=version,
        target_label=target, url=cell.url, concurrency=cell.concurrency, keepalive=cell.keepalive,
        repetition=cell.repetition, model=LoadModel.OPEN if cell.rate_rps else LoadModel.CLOSED,
        rate_rps=cell.rate_rps, variant=cell.variant, protocol=cell.protocol)


def version_of(found: Detection) -> str | None:
    return found.version if isinstance(found, Found) else None


def not_runnable(scenario: Scenario, planned: PlannedCell, found: Detection, identity: Identity) -> RunResult | None:
    if not planned.support.ok:
        return RunResult(identity, Outcome(Status.UNSUPPORTED, error=planned.support.reason))
    if isinstance(found, Missing) and scenario.missing_tools == "skip":
        # Planned as not run, like an unsupported cell: the scenario runs whichever tools this machine has.
        return RunResult(identity, Outcome(Status.UNSUPPORTED, error=f"skipped, not installed: {found.reason}"))
    if isinstance(found, Missing):
        return RunResult(identity, Outcome(Status.TOOL_MISSING, error=found.reason))
    return None


def run_cell(scenario: Scenario, planned: PlannedCell, cell: Cell, run_dir: store.RunDir, host: Host,
             found: Detection, target: Serving, inherited: Inherited | None = None) -> RunResult:
    version = version_of(found)
    identity = identity_of(scenario, cell, version, target.spec.display)
    skipped = not_runnable(scenario, planned, found, identity)
    if skipped is not None:
        return skipped
    assert isinstance(found, Found), "not_runnable() stops a Missing tool"
    adapter = registry.get(cell.tool)
    workdir = run_dir.cell_dir(cell.id)
    ramp_s = adapter.ramp_s(cell) or None
    started_at = store.utc_now()
    try:
        warm, warm_notes = warmup.before(adapter, found, cell, workdir, host, run_dir.relative)
        started_at = store.utc_now()  # the measured run starts after the warm-up
        completed, raw, watched, hangs = execute_with_retries(adapter, found, cell, workdir, host, scenario,
                                                              run_dir, target)
    except (HostError, warmup.WarmupFailed) as exc:
        failed = exc if isinstance(exc, warmup.WarmupFailed) else None
        return RunResult(identity, Outcome(failed.status if failed else Status.FAILED,
                                           error=failed.reason if failed else str(exc),
                                           artifacts=warmup.artifacts(workdir, run_dir.relative)),
                         Measurement(cell.tool, timing=Timing(started_at=started_at, ended_at=store.utc_now())),
                         warmup=warmup.asked(cell, workdir, run_dir.relative) if failed else None, ramp_s=ramp_s,
                         machine=quiet.cell_machine(None, inherited, None, None))
    ended_at = store.utc_now()
    artifacts = [Artifact(role="stdout", path=run_dir.relative(workdir / "stdout.txt")),
                 Artifact(role="stderr", path=run_dir.relative(workdir / "stderr.txt"))]
    artifacts += warmup.artifacts(workdir, run_dir.relative) if warm else []
    artifacts += [Artifact(role=role, path=run_dir.relative(path)) for role, path in raw.files.items()]
    if watched.series is not None and watched.series.exists():
        artifacts.append(Artifact(role="monitor", path=run_dir.relative(watched.series)))
    if watched.server.series is not None and watched.server.series.exists():
        artifacts.append(Artifact(role="server-monitor", path=run_dir.relative(watched.server.series)))
    measurement, parse_error = _parse(adapter, raw)
    status, error = derive.cell_status(measurement, completed.exit_code, timed_out=completed.timed_out,
                                 interrupted=completed.interrupted, timeout_s=cell.timeout_s,
                                 stderr=raw.stderr, ok_exit_codes=adapter.ok_exit_codes,
                                 wall_s=completed.wall_s, reach=_reach_if_nothing_counted(measurement, completed, cell))
    if parse_error and status is Status.OK:
        status, error = Status.FAILED, parse_error
    elif parse_error:
        error = f"{error}; {parse_error}"
    machine, status, error = _machine(scenario, watched, completed, inherited, status, error)
    outcome = Outcome(status, exit_code=completed.exit_code, error=error, artifacts=artifacts)
    timing = Timing(started_at=started_at, ended_at=ended_at, wall_s=completed.wall_s,
                    duration_s=measurement.timing.duration_s if measurement else None)
    cost, probed = _observations(scenario, cell, completed, watched, measurement)
    server_cost = watched.server.summary(measurement.counts.requests_total if measurement else None)
    tls = watched.server.handshakes(len(watched.during.latencies_ms) if watched.during else 0)
    logged = watched.server.target_log()
    network = watched.server.network()  # the kernel's counters over the cell, per machine
    requests = watched.server.target_requests()  # a workload's: its access log
    unprobed = _unprobed(scenario, cell)
    if measurement is None:
        return RunResult(identity, outcome, Measurement(cell.tool, timing=timing), cost=cost, probe=probed,
                         notes=warm_notes + hangs + unprobed + list(planned.notes), server_cost=server_cost,
                         warmup=warm, ramp_s=ramp_s,
                         machine=machine, tls=tls, target_log=logged, network=network, target_requests=requests)
    identity = dataclasses.replace(identity, tool_version=version or measurement.tool_version)
    short = ([ramp_note(cell.label, timing.duration_s, ramp_s)]
             if ramp_s and timing.duration_s is not None and short_of_ramp(timing.duration_s, ramp_s) else [])
    return RunResult(identity, outcome, dataclasses.replace(measurement, timing=timing), cost=cost, probe=probed,
                     notes=warm_notes + hangs + _short_run_note(cell, completed.wall_s) + short + unprobed
                     + _trust_note(adapter, cell, measurement.notes) + _logged_503(cell, measurement, logged)
                     + list(planned.notes),  # each workload feature the tool approximates (run.workload_plan)
                     server_cost=server_cost, warmup=warm, ramp_s=ramp_s, machine=machine, tls=tls,
                     target_log=logged, network=network, target_requests=requests)


def _logged_503(cell: Cell, measurement: Measurement, logged: TargetLogCounts | None) -> list[str]:
    """A tool that gives no status codes (siege) next to the 503s nginx's own log counted."""
    said = target_log.evidence_note(cell.tool, measurement.counts, logged)
    return [said] if said else []


def _unprobed(scenario: Scenario, cell: Cell) -> list[str]:
    why = probe.ProbeTarget.for_cell(cell).unspoken if scenario.probe.enabled and cell.url else None
    return [why] if why else []


def _machine(scenario: Scenario, watched: Watched, completed: Completed, inherited: Inherited | None,
             status: Status, error: str | None) -> tuple[CellMachine, Status, str | None]:
    """What this machine did besides the cell while its tool ran (toolbench.run.quiet); an ok cell
    over the scenario's limits becomes disturbed, its figures kept and the reason first in its error."""
    if watched.machine is None:
        warnings.warn(Notice("the tools run on another machine: the foreign CPU and steal during each cell are "
                             "measured only where the tool runs here, and are absent"), stacklevel=2)
        return quiet.cell_machine(None, inherited, None, None), status, error
    tool_cpu_s = (completed.cpu_user_s + completed.cpu_system_s
                  if completed.cpu_user_s is not None and completed.cpu_system_s is not None else None)
    found = watched.machine.figures(tool_cpu_s)
    why = None
    if status is Status.OK and found is not None:
        limits = scenario.method
        why = quiet.disturbance(found.foreign_cpu_pct, found.steal_pct, found.foreign, limits.foreign_cpu_pct,
                                limits.steal_pct)
    machine = quiet.cell_machine(found, inherited, watched.machine.tool_cpus, why)
    if why is None:
        return machine, status, error
    return machine, Status.DISTURBED, why + (f"; {error}" if error else "")


def _reach_if_nothing_counted(m: Measurement | None, completed: Completed, cell: Cell) -> derive.Reach | None:
    """A tool that ran to its end and counted nothing at all leaves its cause open: one
    connection of toolbench's own tells a target that never accepts from one that never answers."""
    if completed.timed_out or completed.interrupted or not derive.counted_nothing(m) or cell.url is None:
        return None
    return diagnose.reach(cell.url)


def _trust_note(adapter: Adapter, cell: Cell, said: list[str]) -> list[str]:
    """A TLS cell of a tool that does not check the target's certificate says so, once."""
    trust = adapter.TLS_TRUST
    if not cell.tls or not trust or "checks the server's certificate" in trust and "never" not in trust:
        return []
    return [] if any("certificate" in note for note in said) else [trust]


def _short_run_note(cell: Cell, wall_s: float) -> list[str]:
    """Some tools end a timed run early (siege's -t often does): say so, rather than
    compare a half-second run with others' full ones unnoticed."""
    asked = cell.stop.duration_s
    if asked is None or wall_s >= 0.9 * asked:
        return []
    return [f"the tool ran {wall_s:.2f}s of the {asked:g}s asked"]


def _observations(scenario: Scenario, cell: Cell, completed: Completed, watched: Watched,
                  measurement: Measurement | None) -> tuple[GeneratorCost, ProbeSummary | None]:
    requests = measurement.counts.requests_total if measurement else None
    cost = monitor.summarize(watched.monitor, wall_s=completed.wall_s, cpu_user_s=completed.cpu_user_s,
                             cpu_system_s=completed.cpu_system_s, requests_total=requests, tool=cell.tool)
    probed = None
    if watched.baseline is not None and watched.during is not None:
        probed = probe.summarize(watched.baseline, watched.during, measurement.latency if measurement else None,
                                 scenario.probe, tool=cell.tool)
    return cost, probed


def _parse(adapter: Adapter, raw: RawOutput) -> tuple[Measurement | None, str | None]:
    """The cell's measurement, or the one-line reason there is none: a ParseError, an
    invariant the figures break, or `<tool>: parser crashed: <Type>: <message>`."""
    try:
        return parse_checked(adapter, raw), None
    except ParseError as exc:
        return None, str(exc)

