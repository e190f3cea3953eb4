"""Runs a scenario: plan, target, then each cell in turn, each result appended
to the run directory as soon as it exists."""
from __future__ import annotations

import contextlib
import dataclasses
import platform
import shlex
import sys
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

from toolbench import derive, diagnose, invariants, lifeline, monitor, plan, prereq, probe, registry, ssh, store, targets
from toolbench.adapter import Adapter, RawOutput
from toolbench.errors import HostError, Interrupted, Notice, ParseError, ScenarioError, ToolbenchError
from toolbench.hosts import Completed, Host, LocalHost, RemoteHost, Running
from toolbench.plan import Cell, PlannedCell
from toolbench.scenario import Scenario
from toolbench.servers.cost import ServerMonitor, summarize
from toolbench.schema import (Artifact, GeneratorCost, Identity, LoadModel, Measurement, Outcome, ProbeSummary,
                              RunResult, Status, Timing, result_from_measurement)


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
        known_hosts: Path | None = None, trust_new_key: bool = False) -> RunSummary:
    """Raises prereq.PrerequisiteError before anything runs when a required prerequisite is
    unmet, unless `go_on`; the findings go into the manifest either way."""
    _check_hosts(scenario)
    if host is not None:
        return _run_on(scenario, reports_root, resume, observer or QuietObserver(), host, go_on)
    with contextlib.closing(ssh.connect(scenario.generator, known_hosts=known_hosts,
                                        trust_new_key=trust_new_key)) as generator:
        return _run_on(scenario, reports_root, resume, observer or QuietObserver(), generator, go_on)


def _check_hosts(scenario: Scenario) -> None:
    if not scenario.target_host.is_local:
        raise ScenarioError(f"{scenario.source}: hosts.target: toolbench does not start targets on other "
                            "machines yet; start it there and give its `url` as the target")
    loopback = scenario.generator.address in ("localhost", "::1") or scenario.generator.address.startswith("127.")
    for name, spec in scenario.targets.items():
        if not scenario.generator.is_local and spec.bundled and not loopback:
            raise ScenarioError(f"{spec.where or scenario.source}: targets.{name}.server: the bundled {spec.kind} "
                                f"listens on 127.0.0.1, out of reach of a generator at {scenario.generator.address}; "
                                "give a `url` that machine can reach")


def _run_on(scenario: Scenario, reports_root: Path, resume: Path | None, observer: Observer, host: Host,
            go_on: bool) -> RunSummary:
    # The tools get the scenario's ulimits: the limits are checked and applied in one place.
    host = host.with_limits(scenario.prerequisites.ulimit)
    cells = plan.expand(scenario)
    findings = prereq.check(host, scenario.prerequisites, max(scenario.matrix.concurrency))
    if prereq.blocking(findings) and not go_on:
        raise prereq.refusal(findings, scenario.source)
    run_dir = store.RunDir.open(resume) if resume else store.RunDir.create(reports_root, scenario.name)
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
            checked = {"checked_at": store.utc_now(), "host": host.label,
                       "went_on": bool(prereq.blocking(findings)), "findings": [f.to_dict() for f in findings]}
            resumed = {"at": store.utc_now(), "stopped_leftovers": left, "repaired": repaired}
            for said in ([f"stopped what the earlier run left running: {', '.join(left)}"] if left else []) + (
                    [repaired] if repaired else []):
                warnings.warn(Notice(said), stacklevel=2)
            return _run_locked(scenario, cells, run_dir, observer, host, life, checked, resumed if resume else None)


def _run_locked(scenario: Scenario, cells: list[PlannedCell], run_dir: store.RunDir, observer: Observer, host: Host,
                life: lifeline.Lifeline, checked: dict[str, object], resumed: dict[str, object] | None) -> RunSummary:
    """The run proper, with its folder locked. The manifest ends saying how the run ended:
    complete, interrupted, or failed with the error."""
    try:
        done = run_dir.finished_cells() if resumed else set()
        found = _detect_tools(host, {c.cell.tool for c in cells})
        if resumed is None:
            run_dir.write_manifest(_manifest(scenario, host, found, checked))
        else:
            _same_profile(scenario, run_dir)
            earlier = run_dir.manifest().get("resumed")
            run_dir.update_manifest(prerequisites=checked, status="starting",
                                    resumed=[*(earlier if isinstance(earlier, list) else []), resumed])
        run_dir.reserve_space()
        todo = [c for c in cells if c.cell.id not in done]
        observer.planned(len(cells), len(cells) - len(todo))
        interrupted = False
        # Each target in turn, started once for its cells (a stopgap until targets run per the
        # runner's own loop with `restart` and failures per target).
        for name in scenario.matrix.target or tuple(scenario.targets):
            mine = [c for c in todo if c.cell.target == name]
            if interrupted or not mine:
                continue
            folder = run_dir.path / ("target" if len(scenario.targets) == 1 else f"target-{name}")
            with targets.started(scenario.targets[name], folder, life, max(scenario.matrix.concurrency)) as target:
                run_dir.update_manifest(target={"label": target.label, "url": target.base_url,
                                                "version": target.version}, status="running")
                interrupted = _run_cells(scenario, mine, run_dir, host, found, target, observer)
    except KeyboardInterrupt:
        interrupted = True
    except BaseException as exc:
        problem = run_dir.write_failure(exc) if isinstance(exc, OSError) else None
        said = problem or exc
        error = str(said) if isinstance(said, ToolbenchError) else f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(ToolbenchError):  # the error in flight says more
            run_dir.record_end("failed", error)
        if problem is not None:
            raise problem from None
        raise
    run_dir.record_end("interrupted" if interrupted else "complete", None)
    if interrupted:
        raise Interrupted(run_dir.path)
    return RunSummary(run_dir.path, len(run_dir.results()), interrupted)


@dataclass(frozen=True)
class ToolFound:
    version: str | None
    why_not: str = ""  # when version is None: what detection said


def _run_cells(scenario: Scenario, todo: list[PlannedCell], run_dir: store.RunDir, host: Host,
               found: dict[str, ToolFound], target: targets.RunningTarget, observer: Observer) -> bool:
    last_ran = False
    for index, planned in enumerate(todo):
        cell = planned.cell.at(target.base_url)
        observer.cell_started(index, cell)
        runnable = planned.support.ok and found[cell.tool].version is not None
        started_at = store.utc_now()
        try:
            if runnable and last_ran and scenario.cooldown_s:
                time.sleep(scenario.cooldown_s)
            watch = runnable and scenario.monitor.enabled and bool(target.pids)
            server = ServerMonitor(target.pids, target.port, scenario.monitor.interval_s) if watch else None
            if server:
                server.start()
            try:
                result = run_cell(scenario, planned, cell, run_dir, host, found[cell.tool], target.label)
            finally:
                spent = server.stop() if server else None
            if spent is not None and result.outcome.status is not Status.UNSUPPORTED:
                result = dataclasses.replace(result, server_cost=summarize(spent, result.counts.requests_total))
        except KeyboardInterrupt:
            # Stopped outside the tool's run (its baseline, its parse): the cell is stored as
            # interrupted all the same, so that --resume runs it again.
            result = RunResult(_identity(scenario, cell, found[cell.tool].version, target.label),
                               Outcome(Status.INTERRUPTED, error="interrupted before the cell ended"),
                               timing=Timing(started_at=started_at, ended_at=store.utc_now()))
        last_ran = runnable
        run_dir.append(result)
        observer.cell_finished(index, result)
        if result.outcome.status is Status.INTERRUPTED:
            return True
    return False


def _identity(scenario: Scenario, cell: Cell, version: str | None, target_label: str) -> Identity:
    return Identity(
        scenario=scenario.name, cell_id=cell.id, tool=cell.tool, tool_version=version,
        target_label=target_label, url=cell.url, concurrency=cell.concurrency, keepalive=cell.keepalive,
        repetition=cell.repetition, model=LoadModel.OPEN if cell.rate_rps else LoadModel.CLOSED,
        rate_rps=cell.rate_rps, variant=cell.variant)


def run_cell(scenario: Scenario, planned: PlannedCell, cell: Cell, run_dir: store.RunDir, host: Host,
             found: ToolFound, target_label: str) -> RunResult:
    version = found.version
    identity = _identity(scenario, cell, version, target_label)
    if not planned.support.ok:
        return RunResult(identity, Outcome(Status.UNSUPPORTED, error=planned.support.reason))
    if version is None:
        return RunResult(identity, Outcome(Status.TOOL_MISSING, error=found.why_not))
    adapter = registry.get(cell.tool)
    workdir = run_dir.cell_dir(cell.id)
    started_at = store.utc_now()
    try:
        completed, raw, watched, hangs = _execute_with_retries(adapter, cell, workdir, host, scenario, run_dir)
    except HostError as exc:
        return RunResult(identity, Outcome(Status.FAILED, error=str(exc)),
                         timing=Timing(started_at=started_at, ended_at=store.utc_now()))
    ended_at = store.utc_now()
    artifacts = [Artifact(role="stdout", path=run_dir.relative(workdir / "stdout.txt")),
                 Artifact(role="stderr", path=run_dir.relative(workdir / "stderr.txt"))]
    artifacts += [Artifact(role=role, path=run_dir.relative(path)) for role, path in raw.files.items()]
    if watched.series is not None and watched.series.exists():
        artifacts.append(Artifact(role="monitor", path=run_dir.relative(watched.series)))
    measurement, parse_error = _parse(adapter, raw)
    status, error = derive.judge(measurement, completed.exit_code, timed_out=completed.timed_out,
                                 interrupted=completed.interrupted, timeout_s=cell.timeout_s,
                                 stderr=raw.stderr, ok_exit_codes=getattr(adapter, "ok_exit_codes", (0,)),
                                 wall_s=completed.wall_s, reach=_reach_if_nothing_counted(measurement, completed, cell))
    if parse_error and status is Status.OK:
        status, error = Status.FAILED, parse_error
    elif parse_error:
        error = f"{error}; {parse_error}"
    outcome = Outcome(status, exit_code=completed.exit_code, error=error, artifacts=artifacts)
    timing = Timing(started_at=started_at, ended_at=ended_at, wall_s=completed.wall_s,
                    duration_s=measurement.timing.duration_s if measurement else None)
    cost, probed = _observations(scenario, cell, completed, watched, measurement)
    if measurement is None:
        return RunResult(identity, outcome, timing=timing, cost=cost, probe=probed, notes=hangs)
    identity = dataclasses.replace(identity, tool_version=version or measurement.tool_version)
    notes = measurement.notes + hangs + _short_run_note(cell, completed.wall_s)
    return result_from_measurement(identity, outcome, dataclasses.replace(measurement, timing=timing, notes=notes),
                                   cost=cost, probe=probed)


def _execute_with_retries(adapter: Adapter, cell: Cell, workdir: Path, host: Host, scenario: Scenario,
                          run_dir: store.RunDir) -> tuple[Completed, RawOutput, "Watched", list[str]]:
    """A tool known to hang now and then at the end of a run (`retries_on_hang`) is run
    again after a hang; the hung attempt's output is kept beside, and noted."""
    attempts = 1 + int(getattr(adapter, "retries_on_hang", 0))
    hangs: list[str] = []
    for attempt in range(1, attempts + 1):
        completed, raw, watched = _execute(adapter, cell, workdir, host, scenario)
        if not completed.timed_out or attempt == attempts:
            break
        kept = workdir / f"hung-{attempt}"
        kept.mkdir(exist_ok=True)
        stay = {"command.txt", *adapter.build(cell, workdir).files}  # what the next attempt needs
        for path in list(workdir.iterdir()):
            if path.is_file() and path.name not in stay:
                path.rename(kept / path.name)
        hangs.append(f"{cell.tool} was still running at the hard limit of {cell.timeout_s:g}s and was killed "
                     f"(attempt {attempt} of {attempts}; its output is in {run_dir.relative(kept)}); it was run again")
    return completed, raw, watched, hangs


def _reach_if_nothing_counted(m: Measurement | None, completed: Completed, cell: Cell) -> derive.Reach | None:
    """A tool that ran to its end and counted nothing at all leaves its cause open: one
    connection of toolbench's own tells a target that never accepts from one that never answers."""
    if completed.timed_out or completed.interrupted or not derive.counted_nothing(m) or cell.url is None:
        return None
    return diagnose.reach(cell.url)


def _short_run_note(cell: Cell, wall_s: float) -> list[str]:
    """Some tools end a timed run early (siege's -t often does): say so, rather than
    compare a half-second run with others' full ones unnoticed."""
    asked = cell.stop.duration_s
    if asked is None or wall_s >= 0.9 * asked:
        return []
    return [f"the tool ran {wall_s:.2f}s of the {asked:g}s asked"]


@dataclass(frozen=True)
class Watched:
    """What toolbench observed around one run of a tool."""

    monitor: monitor.MonitorReport | None
    baseline: probe.Samples | None
    during: probe.Samples | None
    series: Path | None


def _execute(adapter: Adapter, cell: Cell, workdir: Path, host: Host,
             scenario: Scenario) -> tuple[Completed, RawOutput, Watched]:
    """On a remote generator the tool runs in a temporary folder there: its input files go
    over first, its output files come back after; stdout and stderr stream back live."""
    far = cast(RemoteHost, host) if host.remote else None
    remote = far.mkdtemp() if far else None
    tool_dir = Path(remote) if remote else workdir
    invocation = adapter.build(cell, tool_dir)
    for name, content in invocation.files.items():
        (workdir / name).write_text(content)
        if far:
            far.put(workdir / name, f"{remote}/{name}")
    (workdir / "command.txt").write_text(shlex.join(invocation.argv) + "\n")
    assert cell.url is not None
    spec = scenario.probe
    # A probe request never waits longer than the whole cell may last.
    probe_timeout = min(spec.timeout_s, cell.timeout_s)
    target = probe.ProbeTarget.of(cell.url, cell.request)
    base = probe.baseline(target, spec.baseline_requests, probe_timeout) if spec.enabled else None
    # psutil sees only this machine's processes: a remote tool is not monitored.
    series = workdir / "monitor.jsonl" if scenario.monitor.enabled and not remote else None
    mon = monitor.Monitor(scenario.monitor.interval_s, monitor.port_of(cell.url), series) if series else None
    prb = probe.Probe(target, spec.interval_s, probe_timeout) if spec.enabled else None
    try:
        try:
            running = host.start(invocation.argv, cwd=tool_dir, stdout=workdir / "stdout.txt",
                                 stderr=workdir / "stderr.txt", env=invocation.env)
            completed = _watch(running, cell.timeout_s, mon, prb)
        finally:
            # However the tool's run ended, its watchers end with it; the monitor last, as
            # writing its series may fail (a full disk).
            during = prb.stop() if prb else None
            report = mon.stop() if mon else None
        if far and remote:
            _fetch(far, remote, invocation.outputs, workdir)
    finally:
        if far and remote:
            far.remove_tree(remote)
    files = {role: workdir / name for role, name in invocation.outputs.items() if (workdir / name).exists()}
    raw = RawOutput(stdout=(workdir / "stdout.txt").read_text(errors="replace"),
                    stderr=(workdir / "stderr.txt").read_text(errors="replace"),
                    exit_code=completed.exit_code, files=files, source=str(workdir))
    return completed, raw, Watched(report, base, during, series)


def _fetch(host: RemoteHost, remote: str, outputs: dict[str, str], workdir: Path) -> None:
    for name in outputs.values():
        try:
            host.get(f"{remote}/{name}", workdir / name)
        except HostError:
            pass  # the tool did not write it: the parser says what that means


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
        return invariants.parse_checked(adapter, raw), None
    except ParseError as exc:
        return None, str(exc)


def _detect_tools(host: Host, tools: set[str]) -> dict[str, ToolFound]:
    found = {}
    for tool in sorted(tools):
        try:
            version = registry.get(tool).detect(host)
        except HostError as exc:
            found[tool] = ToolFound(None, str(exc))
            continue
        found[tool] = ToolFound(version, "" if version else f"{tool} is not installed on {host.label}")
    return found


def _same_profile(scenario: Scenario, run_dir: store.RunDir) -> None:
    """A resumed run keeps the profile it started with: another would plan other cells."""
    stored = run_dir.manifest().get("scenario")
    was = stored.get("profile") if isinstance(stored, dict) else None
    if was != scenario.profile:
        said = f"--profile {was}" if was else "no --profile"
        raise ToolbenchError(f"{run_dir.path}: this run was started with {said}; resume it the same way")


def _manifest(scenario: Scenario, host: Host, found: dict[str, ToolFound],
              prerequisites: dict[str, object]) -> dict[str, object]:
    facts = host.facts()
    return {
        "toolbench_manifest": 1,
        "scenario": {"name": scenario.name, "source": scenario.source, "text": scenario.raw_text,
                     "profile": scenario.profile, "compare": scenario.compare,
                     "description": scenario.description},
        "started_at": store.utc_now(),
        "status": "starting",
        "environment": {"host": host.label, **facts.__dict__, "python": platform.python_version(),
                        "argv": sys.argv},
        "tools": {tool: f.version for tool, f in found.items()},
        "prerequisites": prerequisites,
        "observation": {"monitor": dataclasses.asdict(scenario.monitor), "probe": dataclasses.asdict(scenario.probe)},
    }
