"""Runs a scenario: plan, target, then each cell in turn, each result appended
to the run directory as soon as it exists. One cell on one generator is run by
toolbench.run.cell, on several by toolbench.run.scaleout.fleet."""
from __future__ import annotations

import contextlib
import dataclasses
import platform
import sys
import time
import urllib.parse
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from toolbench.contract import registry, workload
from toolbench.contract.adapter import Detection, Found
from toolbench.contract.cell import Cell
from toolbench.contract.host import Host
from toolbench.errors import Interrupted, Notice, ScenarioError, TargetError, ToolbenchError
from toolbench.hosts import lifeline, placed, prereq, ssh
from toolbench.hosts.local import LocalHost
from toolbench.record import manifest, store
from toolbench.record.schema import Measurement, Outcome, RunResult, Status, Timing
from toolbench.run import bracket, detection, plan, programs, retry, serving, settle
from toolbench.run.cell import identity_of, not_runnable, run_cell, version_of
from toolbench.run.plan import PlannedCell
from toolbench.run.scaleout import fleet as scaleout
from toolbench.run.serving import Serving, TargetStarter
from toolbench.scenario.read import Scenario


class Observer(Protocol):
    """What the CLI shows while a run goes on; the runner itself prints nothing."""

    def planned(self, total: int, skipped: int) -> None: ...

    def cell_started(self, index: int, cell: Cell) -> None: ...

    def cell_finished(self, index: int, result: RunResult) -> None: ...


class QuietObserver:
    def planned(self, total: int, skipped: int) -> None:
        pass

    def cell_started(self, index: int, cell: Cell) -> None:
        pass

    def cell_finished(self, index: int, result: RunResult) -> None:
        pass


@dataclass(frozen=True)
class RunSummary:
    run_dir: Path
    results: int
    interrupted: bool


def run(scenario: Scenario, reports_root: Path, *, resume: Path | None = None,
        observer: Observer | None = None, host: Host | None = None, go_on: bool = False,
        known_hosts: Path | None = None, trust_new_key: bool = False,
        start_target: TargetStarter | None = None, fail_fast: bool = False,
        retry_disturbed: int = 0, system_check: bool = True, allow_commands: bool = False) -> RunSummary:
    """Raises prereq.PrerequisiteError before anything runs when a required prerequisite is
    unmet, unless `go_on`; the findings go into the manifest either way. `host` runs the
    tools and `start_target` starts the targets: by default the scenario's generator, and
    toolbench.servers on this machine or on `hosts.target` over SSH (there, the prerequisites
    are checked and the ulimits raised too). With `fail_fast`, the first cell that fails or
    times out ends the run (StoppedEarly). With `retry_disturbed` N, each cell disturbed by
    foreign work is run again after the others, up to N times (toolbench.run.retry). A scenario
    that starts programs of its own is refused (programs.CommandsNotAllowed) unless `allow_commands`."""
    programs.refuse_unless_allowed(scenario, allow_commands)
    _check_hosts(scenario)
    with contextlib.ExitStack() as stack:
        far: ssh.SSHHost | None = None
        if start_target is None and not scenario.target_host.is_local:
            connected = stack.enter_context(contextlib.closing(ssh.connect(
                scenario.target_host, known_hosts=known_hosts, trust_new_key=trust_new_key)))
            assert isinstance(connected, ssh.SSHHost)
            # The target's processes get the scenario's ulimits there, as the tools do on the generator.
            far = connected.with_limits(scenario.prerequisites.ulimit)
        fleet = None
        if host is None and scenario.scaled_out:
            fleet = scaleout.connect(scenario, stack, known_hosts, trust_new_key)
            host = fleet.reached[0].host
        elif host is None:
            host = stack.enter_context(contextlib.closing(ssh.connect(
                scenario.generator, known_hosts=known_hosts, trust_new_key=trust_new_key)))
        # Who runs on which CPUs (toolbench.hosts.placed); toolbench's own CPUs restored on leaving.
        placement = stack.enter_context(placed.placed(
            scenario, host, far, starts_targets=start_target is None and any(
                t.kind != "url" for t in scenario.targets.values()), scaled_out=fleet is not None))
        host = placement.generator(host)
        if far is not None:
            start_target = serving.remote_starter(far, scenario.target_host.address, scenario.target_host.tools,
                                                  scenario.locations, placement.target_cpus)
        return _run_on(scenario, reports_root, resume, observer or QuietObserver(), host, go_on, start_target,
                       far, fail_fast, fleet, retry_disturbed=retry_disturbed, placement=placement,
                       system_check=system_check)


def _check_hosts(scenario: Scenario) -> None:
    """A bundled stack listens on a loopback address when it runs here, or on a target host
    named by one: out of reach of a generator elsewhere."""
    target_loopback = scenario.target_host.is_local or _loopback(scenario.target_host.address)
    generator_far = any(not g.host.is_local and not _loopback(g.host.address) for g in scenario.generators)
    for name, spec in scenario.targets.items():
        if spec.bundled and target_loopback and generator_far:
            raise ScenarioError(f"{spec.where or scenario.source}: targets.{name}.server: the bundled {spec.kind} "
                                f"listens on 127.0.0.1, out of reach of a generator at {scenario.generator.address}; "
                                "give a `url` that machine can reach")


def _loopback(address: str) -> bool:
    return address in ("localhost", "::1") or address.startswith("127.")


def _run_on(scenario: Scenario, reports_root: Path, resume: Path | None, observer: Observer, host: Host,
            go_on: bool, start_target: TargetStarter | None, target_host: Host | None = None,
            fail_fast: bool = False, fleet: scaleout.Fleet | None = None, retry_disturbed: int = 0,
            placement: placed.RunPlacement | None = None, system_check: bool = True) -> RunSummary:
    # The tools get the scenario's ulimits: the limits are checked and applied in one place.
    # A target host of its own is checked the same way: its server is what serves the connections.
    host = host.with_limits(scenario.prerequisites.ulimit)
    seed = bracket.seed_of(scenario, resume)
    cells = plan.expand(scenario, seed)
    if fleet is not None:
        scaleout.check_split(cells, scenario.generators)
    findings = [finding for checked_host in (host, target_host) if checked_host is not None
                for finding in prereq.check(checked_host, scenario.prerequisites, max(scenario.matrix.concurrency))]
    if prereq.blocking(findings) and not go_on:
        raise prereq.refusal(findings, scenario.source)
    run_dir = store.RunDir.open(resume) if resume else store.RunDir.create(reports_root, scenario.name)
    if resume:
        _same_profile(scenario, run_dir)  # before anything is written: the run stays resumable
    with run_dir.lock():
        try:
            left = lifeline.stop_leftovers(run_dir.path / lifeline.LEDGER) if resume else []
            repaired = run_dir.repair_results() if resume else None
            life = lifeline.Lifeline(run_dir.path / lifeline.LEDGER)
        except OSError as exc:
            raise run_dir.write_failure(exc) or exc from None
        with life:
            if isinstance(host, LocalHost):
                host = host.with_lifeline(life)
            fleet = fleet.with_lifeline(life) if fleet is not None else None
            checked = manifest.Prerequisites(
                checked_at=store.utc_now(), host=host.label, went_on=bool(prereq.blocking(findings)),
                findings=[manifest.Finding(**f.to_dict()) for f in findings])
            resumed = manifest.Resumed(at=store.utc_now(), stopped_leftovers=list(left), repaired=repaired)
            for said in ([f"stopped what the earlier run left running: {', '.join(left)}"] if left else []) + (
                    [repaired] if repaired else []):
                warnings.warn(Notice(said), stacklevel=2)
            starter = start_target or serving.local_starter(life, placement.target_pin if placement else None,
                                                            scenario.prerequisites.ulimit)
            return _run_locked(scenario, cells, run_dir, observer, host, starter, checked, resumed if resume else None,
                               _Progress(fail_fast=fail_fast, fleet=fleet, seed=seed, retry_disturbed=retry_disturbed,
                                         placement=placement, system_check=system_check))


def _run_locked(scenario: Scenario, cells: list[PlannedCell], run_dir: store.RunDir, observer: Observer, host: Host,
                starter: TargetStarter, checked: manifest.Prerequisites,
                resumed: manifest.Resumed | None, progress: _Progress) -> RunSummary:
    """The run proper, with its folder locked. The manifest ends saying how the run ended:
    complete, interrupted, or failed with the error."""
    try:
        done = run_dir.finished_cells() if resumed else set()
        found = detection.detect_tools(scenario, host, {c.cell.tool for c in cells}, progress.fleet)
        if resumed is None:
            run_dir.write_manifest(_manifest(scenario, host, found, checked, progress.fleet, progress.seed))
        else:
            earlier = run_dir.manifest().resumed
            run_dir.update_manifest(prerequisites=checked, status=manifest.RunStatus.STARTING,
                                    resumed=[*earlier, resumed])
        run_dir.reserve_space()
        todo = [c for c in cells if c.cell.id not in done]
        observer.planned(len(cells), len(cells) - len(todo))
        progress.earlier = len(cells) - len(todo)
        run_dir.update_manifest(status=manifest.RunStatus.RUNNING)
        if progress.placement is not None:  # after the manifest's facts: they are the machine's, not toolbench's CPUs
            progress.placement.pin_own()
            _record_placement(run_dir, progress.placement)
        if progress.system_check:
            bracket.system_checked(run_dir, scenario)
        bracket.calibrated(run_dir, scenario, "before")
        interrupted = _serve_targets(scenario, todo, run_dir, host, found, starter, observer, progress)
        if not interrupted and progress.retry_disturbed:
            interrupted = retry.retry_disturbed(scenario, cells, run_dir, progress.retry_disturbed, lambda again: (
                _serve_targets(scenario, again, run_dir, host, found, starter, observer, progress)))
        if not interrupted:
            bracket.calibrated(run_dir, scenario, "after")
    except KeyboardInterrupt:
        interrupted = True
    except BaseException as exc:
        problem = run_dir.write_failure(exc) if isinstance(exc, OSError) else None
        said = problem or exc
        error = str(said) if isinstance(said, ToolbenchError) else f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(ToolbenchError):  # the error in flight says more
            run_dir.record_end(manifest.RunStatus.FAILED, error)
        if problem is not None:
            raise problem from None
        raise
    run_dir.record_end(manifest.RunStatus.INTERRUPTED if interrupted else manifest.RunStatus.COMPLETE, None)
    if interrupted:
        raise Interrupted(run_dir.path)
    return RunSummary(run_dir.path, len(run_dir.results()), interrupted)


@dataclass
class _Progress:
    index: int = 0  # cells seen, for the observer
    earlier: int = 0  # cells a resumed run had finished before: a cell's position in the run counts them
    last_ran: bool = False  # the previous cell put load on a target: the next start cools down first
    fail_fast: bool = False  # a failed cell ends the run
    fleet: scaleout.Fleet | None = None  # the generators of a scenario with several, each cell run on all
    seed: int | None = None  # of the cells' order (toolbench.run.plan.expand); None: as written
    system_check: bool = True  # `toolbench system check` before the first cell, into the manifest
    retry_disturbed: int = 0  # `--retry-disturbed N`: rounds of re-running the disturbed cells
    placement: placed.RunPlacement | None = None  # who runs on which CPUs

    def finished(self, observer: Observer, run_dir: store.RunDir, result: RunResult) -> None:
        observer.cell_finished(self.index, result)
        self.index += 1
        if self.fail_fast and result.outcome.status in (Status.FAILED, Status.TIMED_OUT):
            raise StoppedEarly(run_dir.path, result.identity.cell_id, result.outcome.status)


class StoppedEarly(ToolbenchError):
    """`--fail-fast`: a cell failed, and the run ended there; the cells measured are kept."""

    def __init__(self, run_dir: Path, cell_id: str, status: Status) -> None:
        super().__init__(f"{cell_id} {status.value.replace('_', ' ')}, and --fail-fast ended the run there")
        self.run_dir = run_dir


def _serve_targets(scenario: Scenario, todo: list[PlannedCell], run_dir: store.RunDir, host: Host,
                   found: dict[str, Detection], starter: TargetStarter, observer: Observer,
                   progress: _Progress) -> bool:
    """Each target in turn, started for its cells and stopped after them. A target that
    fails to start fails its cells with the reason, and the other targets run. True when
    the run was interrupted."""
    # A resumed run keeps what its earlier part recorded of targets it does not start again.
    recorded = {t.name or t.label: t for t in run_dir.manifest().targets}
    for batch in serving.batches(scenario, todo, run_dir.path / "targets"):
        if progress.last_ran and scenario.cooldown_s:
            time.sleep(scenario.cooldown_s)
        progress.last_ran = False
        up = False
        # Made (or, resumed, checked) here: the server writes into it through any link it finds.
        run_dir.work_folder(*batch.workdir.relative_to(run_dir.path).parts)
        try:
            with starter(batch.served, batch.workdir, batch.max_concurrency) as running:
                up = True
                recorded[batch.name] = serving.manifest_entry(batch.name, batch.spec, running)
                run_dir.update_manifest(targets=list(recorded.values()))
                if progress.placement is not None:  # each of its processes, with the CPUs the kernel gave it
                    progress.placement.saw_target(batch.name, running.pids)
                    _record_placement(run_dir, progress.placement)
                if progress.fleet is None:
                    bracket.warm_target(scenario, batch.cells, running, found, host, batch.workdir)
                if _run_cells(scenario, batch.cells, run_dir, host, found, Serving(batch.name, batch.spec, running),
                              observer, progress):
                    return True
        except TargetError as exc:
            if up:
                raise  # it ran, and did not stop cleanly: not a failure of its cells
            recorded[batch.name] = serving.manifest_entry(batch.name, batch.spec, None, str(exc))
            run_dir.update_manifest(targets=list(recorded.values()))
            _fail_cells(scenario, batch.cells, batch.spec.display, f"the target did not start: {exc}", run_dir,
                        found, observer, progress)
    return False


def _fail_cells(scenario: Scenario, cells: list[PlannedCell], target: str, why: str, run_dir: store.RunDir,
                found: dict[str, Detection], observer: Observer, progress: _Progress) -> None:
    for planned in cells:
        observer.cell_started(progress.index, planned.cell)
        identity = identity_of(scenario, planned.cell, version_of(found[planned.cell.tool]), target)
        result = not_runnable(scenario, planned, found[planned.cell.tool], identity) or RunResult(
            identity, Outcome(Status.FAILED, error=why))
        run_dir.append(result)
        progress.finished(observer, run_dir, result)


def _run_cells(scenario: Scenario, todo: list[PlannedCell], run_dir: store.RunDir, host: Host,
               found: dict[str, Detection], target: Serving, observer: Observer, progress: _Progress) -> bool:
    for planned in todo:
        cell = planned.cell.at(target.running.url_for(planned.cell.protocol), target.running.ca_file)
        if progress.placement is not None:  # the tools that size themselves by their cores count these
            cell = dataclasses.replace(cell, cpus=progress.placement.generator_cpu_count)
        observer.cell_started(progress.index, cell)
        runnable = planned.support.ok and isinstance(found[cell.tool], Found)
        started_at = store.utc_now()
        try:
            if runnable and progress.last_ran and scenario.cooldown_s:
                time.sleep(scenario.cooldown_s)
            inherited = settle.settle(_port(cell.url), scenario.method.settle_max_s if runnable else 0.0,
                                      progress.earlier + progress.index + 1)
            if progress.fleet is not None and runnable:
                identity = identity_of(scenario, cell, version_of(found[cell.tool]), target.spec.display)
                result = scaleout.run_cell(scenario, planned, cell, run_dir, progress.fleet, target, identity)
            else:
                result = run_cell(scenario, planned, cell, run_dir, host, found[cell.tool], target,
                                  inherited=inherited)
        except KeyboardInterrupt:
            # Stopped outside the tool's run (its baseline, its parse): the cell is stored as
            # interrupted all the same, so that --resume runs it again.
            result = RunResult(identity_of(scenario, cell, version_of(found[cell.tool]), target.spec.display),
                               Outcome(Status.INTERRUPTED, error="interrupted before the cell ended"),
                               Measurement(cell.tool, timing=Timing(started_at=started_at, ended_at=store.utc_now())))
        progress.last_ran = runnable
        run_dir.append(result)
        progress.finished(observer, run_dir, result)
        if result.outcome.status is Status.INTERRUPTED:
            return True
    return False


def _port(url: str | None) -> int | None:
    parsed = urllib.parse.urlsplit(url or "")
    try:
        return parsed.port or {"http": 80, "https": 443}.get(parsed.scheme)
    except ValueError:
        return None


def _record_placement(run_dir: store.RunDir, placement: placed.RunPlacement) -> None:
    machine = run_dir.manifest().machine
    if machine is not None:  # None: a resumed run begun before toolbench recorded the machine
        run_dir.update_manifest(machine=dataclasses.replace(machine, placement=placement.record()))


def _same_profile(scenario: Scenario, run_dir: store.RunDir) -> None:
    """A resumed run keeps the profile it started with: another would plan other cells."""
    was = run_dir.manifest().scenario.profile
    if was != scenario.profile:
        said = f"--profile {was}" if was else "no --profile"
        raise ToolbenchError(f"{run_dir.path}: this run was started with {said}; resume it the same way")


def _workload_record(scenario: Scenario, tool: str) -> dict[str, manifest.FeatureRecord]:
    """What `tool`'s adapter says it can express of the scenario's workload, as the plan saw it, or
    of any workload when the scenario asks which tool fits which purpose; kept so that the report
    shows what the run was planned with, not what a later toolbench would say."""
    adapter = registry.adapters().get(tool)
    if adapter is None or (scenario.workload is None and scenario.compare != "purposes"):
        return {}
    said = (workload.support_for(adapter.workload_features, tool, scenario.workload) if scenario.workload is not None
            else workload.support_of(adapter.workload_features, tool))
    return {feature: manifest.FeatureRecord(s.level.value, s.how) for feature, s in said.items()}


def _manifest(scenario: Scenario, host: Host, found: dict[str, Detection], prerequisites: manifest.Prerequisites,
              fleet: scaleout.Fleet | None, seed: int | None) -> manifest.Manifest:
    facts = host.facts()
    return manifest.Manifest(
        scenario=manifest.ScenarioRecord(name=scenario.name, description=scenario.description,
                                         source=scenario.source, text=scenario.raw_text,
                                         profile=scenario.profile, compare=scenario.compare),
        started_at=store.utc_now(),
        environment=manifest.Environment(host=host.label, **dataclasses.asdict(facts),
                                         python=platform.python_version(), argv=list(sys.argv)),
        tools=[manifest.ToolRecord(tool, version_of(f), _workload_record(scenario, tool)) for tool, f in sorted(found.items())],
        generators=fleet.records() if fleet is not None else [],
        prerequisites=prerequisites,
        observation=manifest.Observation(monitor=manifest.MonitorSettings(**dataclasses.asdict(scenario.monitor)),
                                         probe=manifest.ProbeSettings(**dataclasses.asdict(scenario.probe))),
        machine=bracket.record(scenario, seed),
    )
