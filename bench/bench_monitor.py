"""What watching costs: the monitor's own CPU, and a tool's throughput bare vs under toolbench.

    .venv/bin/python bench/bench_monitor.py [--pairs 5] [--seconds 3]

1. The monitor's own CPU, as a share of one core, while it watches `ab -c 50` against the
   bundled nginx, at a 1 s and a 0.1 s interval, with keep-alive on and off (off leaves tens
   of thousands of TIME_WAIT sockets on the host). Measured from outside the monitor: this
   process's CPU (getrusage SELF, whose main thread only sleeps meanwhile) plus that of the
   `ss` children it reaped (getrusage CHILDREN; the watched tool is reaped only afterwards).
2. Throughput of ab and of siege run bare (the same argv toolbench builds, started the same
   way, nothing watching) and run by toolbench's runner with the quickstart's probe (250 ms)
   and monitor (1 s), in pairs (which goes first alternates): the medians, their ratio, and
   the median and quartiles of the per-pair ratios, which cancel slow drift on the machine.

Numbers depend on the machine and on what else runs on it; run it on a quiet machine.
"""
from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from toolbench.contract import registry
from toolbench.contract.adapter import Found, RawOutput
from toolbench.hosts import monitor
from toolbench.hosts.local import LocalHost
from toolbench.record import derive, store
from toolbench.run import cell as cell_run
from toolbench.run import plan
from toolbench.run.serving import Serving
from toolbench.scenario import read as scenario
from toolbench.servers.nginx import nginx_static
from toolbench.servers.process import RunningTarget

SCENARIO = """\
name: bench-monitor
target: {{server: nginx-static}}
matrix: {{tool: [{tool}], concurrency: [10], keepalive: [true]}}
stop: {{duration: {seconds}s}}
probe: {{interval: 250ms}}
monitor: {{interval: 1s}}
"""


def cpu_now() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def monitor_cost(url: str, interval_s: float, keepalive: bool, seconds: float) -> tuple[float, float]:
    """The monitor's CPU as % of one core: measured from outside, and as it reports itself."""
    argv = ["ab", "-c", "50", "-t", str(seconds + 5), "-n", "5000000"] + (["-k"] if keepalive else []) + [url + "/"]
    tool = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.5)  # let ab open its connections
        mon = monitor.Monitor(interval_s, monitor.port_of(url))
        before, start = cpu_now(), time.monotonic()
        mon.start(tool.pid)
        time.sleep(seconds)
        report = mon.stop()
        spent, wall = cpu_now() - before, time.monotonic() - start
    finally:
        tool.kill()
        tool.wait()
    return spent / wall * 100.0, report.monitor_cpu_s / wall * 100.0


def bare_rps(tool: str, cell: plan.Cell, workdir: Path) -> float | None:
    adapter = registry.get(tool)
    found = adapter.detect(LocalHost())
    assert isinstance(found, Found), found
    invocation = adapter.build(cell, workdir, found)
    for name, content in invocation.files.items():
        (workdir / name).write_text(content)
    done = LocalHost().run(invocation.argv, cwd=workdir, stdout=workdir / "stdout.txt",
                           stderr=workdir / "stderr.txt", timeout_s=cell.timeout_s, env=invocation.env)
    files = {role: workdir / name for role, name in invocation.outputs.items() if (workdir / name).exists()}
    raw = RawOutput(stdout=(workdir / "stdout.txt").read_text(), stderr=(workdir / "stderr.txt").read_text(),
                    exit_code=done.exit_code, files=files)
    m = derive.complete(adapter.parse(raw))
    return m.rates.rps or m.rates.rps_derived


def throughput_pairs(tool: str, target: RunningTarget, pairs: int, seconds: float, root: Path) -> tuple[list, list]:
    path = root / f"{tool}.yaml"
    path.write_text(SCENARIO.format(tool=tool, seconds=seconds))
    s = scenario.load(path)
    (planned,) = plan.expand(s)
    cell = planned.cell.at(target.base_url)
    ((name, spec),) = s.targets.items()
    serving = Serving(name, spec, target)
    run_dir = store.RunDir.create(root / "runs", f"bench-{tool}")
    found = registry.get(tool).detect(LocalHost())
    bare, watched = [], []
    for i in range(pairs):
        workdir = root / f"{tool}-bare-{i}"
        workdir.mkdir()
        # Which goes first alternates, so that neither always follows the other's cooldown.
        for watched_now in ((False, True) if i % 2 == 0 else (True, False)):
            if watched_now:
                result = cell_run.run_cell(s, planned, cell, run_dir, LocalHost(), found, serving)
                watched.append(result.measurement.rates.rps or result.measurement.rates.rps_derived)
            else:
                bare.append(bare_rps(tool, cell, workdir))
            time.sleep(1)
    return bare, watched


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--monitor-seconds", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, nginx_static(Path(tmp) / "nginx") as target:
        print("monitor's own CPU, % of one core (measured outside / self-reported), ab -c 50:")
        for interval in (1.0, 0.1):
            for keepalive in (True, False):
                outside, inside = monitor_cost(target.base_url, interval, keepalive, args.monitor_seconds)
                print(f"  interval {interval:>4}s  keep-alive {'on ' if keepalive else 'off'}  "
                      f"{outside:5.2f}%  / {inside:5.2f}%")
        print(f"\nthroughput, req/s, {args.pairs} alternating pairs of {args.seconds:g}s, c=10 keep-alive:")
        for tool in ("ab", "siege"):
            bare, watched = throughput_pairs(tool, target, args.pairs, args.seconds, Path(tmp))
            pairs = [(x, y) for x, y in zip(watched, bare) if x and y]  # a failed run gives no rate
            watched, bare = [x for x, _ in pairs], [y for _, y in pairs]
            b, w = statistics.median(bare), statistics.median(watched)
            ratios = sorted(x / y for x, y in pairs)
            q1, mid, q3 = statistics.quantiles(ratios, n=4, method="inclusive")
            print(f"  {tool:<6} median bare {b:9.0f}  under toolbench {w:9.0f}  ratio of medians {w / b:.3f}; "
                  f"paired ratios: median {mid:.3f}, IQR {q1:.3f}-{q3:.3f}")
            print(f"         bare runs {[round(x) for x in bare]}  watched runs {[round(x) for x in watched]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
