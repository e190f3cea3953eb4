"""A cell run on several generators at once (`hosts.generators`): its load split by weight,
one instance of the tool per generator, all started at one instant, each generator's part
kept beside their merge (toolbench.record.merge).

The start: every generator stages its files (and warms up) first; when all are ready (a
barrier), toolbench picks an instant a little ahead and each tool is launched through a
wrapper that sleeps until that instant by its own host's clock, the host's measured offset
(toolbench.hosts.clocks) taken into account. The parts' per-second series line up because of it.

A tool with a distributed mode of its own (Locust's workers, JMeter's servers) plugs in
through `Adapter.distributed` (toolbench.contract.distributed.DistributedTool; toolbench.run.scaleout.own runs it) and is handed the whole fleet instead."""
from __future__ import annotations

import contextlib
import dataclasses
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from toolbench.contract import registry
from toolbench.contract.adapter import Detection, Found, Missing, RawOutput
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.contract.host import Completed, Host, Running
from toolbench.errors import HostError, ParseError, ScenarioError
from toolbench.hosts import clocks, ssh
from toolbench.hosts.lifeline import Lifeline
from toolbench.hosts.local import LocalHost
from toolbench.record import derive, manifest, merge, store
from toolbench.record.schema import (Artifact, ClockOffset, GeneratorPart, Identity, Measurement, Outcome, RunResult,
                                     Status, Timing)
from toolbench.run import execute, warmup
from toolbench.run.generator_watch import GeneratorWatch
from toolbench.run.plan import PlannedCell
from toolbench.run.scaleout import own
from toolbench.run.serving import Serving
from toolbench.scenario.read import GeneratorSpec, Scenario

START_LEAD_S = 1.5  # from the barrier to the common start: time enough to tell every generator when
READY_TIMEOUT_S = 120.0  # staging and starting on every generator, the warm-up's length added
STOP_WAIT_S = 30.0  # after Ctrl-C: how long the parts may take to end once their tools are killed
GO_FILE = ".toolbench-go"  # in the tool's folder: the start instant, in ns of that host's clock
# Waits for the go file ($1), sleeps until the instant it holds by this host's clock, then
# becomes the tool: started ahead, the tool's process exists (and is watched) before it runs.
_AT = ('while [ ! -e "$1" ]; do sleep 0.05; done; at=$(cat "$1"); shift; now=$(date +%s%N); ns=$((at - now)); '
       'if [ "$ns" -gt 0 ]; then sleep "$((ns / 1000000000)).$(printf %09d $((ns % 1000000000)))"; fi; exec "$@"')
_GO = 'printf %s "$1" > "$2.tmp" && mv -f "$2.tmp" "$2"'


@dataclass(frozen=True)
class Generator:
    spec: GeneratorSpec
    host: Host | None  # None: it could not be reached at the start (`error` says why)
    clock: ClockOffset | None  # None: this machine's own clock
    error: str | None = None

    @property
    def name(self) -> str:
        return self.spec.name


@dataclass
class Fleet:
    """The generators of a run, connected, with the tools found on each."""

    generators: list[Generator]
    found: dict[str, dict[str, Detection]] = field(default_factory=dict)  # generator -> tool -> detection

    def with_lifeline(self, life: Lifeline) -> "Fleet":
        """Local generators' tools recorded in the run's lifeline, as every process toolbench
        starts on this machine is (remote ones die with their SSH channel)."""
        generators = [dataclasses.replace(g, host=g.host.with_lifeline(life)) if isinstance(g.host, LocalHost) else g
                      for g in self.generators]
        return Fleet(generators, self.found)

    def records(self) -> list[manifest.GeneratorRecord]:
        """Every generator as the run's manifest keeps it, with the versions found on it."""
        return [manifest.GeneratorRecord(
            name=g.name, host=g.host.label if g.host is not None else g.spec.host.address, weight=g.spec.weight,
            tools=[manifest.ToolRecord(tool, d.version if isinstance(d, Found) else None)
                   for tool, d in sorted(self.found.get(g.name, {}).items())],
            clock=g.clock, error=g.error) for g in self.generators]

    @property
    def reached(self) -> list[Generator]:
        return [g for g in self.generators if g.host is not None]

    def detection(self, tool: str) -> Detection:
        """The tool as the first generator reached has it, or the first reason one has not."""
        for generator in self.reached:
            detection = self.found[generator.name][tool]
            if not isinstance(detection, Found) and len(self.generators) > 1:
                return Missing(f"generator {generator.name}: {detection.reason}")
            if not isinstance(detection, Found):
                return detection
        return self.found[self.reached[0].name][tool]


def connect(scenario: Scenario, stack: contextlib.ExitStack, known_hosts: Path | None,
            trust_new_key: bool) -> Fleet:
    """Every generator connected (closed with `stack`), its tools given the scenario's
    ulimits, its clock's offset measured. One that cannot be reached (refused, its host key
    changed) fails its part of every cell with the reason; none reached is a HostError."""
    generators = []
    for spec in scenario.generators:
        try:
            host = stack.enter_context(contextlib.closing(ssh.connect(spec.host, known_hosts=known_hosts,
                                                                      trust_new_key=trust_new_key)))
            generators.append(Generator(spec, host.with_limits(scenario.prerequisites.ulimit), clocks.offset(host)))
        except HostError as exc:
            generators.append(Generator(spec, None, None, f"not reached at the start: {exc}"))
    fleet = Fleet(generators)
    if not fleet.reached:
        raise HostError("; ".join(f"generator {g.name}: {g.error}" for g in generators))
    return fleet


def split(cell: Cell, generators: Sequence[GeneratorSpec]) -> list[Cell]:
    """The cell's share for each generator, by weight: connections and a total request count
    by largest remainder, a rate in proportion. A share of nothing is a ScenarioError."""
    weights = [g.weight for g in generators]
    concurrency = _shares(cell.concurrency, weights)
    requests = _shares(cell.stop.requests, weights) if cell.stop.requests is not None else None
    parts = []
    for i, generator in enumerate(generators):
        if concurrency[i] == 0 or (requests is not None and requests[i] == 0):
            what = f"concurrency {cell.concurrency}" if concurrency[i] == 0 else f"{cell.stop.requests} requests"
            raise ScenarioError(f"{cell.id}: {what} split over {len(generators)} generators by weight leaves "
                                f"{generator.name} nothing; raise it or change the weights")
        stop = dataclasses.replace(cell.stop, requests=requests[i]) if requests is not None else cell.stop
        rate = cell.rate_rps * generator.weight / sum(weights) if cell.rate_rps is not None else None
        parts.append(dataclasses.replace(cell, concurrency=concurrency[i], stop=stop, rate_rps=rate))
    return parts


def check_split(cells: Sequence[PlannedCell], generators: Sequence[GeneratorSpec]) -> None:
    """Every cell splits, checked before anything runs."""
    for planned in cells:
        split(planned.cell, generators)


def _shares(total: int, weights: Sequence[float]) -> list[int]:
    exact = [total * w / sum(weights) for w in weights]
    shares = [int(x) for x in exact]
    by_remainder = sorted(range(len(weights)), key=lambda i: exact[i] - shares[i], reverse=True)
    for i in by_remainder[:total - sum(shares)]:
        shares[i] += 1
    return shares


@dataclass
class _Start:
    """The barrier every part waits at, and the instant they start, once all are ready."""

    barrier: threading.Barrier
    epoch_s: float = 0.0
    stopped: threading.Event = field(default_factory=threading.Event)  # Ctrl-C: no part starts any more

    @classmethod
    def of(cls, parties: int) -> "_Start":
        start = cls(threading.Barrier(parties))
        start.barrier = threading.Barrier(parties, action=start._pick)
        return start

    def _pick(self) -> None:
        self.epoch_s = time.time() + START_LEAD_S

    def wait(self, timeout_s: float) -> float:
        self.barrier.wait(timeout_s)
        return self.epoch_s

    def stop(self) -> None:
        self.stopped.set()
        self.barrier.abort()


@dataclass
class _PartRun:
    generator: Generator
    cell: Cell
    workdir: Path
    completed: Completed | None = None
    raw: RawOutput | None = None
    running: Running | None = None  # its tool while it runs, for a Ctrl-C to kill from the main thread
    watch: GeneratorWatch | None = None
    error: str | None = None
    notes: list[str] = field(default_factory=list)


def on_go(argv: Sequence[str], tool_dir: Path) -> list[str]:
    """`argv`, started when told (go()), at the instant it is told."""
    return ["sh", "-c", _AT, "sh", str(tool_dir / GO_FILE), *argv]


def go(host: Host, tool_dir: Path, epoch_s: float, clock: ClockOffset | None) -> None:
    """Tells a tool started by on_go() to run at `epoch_s` of toolbench's clock, as that
    host's clock reads it."""
    offset_s = clock.offset_ms / 1000.0 if clock is not None else 0.0
    said = host.capture(["sh", "-c", _GO, "sh", str(int((epoch_s + offset_s) * 1e9)), str(tool_dir / GO_FILE)])
    if said.exit_code != 0:
        raise HostError(f"{host.label}: cannot tell the tool to start: {said.stderr.strip()[:200]}")


def _run_part(part: _PartRun, start: _Start, scenario: Scenario, run_dir: store.RunDir, target: Serving,
              found: Found) -> None:
    """One generator's part, in a thread of its own: staged, warmed up, then at the common
    start. A failure before the start breaks the barrier, so no other part starts alone."""
    generator, cell, host = part.generator, part.cell, part.generator.host
    assert host is not None, "run only on a generator reached"
    adapter = registry.get(cell.tool)
    ready_s = READY_TIMEOUT_S + cell.warmup_s

    def run(argv: list[str], env: dict[str, str], tool_dir: Path) -> tuple[Completed, None]:
        part.watch = GeneratorWatch(scenario, cell, host, tool_dir, part.workdir)
        part.watch.prepare()
        running = host.start(on_go(argv, tool_dir), cwd=tool_dir, stdout=part.workdir / "stdout.txt",
                             stderr=part.workdir / "stderr.txt", env=env)
        part.running = running
        try:
            if start.stopped.is_set():  # Ctrl-C came between the start and the line above
                raise threading.BrokenBarrierError
            part.watch.start(running)
            epoch = start.wait(ready_s)
            go(host, tool_dir, epoch, generator.clock)
        except BaseException:
            running.wait(0)  # killed: it must not start alone
            part.watch.stop()
            raise
        try:
            waited = time.monotonic() - running.started
            return running.wait(waited + (epoch - time.time()) + cell.timeout_s), None
        finally:
            part.watch.stop()

    try:
        _, part.notes = warmup.before(adapter, found, cell, part.workdir, host, run_dir.relative)
        part.completed, part.raw, _ = execute.staged(adapter, found, cell, part.workdir, host, run)
    except threading.BrokenBarrierError:
        part.error = "did not start: " + ("interrupted" if start.stopped.is_set() else
                                          "another generator was not ready")
    except (HostError, warmup.WarmupFailed, OSError) as exc:
        start.barrier.abort()
        part.error = exc.reason if isinstance(exc, warmup.WarmupFailed) else str(exc)
    except Exception as exc:  # noqa: BLE001 -- said as this part's failure, in the thread that met it
        start.barrier.abort()
        part.error = f"{type(exc).__name__}: {exc}"


def run_cell(scenario: Scenario, planned: PlannedCell, cell: Cell, run_dir: store.RunDir, fleet: Fleet,
             target: Serving, identity: Identity) -> RunResult:
    """The cell on every generator of `fleet`, each part's figures kept and merged when every
    part succeeded; a part that failed makes the cell PARTIAL, with its reason."""
    adapter = registry.get(cell.tool)
    tool = adapter.distributed()
    if tool is not None:
        return own.cell_result(tool, scenario, planned, cell, run_dir, fleet, target, identity)
    workdir = run_dir.cell_dir(cell.id)
    shares = split(cell, [g.spec for g in fleet.generators])
    parts = [_PartRun(g, share, _folder(workdir, g.name), error=g.error) for g, share in zip(fleet.generators, shares)]
    start = _Start.of(len(fleet.reached))
    started_at = store.utc_now()
    with execute.CellWatchers(scenario, cell, target, workdir) as watchers:
        threads = []
        for part in (p for p in parts if p.generator.host is not None):
            found = fleet.found[part.generator.name][cell.tool]
            assert isinstance(found, Found), "the runner stops a tool missing on a generator"
            # A daemon: one left busy after a Ctrl-C (see _join) must not hold toolbench's exit.
            threads.append(threading.Thread(target=_run_part, name=f"generator {part.generator.name}",
                                            args=(part, start, scenario, run_dir, target, found), daemon=True))
        interrupted = _join(threads, parts, start)
    ended_at = store.utc_now()
    kept = [_part(p, run_dir, adapter, interrupted) for p in parts]
    return _result(identity, cell, kept, watchers, Timing(started_at=started_at, ended_at=ended_at), run_dir,
                   workdir, [note for p in parts for note in p.notes], interrupted)


def _join(threads: list[threading.Thread], parts: list[_PartRun], start: _Start) -> bool:
    """Every part's thread started and ended. Ctrl-C (in this, the main thread) kills every
    part's tool, on its own host, and waits for the parts to end: True then. A part still
    busy after STOP_WAIT_S (a stalled copy) is left to the lifeline and the closing SSH
    connections, which end whatever toolbench started there."""
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return False
    except KeyboardInterrupt:
        start.stop()
        for part in parts:
            if part.running is not None:
                with contextlib.suppress(HostError, OSError):
                    part.running.kill()
        deadline = time.monotonic() + STOP_WAIT_S
        for thread in threads:
            if thread.ident is not None:
                thread.join(max(0.0, deadline - time.monotonic()))
        return True


def _folder(workdir: Path, name: str) -> Path:
    folder = store.contained(workdir, f"gen-{name}")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _part(run: _PartRun, run_dir: store.RunDir, adapter: "registry.Adapter", interrupted: bool) -> GeneratorPart:
    generator, cell = run.generator, run.cell
    common = dict(name=generator.name, host=generator.host.label if generator.host else generator.spec.host.address,
                  concurrency=cell.concurrency,
                  rate_rps=cell.rate_rps, requests=cell.stop.requests, clock=generator.clock,
                  path=run_dir.relative(run.workdir))
    if interrupted:  # killed mid-run: its files stay on disk, its figures are not a run's
        return GeneratorPart(status=Status.INTERRUPTED, measurement=Measurement(cell.tool),
                             error=run.error or "interrupted before the tool ended", **common)
    if run.completed is None or run.raw is None:
        return GeneratorPart(status=Status.FAILED, measurement=Measurement(cell.tool), error=run.error, **common)
    measurement: Measurement | None
    try:
        measurement, parse_error = parse_checked(adapter, run.raw), None
    except ParseError as exc:
        measurement, parse_error = None, str(exc)
    completed = run.completed
    status, error = derive.cell_status(measurement, completed.exit_code, timed_out=completed.timed_out,
                                       interrupted=completed.interrupted, timeout_s=cell.timeout_s,
                                       stderr=run.raw.stderr, ok_exit_codes=adapter.ok_exit_codes,
                                       wall_s=completed.wall_s)
    if parse_error:
        status, error = Status.FAILED, "; ".join(e for e in (error, parse_error) if e)
    requests = measurement.counts.requests_total if measurement else None
    cost, bound = run.watch.summary(completed, requests) if run.watch else (None, None)
    timing = dataclasses.replace(measurement.timing if measurement else Timing(), wall_s=completed.wall_s)
    return GeneratorPart(status=status, measurement=dataclasses.replace(measurement or Measurement(cell.tool),
                                                                        timing=timing),
                         exit_code=completed.exit_code, error=error, cost=cost, generator_bound=bound, **common)


def _result(identity: Identity, cell: Cell, parts: list[GeneratorPart], watchers: "execute.CellWatchers",
            timing: Timing, run_dir: store.RunDir, workdir: Path, notes: list[str], interrupted: bool) -> RunResult:
    artifacts = [Artifact(role=f"{p.name} {path.stem}", path=run_dir.relative(path))
                 for p in parts for path in sorted((workdir / f"gen-{p.name}").glob("*.*")) if path.is_file()]
    failed = [p for p in parts if p.status is not Status.OK]
    if interrupted:
        return RunResult(identity, Outcome(Status.INTERRUPTED, error="interrupted before the cell ended; --resume "
                                           "runs it again", artifacts=artifacts),
                         Measurement(cell.tool, timing=timing), notes=notes, generators=parts)
    if failed:
        said = "; ".join(f"generator {p.name}: {p.error or p.status.value}" for p in failed)
        status = Status.PARTIAL if len(failed) < len(parts) else Status.FAILED
        if status is Status.PARTIAL:
            said = f"partial: {len(failed)} of {len(parts)} generators failed, nothing summed ({said})"
        return RunResult(identity, Outcome(status, error=said, artifacts=artifacts), Measurement(cell.tool, timing=timing),
                         notes=notes, generators=parts, probe=watchers.probe_summary(None),
                         server_cost=watchers.server_cost(None), tls=watchers.handshakes(),
                         target_log=watchers.server.target_log(), network=watchers.server.network())
    merged = merge.measurements([p.measurement for p in parts], cell.concurrency, cell.url)
    walls = [p.measurement.timing.wall_s for p in parts if p.measurement.timing.wall_s is not None]
    merged = dataclasses.replace(merged, timing=dataclasses.replace(
        timing, duration_s=merged.timing.duration_s, wall_s=max(walls) if walls else None))
    identity = dataclasses.replace(identity, tool_version=identity.tool_version or merged.tool_version)
    return RunResult(identity, Outcome(Status.OK, exit_code=0, artifacts=artifacts), merged, notes=notes,
                     generators=parts, probe=watchers.probe_summary(merged.latency),
                     server_cost=watchers.server_cost(merged.counts.requests_total), tls=watchers.handshakes(),
                     target_log=watchers.server.target_log(), network=watchers.server.network())

