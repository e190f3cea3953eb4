"""Where the spread between repetitions comes from: one cell measured after different
predecessors, so that what a cell inherits shows as a difference in its figure.

    .venv/bin/python bench/bench_repeat.py [--rounds 4] [--duration 2]

Against one bundled nginx-static (2 workers, as the quickstart runs it), for each "victim" cell
of the quickstart (ab and the engine, c10, keep-alive on and off), alternately:
  idle     the victim after 5 s of nothing;
  churned  the victim 1 s after a 2 s ab c50 keep-alive-off cell (the quickstart's cooldown), which
           leaves tens of thousands of loopback sockets in TIME_WAIT;
  settled  the same, but the victim waits until the TIME_WAIT sockets are under 1,000 (toolbench's
           settle), bounded by 70 s.
It prints each victim's median requests/s per condition, the spread (half range / median), and the
TIME_WAIT sockets (/proc/net/sockstat) when the victim started. Every cell is run through the tool's
toolbench adapter (its command, its parser), unpinned, as `toolbench run` runs it by default.

`--study placement`: each victim unpinned and split, 2 s and 5 s cells. `--study workers`: each
victim against an nginx of 1 worker and one of 2 workers, both pinned to CPU 0 (what `split` gives
the target on 2 cores), the tool on CPU 1, alternating; the "busiest worker" column is the share of
the target's CPU its busiest worker took, which is 100 % when every connection landed on one worker.
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import psutil

from toolbench.contract import registry
from toolbench.contract.adapter import Found, RawOutput
from toolbench.contract.cell import Cell
from toolbench.hosts.local import LocalHost
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec
from toolbench.servers.nginx import nginx_static

VICTIMS = (("ab", True), ("engine", False), ("ab", False), ("engine", True))


@dataclass(frozen=True)
class Sample:
    victim: str
    condition: str
    rps: float
    time_wait: int


def time_wait() -> int:
    for line in Path("/proc/net/sockstat").read_text().splitlines():
        if line.startswith("TCP:"):
            fields = line.split()
            return int(fields[fields.index("tw") + 1])
    return 0


def run_cell(tool: str, keepalive: bool, conns: int, duration: float, url: str, work: Path,
             cpus: str | None = None) -> float:
    adapter = registry.get(tool)
    found = adapter.detect(LocalHost())
    assert isinstance(found, Found), found
    cell = Cell(scenario="bench", tool=tool, concurrency=conns, keepalive=keepalive, repetition=1,
                request=RequestSpec(), stop=StopSpec(duration_s=duration), timeout_s=duration * 4 + 60).at(url)
    folder = Path(tempfile.mkdtemp(dir=work))
    invocation = adapter.build(cell, folder, found)
    for name, contents in invocation.files.items():
        (folder / name).write_text(contents)
    pin = ["taskset", "-c", cpus] if cpus else []
    done = subprocess.run(pin + invocation.argv, cwd=folder, capture_output=True, text=True, timeout=duration * 4 + 60)
    files = {role: folder / name for role, name in invocation.outputs.items() if (folder / name).exists()}
    m = adapter.parse(RawOutput(stdout=done.stdout, stderr=done.stderr, exit_code=done.returncode, files=files,
                                source=tool))
    assert m.counts.requests_ok and m.timing.duration_s, (tool, done.stderr[-300:])
    return m.counts.requests_ok / m.timing.duration_s


def settle(bound_s: float = 70.0, under: int = 1000) -> None:
    deadline = time.monotonic() + bound_s
    while time_wait() >= under and time.monotonic() < deadline:
        time.sleep(0.25)


def pin_target(pids: tuple[int, ...], cpus: set[int]) -> None:
    for pid in pids:
        for proc in [psutil.Process(pid), *psutil.Process(pid).children(recursive=True)]:
            proc.cpu_affinity(sorted(cpus))


def inherit(args: argparse.Namespace, url: str, work: Path) -> list[Sample]:
    samples = []
    for rnd in range(args.rounds):
        for tool, ka in VICTIMS:
            name = f"{tool} c10 {'ka' if ka else 'close'}"
            for condition in ("idle", "churned", "settled"):
                if condition == "idle":
                    time.sleep(5)
                else:
                    run_cell("ab", False, 50, 2.0, url, work)
                    time.sleep(1)
                    if condition == "settled":
                        settle()
                tw = time_wait()
                samples.append(Sample(name, condition, run_cell(tool, ka, 10, args.duration, url, work), tw))
                print(f"round {rnd + 1} {name:18} {condition:8} {samples[-1].rps:9.0f}/s  TIME_WAIT {tw}", flush=True)
    return samples


def placement(args: argparse.Namespace, url: str, work: Path, pids: tuple[int, ...]) -> list[Sample]:
    """Each victim unpinned and split (the target on CPU 0, the tool on CPU 1), 2 s and 5 s cells."""
    samples = []
    everywhere = set(range(psutil.cpu_count()))
    for rnd in range(args.rounds):
        for tool, ka in VICTIMS:
            name = f"{tool} c10 {'ka' if ka else 'close'}"
            for condition in ("none 2s", "split 2s", "split 5s", "none 5s"):
                split = condition.startswith("split")
                pin_target(pids, {0} if split else everywhere)
                time.sleep(1)
                tw = time_wait()
                rps = run_cell(tool, ka, 10, float(condition.split()[1][:-1]), url, work, "1" if split else None)
                samples.append(Sample(name, condition, rps, tw))
                print(f"round {rnd + 1} {name:18} {condition:8} {rps:9.0f}/s", flush=True)
    return samples


def worker_ticks(pids: tuple[int, ...]) -> list[float]:
    """CPU seconds of each nginx worker (the master's children)."""
    return [sum(child.cpu_times()[:2]) for pid in pids for child in psutil.Process(pid).children()]


def workers(args: argparse.Namespace, targets: dict[str, tuple[str, tuple[int, ...]]], work: Path) -> list[Sample]:
    """Each victim against 1 and 2 nginx workers on one CPU; the condition says how many workers
    and, for 2, whether the busiest took over 90 % of the target's CPU (connections on one worker)."""
    samples = []
    for url, pids in targets.values():
        pin_target(pids, {0})
    for rnd in range(args.rounds):
        for tool, ka in VICTIMS:
            name = f"{tool} c10 {'ka' if ka else 'close'}"
            for label, (url, pids) in targets.items():
                time.sleep(1)
                before = worker_ticks(pids)
                rps = run_cell(tool, ka, 10, args.duration, url, work, "1")
                spent = [a - b for a, b in zip(worker_ticks(pids), before)]
                busiest = max(spent) / sum(spent) * 100 if sum(spent) else 0.0
                samples.append(Sample(name, label, rps, time_wait()))
                print(f"round {rnd + 1} {name:18} {label:10} {rps:9.0f}/s  busiest worker {busiest:5.1f} %", flush=True)
    return samples


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--study", choices=("inherit", "placement", "workers"), default="inherit")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--duration", type=float, default=2.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, nginx_static(Path(tmp) / "nginx", workers=2) as target, \
            nginx_static(Path(tmp) / "nginx1", workers=1) as one:
        url, work = target.base_url, Path(tmp)
        run_cell("ab", True, 10, 2.0, url, work)  # the target and the machine warm, once, as a run's start does
        if args.study == "workers":
            samples = workers(args, {"1 worker": (one.base_url, one.pids), "2 workers": (url, target.pids)}, work)
        elif args.study == "inherit":
            samples = inherit(args, url, work)
        else:
            samples = placement(args, url, work, target.pids)
    print("\n| cell | condition | median req/s | spread (half range / median) | TIME_WAIT at start |")
    print("|---|---|---|---|---|")
    for name in dict.fromkeys(s.victim for s in samples):
        for condition in dict.fromkeys(s.condition for s in samples):
            got = [s for s in samples if s.victim == name and s.condition == condition]
            rates = [s.rps for s in got]
            med = statistics.median(rates)
            spread = (max(rates) - min(rates)) / 2 / med * 100
            tws = sorted(s.time_wait for s in got)
            print(f"| {name} | {condition} | {med:,.0f} | ±{spread:.1f} % | {tws[0]:,}–{tws[-1]:,} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
