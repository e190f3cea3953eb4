"""The engine over TLS (HTTP/1.1, https): CPU per request and requests/s beside wrk and h2load.

One nginx (1 worker, TLS 1.3, session cache and tickets on) pinned to CPU 0; each tool pinned to
CPU 1 (the engine with one worker); the 13-byte "Hello, World!". Every tool runs the command its
toolbench adapter builds for the cell (bench_adapters.measure), as `toolbench run` would, and the
adapter parses what it printed. The cases:

- keep-alive on, `--connections` (50): the engine, wrk (https) and h2load `--h1` over TLS, and
  h2load over HTTP/2 (h2 by ALPN) for reference: the handshakes are paid once, before the clock
  for the engine; what is measured is the encryption of each request and response;
- keep-alive off, `--close-connections` (10): the engine with session resumption (its default)
  and without (`tls_resume: false`): a TLS handshake per request, which is most of the CPU.
  wrk and h2load have no keep-alive-off run over TLS to compare (wrk always keeps its
  connections; h2load's adapter refuses a timed run without keep-alive).

Cases alternate within each round, who goes first rotating; the medians over `--rounds` are
printed as a Markdown table (CPU: user+system of the tool's process tree, start-up included; for
the engine also without its start-up, a one-request run), with the load average. Not written into
bench/README.md: run it on a quiet machine and paste the table.

    .venv/bin/python bench/bench_tls.py [--rounds 5] [--duration 5] [--connections 50] [--close-connections 10]
"""
from __future__ import annotations

import argparse
import compileall
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import bench_adapters
from bench_engine import pin_tree, pinned

import toolbench
from toolbench.contract import registry
from toolbench.contract.adapter import Found
from toolbench.contract.cell import Cell
from toolbench.errors import ToolbenchError
from toolbench.hosts.local import LocalHost
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec
from toolbench.servers.nginx import nginx_static


@dataclass(frozen=True)
class Case:
    label: str
    tool: str
    protocol: str  # https or h2
    keepalive: bool
    options: tuple[tuple[str, object], ...] = ()


@dataclass(frozen=True)
class Sample:
    case: str
    requests: int
    seconds: float
    cpu_s: float

    @property
    def us_per_request(self) -> float:
        return self.cpu_s / self.requests * 1e6

    @property
    def rps(self) -> float:
        return self.requests / self.seconds


ONE_WORKER = (("workers", 1),)
CASES = (
    Case("engine ka", "engine", "https", True, ONE_WORKER),
    Case("wrk ka", "wrk", "https", True),
    Case("h2load --h1 ka", "h2load", "https", True),
    Case("h2load h2 ka", "h2load", "h2", True),
    Case("engine close", "engine", "https", False, ONE_WORKER),
    Case("engine close no-resume", "engine", "https", False, ONE_WORKER + (("tls_resume", False),)),
)


def cell(case: Case, base_url: str, ca_file: str | None, conns: int, duration: float | None,
         requests: int | None = None) -> Cell:
    stop = StopSpec(duration_s=duration) if duration else StopSpec(requests=requests)
    return Cell(scenario="bench_tls", tool=case.tool, concurrency=conns, keepalive=case.keepalive, repetition=1,
                request=RequestSpec(), stop=stop, timeout_s=(duration or 10) * 4 + 60, protocol=case.protocol,
                options=dict(case.options)).at(base_url, ca_file)


def tools_here(cases: tuple[Case, ...]) -> tuple[dict[str, bench_adapters.Generic], dict[str, str]]:
    """The tools of `cases` found here, and why each other one is left out."""
    found: dict[str, bench_adapters.Generic] = {}
    skipped: dict[str, str] = {}
    for name in sorted({c.tool for c in cases}):
        adapter = registry.get(name)
        detected = adapter.detect(LocalHost())
        if isinstance(detected, Found):
            found[name] = bench_adapters.Generic(name, adapter, detected)
        else:
            skipped[name] = detected.reason
    return found, skipped


def run_case(case: Case, tool: bench_adapters.Generic, c: Cell, work: Path) -> Sample:
    folder = work / f"{case.label.replace(' ', '_')}-{time.monotonic_ns()}"
    folder.mkdir()
    measured, err, cpu = bench_adapters.measure(tool, c, folder, pinned, (c.stop.duration_s or 10) * 4 + 60)
    total, seconds = measured.counts.requests_total, measured.timing.duration_s
    if not total or not seconds:
        raise RuntimeError(f"no request count or duration in its output ({err[-300:]!r})")
    if measured.counts.requests_failed:
        raise RuntimeError(f"{measured.counts.requests_failed} requests failed: {'; '.join(measured.notes)[:300]}")
    return Sample(case.label, total, seconds, cpu)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per case (default 5)")
    parser.add_argument("--connections", type=int, default=50, help="keep-alive on (default 50)")
    parser.add_argument("--close-connections", type=int, default=10, help="keep-alive off (default 10)")
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        print("needs 2 CPUs (nginx on CPU 0, the tool on CPU 1)", file=sys.stderr)
        return 2
    tools, skipped = tools_here(CASES)
    for tool, why in skipped.items():
        print(f"{tool}: skipped ({why})")
    cases: list[Case] = []
    for case in CASES:
        if case.tool not in tools:
            continue
        support = tools[case.tool].adapter.protocol_support(case.protocol)
        if not support.ok:
            print(f"{case.label}: skipped ({support.reason})")
            continue
        cases.append(case)
    compileall.compile_dir(Path(toolbench.__file__).parent, quiet=1)  # as bench_engine.py does, and why
    samples: list[Sample] = []
    failed: dict[str, str] = {}
    with tempfile.TemporaryDirectory() as tmp, \
            nginx_static(Path(tmp) / "nginx", workers=1, serve=frozenset({"http1", "https", "h2"})) as target:
        assert target.pid is not None
        pin_tree(target.pid, 0)
        work = Path(tmp)
        for rnd in range(args.rounds):
            order = cases[rnd % len(cases):] + cases[:rnd % len(cases)]
            for case in order:
                conns = args.connections if case.keepalive else args.close_connections
                c = cell(case, target.url_for(case.protocol), target.ca_file, conns, args.duration)
                try:
                    sample = run_case(case, tools[case.tool], c, work)
                except (RuntimeError, ToolbenchError) as exc:
                    print(f"round {rnd + 1}  {case.label:<24} failed: {exc}", flush=True)
                    failed.setdefault(case.label, str(exc).splitlines()[0][:200])
                    continue
                samples.append(sample)
                print(f"round {rnd + 1}  {case.label:<24} {sample.requests:>8} req  {sample.rps:>8.0f} req/s"
                      f"  {sample.cpu_s:6.2f} s CPU  {sample.us_per_request:7.1f} us/req", flush=True)
                time.sleep(0.5)
        startup = engine_startup(tools.get("engine"), target.url_for("https"), target.ca_file, work)
    report(samples, cases, args, startup, failed)
    return 0


def engine_startup(tool: bench_adapters.Generic | None, base_url: str, ca_file: str | None,
                   work: Path) -> float | None:
    """The engine's CPU for a one-request run over TLS: its fixed cost per run."""
    if tool is None:
        return None
    c = cell(CASES[0], base_url, ca_file, 1, None, requests=1)
    cpus = []
    for _ in range(3):
        folder = work / f"startup-{time.monotonic_ns()}"
        folder.mkdir()
        cpus.append(bench_adapters.measure(tool, c, folder, pinned, 60)[2])
    return statistics.median(cpus)


def report(samples: list[Sample], cases: list[Case], args: argparse.Namespace, startup: float | None,
           failed: dict[str, str]) -> None:
    by_case: dict[str, list[Sample]] = {}
    for s in samples:
        by_case.setdefault(s.case, []).append(s)
    rounds = max((len(v) for v in by_case.values()), default=0)
    print(f"\nTLS (HTTP/1.1 over TLS unless h2): medians over {rounds} round(s) of {args.duration:g} s, "
          f"keep-alive on c{args.connections}, off c{args.close_connections}; load average "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end\n")
    print("| case | connections | µs CPU/request | minus start-up | requests/s |")
    print("| --- | --- | --- | --- | --- |")
    for case in cases:
        ss = by_case.get(case.label)
        if not ss:
            continue
        conns = args.connections if case.keepalive else args.close_connections
        us = statistics.median(s.us_per_request for s in ss)
        less = "—"
        if case.tool == "engine" and startup is not None:
            less = f"{statistics.median((s.cpu_s - startup) / s.requests * 1e6 for s in ss):.1f}"
        print(f"| {case.label} | {conns} | {us:.1f} | {less} | {statistics.median(s.rps for s in ss):,.0f} |")
    if startup is not None:
        print(f"\nengine start-up (a one-request run over TLS): {startup:.3f} s CPU")
    for label, why in failed.items():
        print(f"{label}: failed ({why})")


if __name__ == "__main__":
    sys.exit(main())
