"""The open model at fixed arrival rates: the engine (`--rate`) and vegeta (`-rate`), each at
1,000/s, 10,000/s and rising rates until it no longer sends within 0.5 % of the rate asked, then
`--refine` halvings between the highest rate it held and the lowest it missed.

One nginx (1 worker) pinned to CPU 0; the tool pinned to CPU 1 (the engine with one worker); the
13-byte "Hello, World!"; keep-alive on. The engine gets the rate × 10 ms connections, 100 at least
(Little's law at 10 ms a request: its connections are fixed for a run), vegeta 100 workers to start
with (it adds more while all are busy). At each rate the tools run one after the other, which one
first alternating, `--duration` each. Printed per tool and rate: the rate sent (the engine's sends
due in its window that went out, over the window; vegeta's `rate`, its requests over the span of
its sends), its error against the rate asked, p50 and p99 from the intended send time (coordinated
omission corrected: the engine only; vegeta times from the actual send) and from the actual send,
CPU per request (user+system of the tool's process tree, start-up included, and without the
engine's start-up: a one-request run), and whether the engine kept up (its own account: sends
late, due and never sent); then the highest rate each held within 0.5 %. wrk2, the other
open-model tool with corrected latency, is in no package registry (PyPI has only wrappers that
run it), so it cannot be built here and is not compared.

    .venv/bin/python bench/bench_open.py [--duration 10] [--step 10000] [--max-rate 200000] [--refine 3]
                                         [--tools engine,vegeta] [--json FILE]
"""
from __future__ import annotations

import argparse
import compileall
import itertools
import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import bench_adapters
from bench_engine import pin_tree, pinned, startup_cpu

import toolbench
from toolbench.contract.cell import Cell
from toolbench.engine.summary import BACKLOG_NOTE
from toolbench.errors import ToolbenchError
from toolbench.record import derive
from toolbench.record.schema import Latency, Measurement, Omission, RunResult
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec
from toolbench.servers.nginx import nginx_static

HELD_PCT = 0.5  # a rate is held when the rate sent is within this of the rate asked
FIXED_RATES = (1_000.0, 10_000.0)


@dataclass(frozen=True)
class Step:
    tool: str
    asked: float
    sent: float | None  # requests/s sent, by the tool's own account
    requests: int
    cpu_s: float
    startup_s: float | None
    p50: float | None  # ms from the intended send time (corrected); None: not measured so
    p99: float | None
    p50_actual: float | None  # ms from the actual send
    p99_actual: float | None
    backlog: str | None  # the engine's account when it could not keep up

    @property
    def error_pct(self) -> float | None:
        return None if self.sent is None else (self.sent / self.asked - 1.0) * 100.0

    @property
    def held(self) -> bool:
        error = self.error_pct
        return error is not None and abs(error) <= HELD_PCT

    def us_per_request(self, less_startup: bool) -> float | None:
        if not self.requests or (less_startup and self.startup_s is None):
            return None
        fixed = (self.startup_s or 0.0) if less_startup else 0.0
        return (self.cpu_s - fixed) / self.requests * 1e6


def run_engine(url: str, conns: int, rate: float, duration: float, work: Path, startup: float | None) -> Step:
    out = work / "engine.json"
    argv = [sys.executable, "-m", "toolbench.engine", url, "-c", str(conns), "-d", f"{duration:g}s", "-w", "1",
            "--rate", f"{rate:g}", "--json-out", str(out), "--no-progress"]
    _, err, cpu = pinned(argv, 1, work, duration + 60)
    if not out.exists():
        raise RuntimeError(f"engine: no result ({err[-300:]!r})")
    result = RunResult.from_dict(json.loads(out.read_text()))
    prefix = f"{BACKLOG_NOTE}: "
    backlog = next((n[len(prefix):] for n in result.measurement.notes if n.startswith(prefix)), None)
    return _step("engine", rate, result.measurement, cpu, startup, backlog)


def run_adapter(tool: bench_adapters.Generic, url: str, conns: int, rate: float, duration: float,
                work: Path) -> Step:
    """The tool's open-model cell as its toolbench adapter builds it, pinned to CPU 1."""
    folder = work / f"{tool.tool}-{rate:g}-{time.monotonic_ns()}"
    folder.mkdir()
    cell = Cell(scenario="bench", tool=tool.tool, concurrency=conns, keepalive=True, repetition=1,
                request=RequestSpec(), stop=StopSpec(duration_s=duration), timeout_s=duration * 4 + 60, url=url,
                rate_rps=rate)
    support = tool.adapter.supports(cell)
    if not support.ok:
        raise RuntimeError(f"{tool.tool}: {support.reason}")
    measured, _, cpu = bench_adapters.measure(tool, cell, folder, pinned, duration * 4 + 60)
    # As the runner completes it: vegeta's percentiles come from its rows' histogram.
    return _step(tool.tool, rate, derive.complete(measured), cpu, None, None)


def _step(tool: str, rate: float, m: Measurement, cpu: float, startup: float | None, backlog: str | None) -> Step:
    corrected = m.coordinated_omission is Omission.CORRECTED
    actual = m.latency_uncorrected if corrected else m.latency
    return Step(tool=tool, asked=rate, sent=m.rates.rps if m.rates.rps is not None else m.rates.rps_derived,
                requests=m.counts.requests_total or 0, cpu_s=cpu, startup_s=startup,
                p50=_pct(m.latency, "p50_ms") if corrected else None,
                p99=_pct(m.latency, "p99_ms") if corrected else None,
                p50_actual=_pct(actual, "p50_ms"), p99_actual=_pct(actual, "p99_ms"), backlog=backlog)


def _pct(latency: Latency | None, name: str) -> float | None:
    return None if latency is None else getattr(latency.percentiles, name)


def engine_connections(least: int, rate: float) -> int:
    """Enough for the rate at 10 ms a request (Little's law): the engine's connections are
    fixed for a run, where vegeta adds workers while all are busy."""
    return max(least, int(rate * 0.010))


class Ladder:
    """One tool's rates: 1,000/s, 10,000/s, then `step` more each time up to `top` while it holds;
    after its first miss, `refine` halvings between the highest rate held and the lowest missed
    (to whole hundreds a second)."""

    def __init__(self, step: float, top: float, refine: int) -> None:
        self.step, self.top, self.refine = step, top, refine
        self.fixed = [r for r in FIXED_RATES if r <= top]
        self.held: list[float] = []
        self.missed: list[float] = []

    def record(self, rate: float, held: bool) -> None:
        (self.held if held else self.missed).append(rate)

    def next(self) -> float | None:
        if self.fixed:
            return self.fixed.pop(0)
        high = max(self.held, default=0.0)
        above = [r for r in self.missed if r > high]  # a miss below a rate held was the machine's noise
        if not high:
            return None
        if not above:
            return high + self.step if high + self.step <= self.top else None
        if self.refine <= 0:
            return None
        self.refine -= 1
        middle = round((high + min(above)) / 2 / 100) * 100
        return middle if high < middle < min(above) else None


def row(s: Step) -> str:
    def ms(v: float | None) -> str:
        return "—" if v is None else f"{v:.2f}"

    def us(v: float | None) -> str:
        return "—" if v is None else f"{v:.1f}"

    sent = "—" if s.sent is None else f"{s.sent:,.0f}"
    error = "—" if s.error_pct is None else f"{s.error_pct:+.2f}"
    # The engine's own word (toolbench.engine.result): late sends while the rate held are not a backlog.
    behind = s.backlog is not None and "could not keep up" in s.backlog
    kept = "" if s.tool != "engine" else ("  could not keep up" if behind else
                                          "  kept up" + (" (some sends late)" if s.backlog else ""))
    return (f"  {s.tool:<8}{s.asked:>10,.0f}{sent:>10}{error:>9}{ms(s.p50):>10}{ms(s.p99):>10}{ms(s.p50_actual):>10}"
            f"{ms(s.p99_actual):>10}{us(s.us_per_request(False)):>10}{us(s.us_per_request(True)):>10}"
            f"{'' if s.held else '  NOT held'}{kept}")


HEADER = (f"  {'tool':<8}{'asked/s':>10}{'sent/s':>10}{'error %':>9}{'p50 corr':>10}{'p99 corr':>10}"
          f"{'p50 act':>10}{'p99 act':>10}{'µs CPU/r':>10}{'-start-up':>10}   (ms; corr: from the intended send)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per tool and rate (default 10)")
    parser.add_argument("--step", type=float, default=10_000.0, help="rate added after 10,000/s (default 10,000)")
    parser.add_argument("--max-rate", type=float, default=200_000.0, help="the highest rate tried (default 200,000)")
    parser.add_argument("--connections", type=int, default=100,
                        help="vegeta's workers to start with (it adds more); the engine's connections, or the rate "
                             "× 10 ms if more (default 100)")
    parser.add_argument("--refine", type=int, default=3,
                        help="halvings between the highest rate held and the lowest missed (default 3)")
    parser.add_argument("--tools", default="engine,vegeta", help="comma-separated: engine, vegeta")
    parser.add_argument("--json", type=Path, help="write every step here")
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        print("needs 2 CPUs (nginx on CPU 0, the tool on CPU 1)", file=sys.stderr)
        return 2
    wanted = args.tools.split(",")
    others: dict[str, bench_adapters.Generic] = {}
    if "vegeta" in wanted:
        found, skipped = bench_adapters.installed(["vegeta"])
        others = {g.tool: g for g in found}
        for tool, why in skipped.items():
            print(f"{tool}: skipped ({why}; scripts/install.sh installs it)")
    tools = [t for t in wanted if t == "engine" or t in others]
    print("wrk2: not compared (in no package registry, and no source to build it from here)")
    compileall.compile_dir(Path(toolbench.__file__).parent, quiet=1)  # as bench_engine.py: no compiling per run
    steps: list[Step] = []
    with tempfile.TemporaryDirectory() as tmp, nginx_static(Path(tmp) / "nginx", workers=1) as target:
        assert target.pid is not None
        pin_tree(target.pid, 0)
        url, work = target.base_url + "/", Path(tmp)
        startup = startup_cpu("engine", url, work) if "engine" in tools else None
        ladders = {tool: Ladder(args.step, args.max_rate, args.refine) for tool in tools}
        print(HEADER, flush=True)
        for turn in itertools.count():
            due = [(tool, rate) for tool in tools if (rate := ladders[tool].next()) is not None]
            if not due:
                break
            for tool, rate in due[turn % len(due):] + due[:turn % len(due)]:  # who goes first alternates
                try:
                    step = (run_engine(url, engine_connections(args.connections, rate), rate, args.duration, work,
                                       startup) if tool == "engine"
                            else run_adapter(others[tool], url, args.connections, rate, args.duration, work))
                except (RuntimeError, ToolbenchError, OSError) as exc:
                    print(f"  {tool:<8}{rate:>10,.0f}  failed: {str(exc).splitlines()[0][:200]}", flush=True)
                    ladders[tool].record(rate, False)
                    continue
                steps.append(step)
                ladders[tool].record(rate, step.held)
                print(row(step), flush=True)
                if step.backlog:
                    print(f"{'':10}{step.backlog}", flush=True)
                time.sleep(1.0)
    _held(steps, tools, args.step)
    if args.json:
        args.json.write_text(json.dumps([asdict(s) for s in steps], indent=1))
    return 0


def _held(steps: list[Step], tools: list[str], step: float) -> None:
    print(f"\nhighest rate held within {HELD_PCT:g} % (load average {os.getloadavg()[0]:.1f} at the end):")
    for tool in tools:
        held = [s.asked for s in steps if s.tool == tool and s.held]
        missed = [s.asked for s in steps if s.tool == tool and not s.held and s.asked > max(held, default=0.0)]
        above = f" (missed at {min(missed):,.0f}/s)" if missed else f" (the highest tried, in steps of {step:,.0f}/s)"
        print(f"  {tool:<8}" + (f"{max(held):,.0f}/s{above}" if held else "none"))


if __name__ == "__main__":
    sys.exit(main())
