"""Run folders for the report tests, built from recorded ab and siege output.

Each measured cell is parsed by the tool's adapter from a recorded fixture (tests/fixtures),
exactly as the runner would; failed, unsupported and missing-tool cells are outcomes the
runner records without any tool output. Generator cost and probe figures are toolbench's own
measurements: they are given here as the monitor and probe would store them."""
from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from toolbench.contract import registry
from toolbench.contract.adapter import RawOutput
from toolbench.contract.checked import parse_checked
from toolbench.record import derive, store
from toolbench.record.manifest import (Environment, Finding, Manifest, Prerequisites, RunStatus, ScenarioRecord,
                                       TargetRecord, ToolRecord)
from toolbench.record.schema import Artifact, GeneratorCost, Identity, Outcome, ProbeSummary, RunResult, Status

FIXTURES = Path(__file__).parents[1] / "fixtures"
VERSIONS = {"ab": "2.3", "siege": "4.0.7", "engine": "0.1.0"}  # as the runner detects them
ENVIRONMENT = Environment(host="local", hostname="bench-1", cpu_count=2, cpu_model="Test CPU @ 2.0GHz",
                          memory_bytes=8 * 1024 ** 3, kernel="6.1.0-test", os="Debian GNU/Linux 12 (bookworm)",
                          python="3.11.7")


@dataclass(frozen=True)
class Recorded:
    """One cell: a recorded fixture and how the plan would have named it."""

    tool: str
    case: str  # the fixture's name without extension, e.g. "2.3-keepalive"
    concurrency: int
    keepalive: bool
    repetition: int = 1
    cost: GeneratorCost | None = None
    probe: ProbeSummary | None = None


def raw_output(tool: str, case: str) -> tuple[RawOutput, list[Path]]:
    folder = FIXTURES / tool
    stdout = (folder / f"{case}.txt").read_text()
    stderr_path = folder / f"{case}.stderr.txt"
    stderr = stderr_path.read_text() if stderr_path.exists() else ""
    files = {ext: folder / f"{case}.{ext}" for ext in ("csv", "tsv", "json", "log")
             if (folder / f"{case}.{ext}").exists()}
    paths = [folder / f"{case}.txt"] + ([stderr_path] if stderr_path.exists() else []) + list(files.values())
    return RawOutput(stdout=stdout, stderr=stderr, exit_code=0, files=files, source=case), paths


def measured(run: store.RunDir, scenario: str, cell: Recorded) -> RunResult:
    """Parses the fixture as the runner parses a tool's output, and keeps it as the cell's raw artifacts."""
    raw, paths = raw_output(cell.tool, cell.case)
    adapter = registry.get(cell.tool)
    measurement = parse_checked(adapter, raw)
    status, error = derive.cell_status(measurement, 0, timed_out=False, interrupted=False, timeout_s=30, stderr=raw.stderr)
    cell_id = f"{cell.tool}-c{cell.concurrency}-{'ka' if cell.keepalive else 'close'}-rep{cell.repetition}"
    folder = run.cell_dir(cell_id)
    artifacts = []
    for path in paths:
        role = "stderr" if path.name.endswith(".stderr.txt") else (
            "stdout" if path.suffix == ".txt" else path.suffix.lstrip("."))
        shutil.copy(path, folder / path.name)
        artifacts.append(Artifact(role=role, path=run.relative(folder / path.name)))
    identity = Identity(scenario=scenario, cell_id=cell_id, tool=cell.tool,
                        tool_version=VERSIONS[cell.tool], target_label="nginx-static",
                        url="http://127.0.0.1:8080/", concurrency=cell.concurrency, keepalive=cell.keepalive,
                        repetition=cell.repetition)
    outcome = Outcome(status, exit_code=0, error=error, artifacts=artifacts)
    return RunResult(identity, outcome, measurement, cost=cell.cost, probe=cell.probe)


def not_run(scenario: str, tool: str, concurrency: int, keepalive: bool, status: Status, error: str) -> RunResult:
    cell_id = f"{tool}-c{concurrency}-{'ka' if keepalive else 'close'}-rep1"
    identity = Identity(scenario=scenario, cell_id=cell_id, tool=tool, concurrency=concurrency, keepalive=keepalive,
                        target_label="nginx-static")
    return RunResult(identity, Outcome(status, error=error))


def manifest(scenario: str, started_at: str, tools: dict[str, str | None],
             prerequisites: Prerequisites | None = None) -> Manifest:
    return Manifest(
        scenario=ScenarioRecord(scenario, description=f"{scenario} of recorded ab and siege output",
                                source=f"scenarios/{scenario}.yaml",
                                text=f"name: {scenario}\ndescription: {scenario} of recorded ab and siege output\n"),
        started_at=started_at, ended_at=started_at[:14] + "59:00.000Z", status=RunStatus.COMPLETE,
        environment=ENVIRONMENT, tools=[ToolRecord(t, v) for t, v in sorted(tools.items())],
        targets=[TargetRecord("nginx-static", url="http://127.0.0.1:8080", version="1.22.1", kind="nginx-static")],
        prerequisites=prerequisites)


def write_run(root: Path, name: str, scenario: str, started_at: str, results: list[RunResult] | None = None,
              cells: list[Recorded] = (), tools: dict[str, str | None] | None = None,
              prerequisites: Prerequisites | None = None) -> Path:
    path = root / name
    (path / store.RAW).mkdir(parents=True)
    run = store.RunDir(path)
    run.write_manifest(manifest(scenario, started_at, tools or {"ab": "2.3", "siege": "4.0.7"}, prerequisites))
    for cell in cells:
        run.append(measured(run, scenario, cell))
    for result in results or []:
        run.append(result)
    return path


COST_AB = GeneratorCost(cpu_user_s=0.21, cpu_system_s=0.09, cpu_mean_pct=98.5, cpu_peak_pct=100.0,
                        rss_peak_bytes=6_291_456, threads_peak=1, open_files_peak=14, sockets_peak=10,
                        time_wait_peak=3, load_avg_1m_peak=1.4)
PROBE_CLOSE = ProbeSummary(baseline_ms=[0.31, 0.29, 0.33], samples_ms=[0.52, 0.61, 0.48, 0.57], failures=0)
PROBE_SLOW = ProbeSummary(baseline_ms=[0.31, 0.29, 0.33], samples_ms=[24.0, 31.0, 27.5], failures=1)
PREREQUISITES = Prerequisites(checked_at="2026-01-10T09:00:00.000Z", host="local", went_on=False, findings=[
    Finding(kind="ulimit", key="nofile", wanted="65536", found="1024", ok=False, required=True,
            host="local", note="raise it with ulimit -n"),
    Finding(kind="sysctl", key="net.ipv4.tcp_tw_reuse", wanted="1", found="1", ok=True, required=True,
            host="local", note=""),
    Finding(kind="sysctl", key="net.ipv4.tcp_tw_recycle", wanted="1", found=None, ok=None,
            required=False, host="local", note="removed in Linux 4.12")])


def full_run(root: Path, name: str = "study-20260110T090000Z", started_at: str = "2026-01-10T09:00:00.000Z") -> Path:
    """ab and siege at several concurrencies, keep-alive on and off, with repetitions, cost, probe,
    per-second data, a failed cell, a timed-out cell, an unsupported one and a missing tool."""
    cells = [
        Recorded("ab", "2.3-keepalive", 10, True, 1, cost=COST_AB, probe=PROBE_CLOSE),
        Recorded("ab", "2.3-keepalive-gnuplot", 10, True, 2, cost=COST_AB, probe=PROBE_CLOSE),
        Recorded("ab", "2.3-nokeepalive", 10, False, 1, probe=PROBE_CLOSE),
        Recorded("ab", "2.3-partial", 1, False, 1),
        Recorded("ab", "2.3-seed-gevent-c500", 500, False, 1),
        Recorded("ab", "2.3-404", 50, False, 1),
        Recorded("siege", "4.0.7-time", 10, True, 1, probe=PROBE_SLOW),
        Recorded("siege", "4.0.7-time-j", 10, True, 2, probe=PROBE_SLOW),
        Recorded("siege", "4.0.7-benchmark", 10, False, 1),
    ]
    results = [
        not_run("study", "siege", 50, True, Status.TIMED_OUT, "no result within the hard limit of 36s; the tool "
                "was killed"),
        not_run("study", "http_load", 10, True, Status.UNSUPPORTED, "http_load cannot keep connections alive"),
        not_run("study", "jmeter", 10, True, Status.TOOL_MISSING, "jmeter is not installed on local"),
    ]
    return write_run(root, name, "study", started_at, results, cells,
                     tools={"ab": "2.3", "siege": "4.0.7", "http_load": "12mar2006", "jmeter": None},
                     prerequisites=PREREQUISITES)


def failed_run(root: Path) -> Path:
    """Nothing finished: a refused connection, a timeout, an unsupported cell."""
    return write_run(root, "failing-20260111T090000Z", "failing", "2026-01-11T09:00:00.000Z",
                     [not_run("failing", "siege", 10, True, Status.TIMED_OUT, "no result within 36s"),
                      not_run("failing", "http_load", 10, True, Status.UNSUPPORTED, "no keep-alive")],
                     [Recorded("ab", "2.3-refused", 10, True)])


def absent_run(root: Path) -> Path:
    """siege only: no percentiles, no per-second data, no cost, no probe, latency below resolution."""
    return write_run(root, "siege-only-20260112T090000Z", "siege-only", "2026-01-12T09:00:00.000Z", [],
                     [Recorded("siege", "4.0.7-time", 10, True), Recorded("siege", "4.0.7-benchmark", 10, False)],
                     tools={"siege": "4.0.7"})


def single_run(root: Path) -> Path:
    return write_run(root, "single-20260113T090000Z", "single", "2026-01-13T09:00:00.000Z", [],
                     [Recorded("ab", "2.3-keepalive", 10, True)], tools={"ab": "2.3"})


def empty_run(root: Path) -> Path:
    return write_run(root, "empty-20260114T090000Z", "empty", "2026-01-14T09:00:00.000Z", [], [])
