"""A cell of a scenario with several generators run through a tool's own distributed mode
(toolbench.contract.distributed) and made a RunResult for the runner (toolbench.run.scaleout.fleet's extension
point, `Adapter.distributed()`): the controller's figures as the cell's, a GeneratorPart per
generator saying how its part ended, the cell partial when one failed (nothing reported then)."""
from __future__ import annotations

import dataclasses
import functools
from typing import TYPE_CHECKING

from toolbench.contract import registry
from toolbench.contract.adapter import Found
from toolbench.contract.checked import parse_checked
from toolbench.contract.distributed import Generator, Outcome, Part
from toolbench.errors import HostError, ParseError
from toolbench.hosts.local import LocalHost
from toolbench.record import derive, store
from toolbench.record.schema import Artifact, GeneratorPart, Identity, Measurement
from toolbench.record.schema import Outcome as CellOutcome
from toolbench.record.schema import RunResult, Status, Timing
from toolbench.run import execute
from toolbench.run.generator_watch import GeneratorWatch

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.distributed import DistributedTool
    from toolbench.run.plan import PlannedCell
    from toolbench.run.scaleout.fleet import Fleet
    from toolbench.run.scaleout.fleet import Generator as FleetGenerator
    from toolbench.run.serving import Serving
    from toolbench.scenario.read import Scenario


def cell_result(tool: "DistributedTool", scenario: "Scenario", planned: "PlannedCell", cell: "Cell",
                run_dir: store.RunDir, fleet: "Fleet", target: "Serving", identity: Identity) -> RunResult:
    adapter = registry.get(cell.tool)
    support = tool.supports(cell, len(fleet.generators))
    if not support.ok:
        return RunResult(identity, CellOutcome(Status.UNSUPPORTED, error=support.reason))
    controller = adapter.detect(LocalHost())
    if not isinstance(controller, Found):
        return RunResult(identity, CellOutcome(Status.TOOL_MISSING, error=f"the controller here: {controller.reason}"))
    gens = []
    for g in fleet.generators:
        found = fleet.found[g.name][cell.tool]
        assert isinstance(found, Found), "the runner stops a tool missing on a generator"
        gens.append(Generator(g.host, found, watcher=functools.partial(GeneratorWatch, scenario, cell)))
    workdir = run_dir.cell_dir(cell.id)
    started_at = store.utc_now()
    with execute.CellWatchers(scenario, cell, target, workdir) as watchers:
        try:
            outcome = tool.run(cell, workdir, controller, gens, here=LocalHost())
        except HostError as exc:
            return RunResult(identity, CellOutcome(Status.FAILED, error=str(exc)),
                             Measurement(cell.tool, timing=Timing(started_at=started_at, ended_at=store.utc_now())))
    timing = Timing(started_at=started_at, ended_at=store.utc_now(), wall_s=outcome.completed.wall_s)
    parts = [_part(g, part, cell, run_dir) for g, part in zip(fleet.generators, outcome.parts)]
    notes = list(outcome.notes) + [f"generator {g.name}: its own figures are absent: {part.why_no_figures}"
                                   for g, part in zip(fleet.generators, outcome.parts) if part.why_no_figures]
    outcome = dataclasses.replace(outcome, notes=tuple(notes))
    artifacts = [Artifact(role=role, path=run_dir.relative(path)) for role, path in
                 [("stdout", workdir / "stdout.txt"), ("stderr", workdir / "stderr.txt"), *outcome.raw.files.items()]]
    if outcome.failed_parts and not outcome.completed.interrupted:
        said = "; ".join(f"generator {p.name}: {p.error}" for p in parts if p.error)
        return RunResult(identity, CellOutcome(Status.PARTIAL, outcome.completed.exit_code,
                                               f"partial: {len(outcome.failed_parts)} of {len(parts)} generators "
                                               f"failed, the controller's figures not reported ({said})", artifacts),
                         Measurement(cell.tool, timing=timing), notes=list(outcome.notes), generators=parts,
                         probe=watchers.probe_summary(None), server_cost=watchers.server_cost(None),
                         tls=watchers.handshakes(),
                         target_log=watchers.server.target_log(), network=watchers.server.network())
    return _merged(adapter, outcome, identity, timing, artifacts, parts, watchers, cell)


def _merged(adapter: "registry.Adapter", outcome: Outcome, identity: Identity, timing: Timing,
            artifacts: list[Artifact], parts: list[GeneratorPart], watchers: execute.CellWatchers,
            cell: "Cell") -> RunResult:
    completed, raw = outcome.completed, outcome.raw
    try:
        measurement, parse_error = parse_checked(adapter, raw), None
    except ParseError as exc:
        measurement, parse_error = None, str(exc)
    status, error = derive.cell_status(measurement, completed.exit_code, timed_out=completed.timed_out,
                                       interrupted=completed.interrupted, timeout_s=cell.timeout_s,
                                       stderr=raw.stderr, ok_exit_codes=adapter.ok_exit_codes, wall_s=completed.wall_s)
    if parse_error and status is Status.OK:
        status, error = Status.FAILED, parse_error
    elif parse_error:
        error = f"{error}; {parse_error}"
    outcome_ = CellOutcome(status, completed.exit_code, error, artifacts)
    if measurement is None:
        return RunResult(identity, outcome_, Measurement(cell.tool, timing=timing), notes=list(outcome.notes),
                         generators=parts, probe=watchers.probe_summary(None), server_cost=watchers.server_cost(None),
                         tls=watchers.handshakes(),
                         target_log=watchers.server.target_log(), network=watchers.server.network())
    timing = dataclasses.replace(timing, duration_s=measurement.timing.duration_s)
    identity = dataclasses.replace(identity, tool_version=identity.tool_version or measurement.tool_version)
    notes = list(outcome.notes) + _short(cell, timing.duration_s)
    return RunResult(identity, outcome_, dataclasses.replace(measurement, timing=timing), notes=notes,
                     generators=parts, probe=watchers.probe_summary(measurement.latency),
                     server_cost=watchers.server_cost(measurement.counts.requests_total), tls=watchers.handshakes(),
                     target_log=watchers.server.target_log(), network=watchers.server.network())


def _part(generator: "FleetGenerator", part: Part, cell: "Cell", run_dir: store.RunDir) -> GeneratorPart:
    """The generator's part: how it ended, its own figures where the tool's output tells them
    apart (else none, said in the cell's notes), what it cost that host."""
    measurement = part.measurement or Measurement(cell.tool)
    if part.completed is not None:
        measurement = dataclasses.replace(measurement, timing=dataclasses.replace(measurement.timing,
                                                                                wall_s=part.completed.wall_s))
    # The watches this module gave the parts (GeneratorWatch); the contract knows them only as Watch.
    watch = part.watch if isinstance(part.watch, GeneratorWatch) else None
    cost, bound = (watch.summary(part.completed, measurement.counts.requests_total)
                   if watch is not None and part.completed is not None else (None, None))
    return GeneratorPart(name=generator.name, host=generator.host.label,
                         status=Status.OK if part.error is None else Status.FAILED,
                         measurement=measurement, exit_code=part.exit_code, error=part.error, cost=cost,
                         generator_bound=bound, clock=generator.clock, path=run_dir.relative(part.folder))


def _short(cell: "Cell", duration_s: float | None) -> list[str]:
    """A merged run whose samples span clearly less than the duration asked. Measured in
    namespaces: JMeter's servers run their threads for the scheduled time, but on a cold JVM
    their first samples start half a second in (2.4 s of samples in a 3 s cell). Said, not
    corrected. (Locust's master counts its run time from the moment every worker's users
    have started: adapters/locust/distributed.py.)"""
    asked = cell.stop.duration_s
    if asked is None or duration_s is None or duration_s >= 0.9 * asked:
        return []
    return [f"the tool's samples span {duration_s:.2f}s of the {asked:g}s asked: the generators' load began after "
            "the tool's own timer started (JMeter's servers time their threads from their start; on a cold JVM the "
            "first samples come late); rates are over the span measured"]
