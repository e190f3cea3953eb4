"""The engine at ten thousand keep-alive connections against its figures at 50.

One nginx (1 worker, room for 16,384 connections, its descriptor limit raised) pinned
to CPU 0; the engine with one worker (`-w 1`) pinned to CPU 1, keep-alive on. Each
round runs, alternating (the first one rotates): the closed model at `-c 50` and at
`-c N`, then the open model (`--rate R`) at `-c 50` and at `-c N`. R is half the closed
`-c 50` throughput of the first round unless `--rate` gives it, so the target can
serve it. For each run: requests/s as the engine measured them, failures, connections
opened, whether every connection got a response in the window (the engine's
`engine_silent_connections` note is absent), CPU per request, and the peak RSS of the
engine's largest process (its worker), from which memory per connection is
(RSS at N - RSS at 50) / (N - 50): the engine's own memory, not the kernel's socket
buffers.

    .venv/bin/python bench/bench_connections.py [--connections 10000] [--rounds 3] [--duration 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from bench_engine import pin_tree, pinned_usage

from toolbench.engine.result import SILENT_NOTE
from toolbench.servers.nginx import nginx_static

SMALL = 50


@dataclass(frozen=True)
class Run:
    model: str  # closed or open
    connections: int
    requests: int
    failed: int
    opened: int
    silent: bool  # some connection got no response in the window
    seconds: float
    cpu_s: float
    maxrss_kib: int

    @property
    def rps(self) -> float:
        return self.requests / self.seconds

    @property
    def clean(self) -> bool:
        return not self.failed and not self.silent and self.opened == self.connections


def run_engine(url: str, conns: int, rate: float | None, duration: float, work: Path) -> Run:
    out = work / "engine.json"
    out.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "toolbench.engine", url, "-c", str(conns), "-d", f"{duration:g}s", "-w", "1",
            "--json-out", str(out), "--no-progress"] + (["--rate", f"{rate:g}"] if rate else [])
    _, err, usage = pinned_usage(argv, 1, work, duration + 120)
    if not out.exists():
        raise RuntimeError(f"engine -c {conns}: no result: {err[-500:]!r}")
    m = json.loads(out.read_text())["measurement"]
    counts = m["counts"]
    return Run("open" if rate else "closed", conns, counts["requests_total"], counts["requests_failed"],
               counts["connections_opened"] or 0, any(SILENT_NOTE in n for n in m["notes"]),
               m["timing"]["duration_s"], usage.ru_utime + usage.ru_stime, usage.ru_maxrss)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--rate", type=float, help="open model's rate (default: half the first closed -c 50 rate)")
    parser.add_argument("--json", type=Path, help="write every run here")
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        print("needs 2 CPUs (nginx on CPU 0, the engine on CPU 1)", file=sys.stderr)
        return 2
    big = args.connections
    runs: list[Run] = []
    rate = args.rate
    with tempfile.TemporaryDirectory() as tmp, nginx_static(Path(tmp) / "nginx", workers=1) as target:
        assert target.pid is not None
        pin_tree(target.pid, 0)
        url = target.base_url + "/"
        for rnd in range(args.rounds):
            for model in ("closed", "open"):
                order = [SMALL, big] if rnd % 2 == 0 else [big, SMALL]
                for conns in order:
                    if model == "open" and rate is None:
                        rate = round(statistics.median(r.rps for r in runs if r.connections == SMALL) / 2, -3)
                    run = run_engine(url, conns, rate if model == "open" else None, args.duration, Path(tmp))
                    runs.append(run)
                    print(f"round {rnd + 1}  {model:<6} -c {conns:<6} {run.rps:>9.0f} req/s  failed {run.failed}"
                          f"  opened {run.opened}  silent {'yes' if run.silent else 'no'}"
                          f"  {run.cpu_s / max(1, run.requests) * 1e6:6.2f} us/req  peak RSS {run.maxrss_kib} KiB",
                          flush=True)
                    time.sleep(1.0)
    _report(runs, big, rate)
    if args.json:
        args.json.write_text(json.dumps([r.__dict__ for r in runs], indent=1))
    return 0


def _report(runs: list[Run], big: int, rate: float | None) -> None:
    print(f"\nmedians over the rounds; open model at {rate:g} requests/s")
    print(f"  {'model':<8}{'-c':>7}{'req/s':>10}{'vs -c 50':>10}{'us CPU/req':>12}{'peak RSS MiB':>14}{'all clean':>11}")
    met = True
    for model in ("closed", "open"):
        mine = {c: [r for r in runs if r.model == model and r.connections == c] for c in (SMALL, big)}
        base = statistics.median(r.rps for r in mine[SMALL])
        for conns, rs in mine.items():
            rps = statistics.median(r.rps for r in rs)
            rss = statistics.median(r.maxrss_kib for r in rs) / 1024
            us = statistics.median(r.cpu_s / max(1, r.requests) * 1e6 for r in rs)
            clean = all(r.clean for r in rs)
            print(f"  {model:<8}{conns:>7}{rps:>10.0f}{rps / base:>9.2f}x{us:>12.2f}{rss:>14.1f}{str(clean):>11}")
            met = met and clean and rps >= 0.9 * base
        pairs = list(zip(mine[SMALL], mine[big]))
        print(f"  {model}: per round, -c {big} / -c {SMALL} req/s: "
              + " ".join(f"{b.rps / s.rps:.3f}" for s, b in pairs))
        per_conn = statistics.median((b.maxrss_kib - s.maxrss_kib) * 1024 / (big - SMALL) for s, b in pairs)
        print(f"  {model}: memory per connection (engine's peak RSS, -c {big} minus -c {SMALL}): {per_conn:,.0f} bytes")
    print(f"  bar (every connection opened and answered, no failures, req/s >= 0.9x -c {SMALL}): "
          f"{'met' if met else 'NOT met'}")


if __name__ == "__main__":
    sys.exit(main())
