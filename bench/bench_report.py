"""How long a report of a large run takes to render (the bound: a 500-cell run in under 10 s).

Builds a 500-cell run by replicating real results (a stored run's results.jsonl, or
results parsed from the recorded ab and siege fixtures) over a matrix of 6 tools,
7 concurrencies, keep-alive on and off, and 6 repetitions (504 cells, 500 kept), then
renders it several times and prints the times.

    .venv/bin/python bench/bench_report.py [--from RUN_DIR] [--cells 500] [--repeat 3]
"""
from __future__ import annotations

import argparse
import dataclasses
import itertools
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOOLS = ("ab", "siege", "http_load", "jmeter", "locust", "engine")
CONCURRENCIES = (1, 10, 50, 100, 200, 500, 1000)


def seeds(source: Path | None) -> list:
    from toolbench.record import store
    from toolbench.record.schema import Status

    if source is not None:
        found = [r for r in store.RunDir.open(source).results() if r.outcome.status is Status.OK]
        if found:
            return found
    sys.path.insert(0, str(REPO / "tests"))
    from helpers import report_data  # the report tests' builder: real recorded ab and siege output

    with tempfile.TemporaryDirectory() as tmp:
        run = store.RunDir.open(report_data.full_run(Path(tmp)))
        return [r for r in run.results() if r.outcome.status is Status.OK]


def synthetic_run(root: Path, source: Path | None, cells: int) -> Path:
    """Real results under new identities; rates scaled so the curves differ per tool and concurrency."""
    from toolbench.record import store
    from toolbench.record.manifest import Manifest, RunStatus, ScenarioRecord, ToolRecord

    base = seeds(source)
    run = store.RunDir(root / "bench-500-20260101T000000Z")
    (run.path / store.RAW).mkdir(parents=True)
    run.write_manifest(Manifest(ScenarioRecord("bench-500", text="name: bench-500\n"),
                                started_at="2026-01-01T00:00:00.000Z", status=RunStatus.COMPLETE,
                                tools=[ToolRecord(t, "1.0") for t in TOOLS]))
    matrix = itertools.product(TOOLS, CONCURRENCIES, (True, False), range(1, 7))
    for tool, c, keepalive, rep in itertools.islice(matrix, cells):
        # One seed per tool and keep-alive setting, so a series keeps one tool's resolution and fields.
        seed = base[(TOOLS.index(tool) * 2 + (not keepalive)) % len(base)]
        scale = (1 + TOOLS.index(tool)) * (1 + CONCURRENCIES.index(c) / 3) * (1 + rep / 50)
        rates = seed.measurement.rates
        rates = dataclasses.replace(rates, rps=rates.rps and rates.rps * scale / 3,
                                    rps_derived=rates.rps_derived and rates.rps_derived * scale / 3)
        cell_id = f"{tool}-c{c}-{'ka' if keepalive else 'close'}-rep{rep}"
        identity = dataclasses.replace(seed.identity, tool=tool, cell_id=cell_id, concurrency=c, keepalive=keepalive,
                                       repetition=rep)
        run.append(dataclasses.replace(seed, identity=identity,
                                       measurement=dataclasses.replace(seed.measurement, rates=rates)))
    return run.path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--from", dest="source", type=Path, help="a run whose ok results are replicated")
    parser.add_argument("--cells", type=int, default=500)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from toolbench.report import render

    with tempfile.TemporaryDirectory() as tmp:
        run = synthetic_run(Path(tmp), args.source, args.cells)
        times, cpu = [], []
        for _ in range(args.repeat):
            started, started_cpu = time.perf_counter(), time.process_time()
            output = render.render_run(run)
            times.append(time.perf_counter() - started)
            cpu.append(time.process_time() - started_cpu)
        size = output.stat().st_size
        # The command as a user runs it: a fresh process, imports included.
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "toolbench.cli.main", "report", str(run)], check=True,
                       stdout=subprocess.DEVNULL)
        cold = time.perf_counter() - started
    # CPU time beside wall time: on a shared machine the wall time says as much about the neighbours.
    print(f"{args.cells} cells: render {statistics.median(times):.2f} s wall, {statistics.median(cpu):.2f} s CPU "
          f"(median of {len(times)}; wall min {min(times):.2f}, max {max(times):.2f}); `toolbench report` in a "
          f"fresh process {cold:.2f} s; report {size / 1024:.0f} KiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
