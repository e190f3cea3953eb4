"""The engine against every installed load tool: CPU per request and requests/s.

One nginx (1 worker) pinned to CPU 0; each tool pinned to CPU 1; the 13-byte
"Hello, World!"; 50 connections; wrk sends the engine's request (its User-Agent and Accept
headers with -H). Tools alternate within each round, and the medians
over the rounds are compared with wrk (keep-alive on) or ab (`--keepalive off`: a new
connection per request). CPU is the user+system time of the tool's whole process tree
(os.wait4 on the pinned child), start-up included. wrk, ab and Locust FastHttpUser run
the commands below; every other installed tool runs the command its toolbench adapter
builds (bench_adapters.py). With keep-alive on, the table is written into bench/README.md,
between its bench_engine markers; engine-co is the engine with its keep-alive reads coalesced
(`--coalesce 200us`), engine-nh the engine whose keep-alive core hands the loop back after every
batch of responses instead of holding it until the next timer (TOOLBENCH_ENGINE_HOLD=0, as before
2026-12-03), beside its default. Beside each tool, the server's side of its runs: nginx's CPU
per request and CPU 0's idle time over the tool's measured duration (it includes the tool's
start-up and exit, when nginx has nothing to do): near 0 % idle, the server set the rate, and
what a tool's requests cost it decides the requests/s.

    .venv/bin/python bench/bench_engine.py [--rounds 3] [--duration 5] [--connections 50] [--tools all]
    .venv/bin/python bench/bench_engine.py --keepalive off [--rounds 5] [--tools engine,engine-py,ab]
"""
from __future__ import annotations

import argparse
import compileall
import importlib.util
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable

import bench_adapters
import psutil

import toolbench
from toolbench.engine.churn_native import HOLD_ENV, PATH_ENV, churn_path
from toolbench.engine.options import EngineOptions, parse_url, request_bytes
from toolbench.errors import ToolbenchError
from toolbench.servers.nginx import nginx_static

LOCUSTFILE = """\
from locust import constant, task
from locust.contrib.fasthttp import FastHttpUser

class Hello(FastHttpUser):
    wait_time = constant(0)

    @task
    def hello(self):
        self.client.get("/")
"""


@dataclass(frozen=True)
class Sample:
    tool: str
    requests: int
    seconds: float  # the tool's own measured duration
    cpu_s: float
    # The server's side over the same run (nginx's worker; CPU 0's idle time): what the
    # tool's requests cost the server, and whether the server, not the tool, set the rate.
    server_cpu_s: float | None = None
    server_idle_s: float | None = None

    @property
    def server_us_per_request(self) -> float | None:
        return self.server_cpu_s / self.requests * 1e6 if self.requests and self.server_cpu_s is not None else None

    @property
    def us_per_request(self) -> float:
        return self.cpu_s / self.requests * 1e6 if self.requests else float("nan")

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else float("nan")


def pinned(argv: list[str], cpu: int, cwd: Path, timeout: float,
           env: dict[str, str] | None = None) -> tuple[str, str, float]:
    """Runs argv on one CPU; returns stdout, stderr and the CPU seconds of its process tree."""
    out, err, usage = pinned_usage(argv, cpu, cwd, timeout, env)
    return out, err, usage.ru_utime + usage.ru_stime


def pinned_usage(argv: list[str], cpu: int, cwd: Path, timeout: float,
                 env: dict[str, str] | None = None) -> tuple[str, str, resource.struct_rusage]:
    """Runs argv on one CPU; returns stdout, stderr and the resource usage of its process tree
    (ru_maxrss: the peak of its largest process)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(["taskset", "-c", str(cpu)] + argv, cwd=cwd, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.monotonic() > deadline:
                proc.kill()
                _, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return out.read().decode(errors="replace"), err.read().decode(errors="replace"), usage


def run_engine(url: str, conns: int, duration: float, work: Path, keepalive: bool = True,
               python_path: bool = False, coalesce: bool = False, hold: bool = True) -> Sample:
    """`python_path`: keep-alive off on the engine's pure-Python path (engine-py), not its C one;
    `coalesce`: keep-alive reads coalesced (engine-co, `--coalesce 200us`); not `hold`: the
    keep-alive core hands the loop back after every batch (engine-nh)."""
    result = work / "engine.json"
    argv = [sys.executable, "-m", "toolbench.engine", url, "-c", str(conns), "-d", f"{duration:g}s",
            "-w", "1", "--json-out", str(result), "--no-progress"] + ([] if keepalive else ["--no-keepalive"])
    argv += ["--coalesce", "200us"] if coalesce else []
    env = {**os.environ, PATH_ENV: "python"} if python_path else {**os.environ, HOLD_ENV: "0"} if not hold else None
    out, err, cpu = pinned(argv, 1, work, duration + 60, env)
    data = json.loads(result.read_text())
    measured = data.get("measurement", data)  # schema 2 on: the tool's figures under `measurement`
    if measured["counts"]["requests_failed"]:
        raise RuntimeError(f"engine: {measured['counts']['requests_failed']} requests failed: {err[-500:]!r}")
    name = "engine-py" if python_path else "engine-co" if coalesce else "engine" if hold else "engine-nh"
    return Sample(name, measured["counts"]["requests_total"], measured["timing"]["duration_s"], cpu)


def engine_headers(url: str) -> list[str]:
    """The headers the engine sends beside Host (its User-Agent and Accept), as `-H` values."""
    raw = request_bytes(EngineOptions(url=url, connections=1, duration_s=1.0), parse_url(url)).decode("latin-1")
    return [line for line in raw.split("\r\n")[1:] if line and not line.lower().startswith("host:")]


def run_wrk(url: str, conns: int, duration: float, work: Path) -> Sample:
    # The engine's request, byte for byte, so that nginx does the same work for both.
    headers = [arg for h in engine_headers(url) for arg in ("-H", h)]
    out, err, cpu = pinned(["wrk", "-t1", f"-c{conns}", f"-d{duration:g}s", *headers, url], 1, work, duration + 60)
    m = re.search(r"(\d+) requests in ([\d.]+)(ms|s|m)", out)
    if not m:
        raise RuntimeError(f"wrk: no result in {out!r} {err!r}")
    seconds = float(m.group(2)) * {"ms": 0.001, "s": 1.0, "m": 60.0}[m.group(3)]
    return Sample("wrk", int(m.group(1)), seconds, cpu)


def run_ab(url: str, conns: int, duration: float, work: Path, expected_rps: float,
           keepalive: bool = True) -> Sample:
    # ab has no duration that is not capped by -n: size -n from the rate measured last.
    n = max(10_000, int(expected_rps * duration))
    argv = ["ab"] + (["-k"] if keepalive else []) + ["-q", "-c", str(conns), "-n", str(n), url]
    out, err, cpu = pinned(argv, 1, work, duration * 4 + 60)
    done = re.search(r"Complete requests:\s+(\d+)", out)
    took = re.search(r"Time taken for tests:\s+([\d.]+)", out)
    if not (done and took):
        raise RuntimeError(f"ab: no result in {out[-500:]!r} {err[-500:]!r}")
    return Sample("ab", int(done.group(1)), float(took.group(1)), cpu)


def run_locust(url: str, conns: int, duration: float, work: Path) -> Sample:
    locustfile = work / "locustfile.py"
    locustfile.write_text(LOCUSTFILE)
    argv = [sys.executable, "-m", "locust", "-f", str(locustfile), "--headless", "-u", str(conns),
            "-r", str(conns * 100), "-t", f"{duration:g}s", "--host", url.rstrip("/"), "--csv",
            str(work / "locust"), "--only-summary", "--loglevel", "WARNING"]
    started = time.monotonic()
    out, err, cpu = pinned(argv, 1, work, duration + 60)
    wall = time.monotonic() - started
    rows = (work / "locust_stats.csv").read_text().splitlines()
    header = rows[0].split(",")
    total = next(r.split(",") for r in rows[1:] if r.split(",")[1] == "Aggregated")
    requests = int(total[header.index("Request Count")])
    return Sample("locust-fasthttp", requests, min(duration, wall), cpu)


def startup_cpu(tool: str, url: str, work: Path, keepalive: bool = True) -> float:
    """CPU of a run that sends (about) one request: the tool's fixed cost per run,
    which the figures above include and the `minus start-up` column takes out."""
    if tool in ("engine", "engine-co", "engine-nh", "engine-py"):  # the same start-up: the C path is loaded with the engine
        argv = [sys.executable, "-m", "toolbench.engine", url, "-c", "1", "-n", "1", "-w", "1", "--no-progress"]
        argv += [] if keepalive else ["--no-keepalive"]
    elif tool == "ab":
        argv = ["ab", "-q", "-n", "1", url]
    elif tool == "locust":
        (work / "idle.py").write_text(LOCUSTFILE.replace("constant(0)", "constant(60)"))
        argv = [sys.executable, "-m", "locust", "-f", str(work / "idle.py"), "--headless", "-u", "1", "-r", "1",
                "-t", "1s", "--host", url.rstrip("/"), "--only-summary", "--loglevel", "WARNING"]
    else:
        return 0.0  # wrk has no one-request mode; its start-up is a few milliseconds of C
    return statistics.median(pinned(argv, 1, work, 60)[2] for _ in range(3))


def pin_tree(pid: int, cpu: int) -> None:
    for proc in [psutil.Process(pid)] + psutil.Process(pid).children(recursive=True):
        proc.cpu_affinity([cpu])


def server_clock(master: int) -> tuple[float, float]:
    """The CPU seconds of the server's processes (master and workers) and CPU 0's idle seconds."""
    procs = [psutil.Process(master)] + psutil.Process(master).children(recursive=True)
    cpu = sum(t.user + t.system for t in (p.cpu_times() for p in procs))
    return cpu, psutil.cpu_times(percpu=True)[0].idle


def have_locust() -> bool:
    # Not `import locust`: it monkey-patches this process with gevent, whose child
    # watcher then reaps the tools before os.wait4 can read their CPU time.
    return importlib.util.find_spec("locust") is not None


README = Path(__file__).resolve().parent / "README.md"
BEGIN = "<!-- bench_engine: begin (written by bench_engine.py; edits here are overwritten) -->"
END = "<!-- bench_engine: end -->"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--keepalive", choices=("on", "off"), default="on",
                        help="off: a new connection per request, compared with ab (default tools engine,ab)")
    parser.add_argument("--tools", help="comma-separated, or `all`: every installed tool (the default with "
                                        "keep-alive on; engine,engine-py,ab with it off; engine-py: the engine on its Python path)")
    parser.add_argument("--json", type=Path, help="write every sample here")
    parser.add_argument("--readme", type=Path, default=README, help="the file whose marked section gets the table")
    parser.add_argument("--no-readme", action="store_true", help="print the table only")
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        print("needs 2 CPUs (nginx on CPU 0, the tool on CPU 1)", file=sys.stderr)
        return 2
    keepalive = args.keepalive == "on"
    base = "wrk" if keepalive else "ab"
    chosen = args.tools or ("all" if keepalive else "engine,engine-py,ab")
    wanted = None if chosen == "all" else chosen.split(",")
    tools = [t for t in ("engine", "engine-co", "engine-nh", "engine-py", "wrk", "ab", "locust")
             if wanted is None or t in wanted]
    if keepalive and "engine-py" in tools:
        tools.remove("engine-py")  # the Python path is keep-alive off's only
    for variant in ("engine-co", "engine-nh"):
        if not keepalive and variant in tools:
            tools.remove(variant)  # keep-alive only: coalesced reads, held callbacks
    skipped: dict[str, str] = {}
    for tool in [t for t in ("wrk", "ab") if t in tools and shutil.which(t) is None]:
        skipped[tool] = "not installed"
        tools.remove(tool)
    if "locust" in tools and not have_locust():
        skipped["locust"] = "not importable; pip install locust"
        tools.remove("locust")
    generic, left_out = bench_adapters.installed(wanted)
    skipped.update(left_out)
    by_name = {g.tool: g for g in generic}
    tools += list(by_name)
    for tool, why in skipped.items():
        print(f"{tool}: skipped ({why})")
    if not keepalive and "engine" in tools:
        print(f"engine: keep-alive off on its {churn_path()} connection path")
    # An installed toolbench has its bytecode compiled (pip does it at install); a checkout run
    # with PYTHONDONTWRITEBYTECODE=1 (as here) would compile every changed module again in every
    # engine run, 0.05-0.1 s of CPU that no user pays: compile them once first.
    compileall.compile_dir(Path(toolbench.__file__).parent, quiet=1)
    samples: list[Sample] = []
    with tempfile.TemporaryDirectory() as tmp, nginx_static(Path(tmp) / "nginx", workers=1) as target:
        assert target.pid is not None
        pin_tree(target.pid, 0)
        url = target.base_url + "/"
        work = Path(tmp)
        expected_rps = 60_000.0 if keepalive else 15_000.0
        for rnd in range(args.rounds):
            order = tools[rnd % len(tools):] + tools[:rnd % len(tools)]  # rotate who goes first
            for tool in order:
                try:
                    before = server_clock(target.pid)
                    sample = _one(tool, url, args, work, expected_rps, by_name)
                    after = server_clock(target.pid)
                    sample = replace(sample, server_cpu_s=after[0] - before[0], server_idle_s=after[1] - before[1])
                except (RuntimeError, ToolbenchError) as exc:
                    print(f"round {rnd + 1}  {tool:<16} failed: {exc}", flush=True)
                    skipped.setdefault(tool, f"failed in round {rnd + 1}: {str(exc).splitlines()[0][:200]}")
                    continue
                if tool in ("wrk", "engine"):
                    expected_rps = sample.rps  # sizes ab's -n for about --duration
                samples.append(sample)
                print(f"round {rnd + 1}  {sample.tool:<16} {sample.requests:>9} req  {sample.rps:>9.0f} req/s"
                      f"  {sample.cpu_s:6.2f} s CPU  {sample.us_per_request:6.2f} us/req"
                      f"  server {sample.server_us_per_request or 0:6.2f} us/req, CPU 0 idle {sample.server_idle_s or 0:.2f} s",
                      flush=True)
                time.sleep(1.0)
        startups = {tool: (bench_adapters.startup(by_name[tool], url, work, pinned) if tool in by_name
                           else startup_cpu(tool, url, work, keepalive)) for tool in tools}
    versions = {g.tool: g.found.version for g in generic}
    table = _report(samples, startups, versions, base, keepalive)
    if keepalive and not args.no_readme:
        _write_readme(args.readme, table, args, skipped)
    if args.json:
        args.json.write_text(json.dumps([s.__dict__ for s in samples], indent=1))
    return 0


def _one(tool: str, url: str, args: argparse.Namespace, work: Path, expected_rps: float,
         generic: dict[str, bench_adapters.Generic]) -> Sample:
    if tool in generic:
        requests, seconds, cpu = bench_adapters.run(generic[tool], url, args.connections, args.duration, work, pinned)
        return Sample(tool, requests, seconds, cpu)
    runners: dict[str, Callable[[], Sample]] = {
        "engine": lambda: run_engine(url, args.connections, args.duration, work, args.keepalive == "on"),
        "engine-py": lambda: run_engine(url, args.connections, args.duration, work, False, python_path=True),
        "engine-co": lambda: run_engine(url, args.connections, args.duration, work, coalesce=True),
        "engine-nh": lambda: run_engine(url, args.connections, args.duration, work, hold=False),
        "wrk": lambda: run_wrk(url, args.connections, args.duration, work),
        "ab": lambda: run_ab(url, args.connections, args.duration, work, expected_rps, args.keepalive == "on"),
        "locust": lambda: run_locust(url, args.connections, args.duration, work),
    }
    return runners[tool]()


def _report(samples: list[Sample], startups: dict[str, float | None], versions: dict[str, str], base: str,
            keepalive: bool) -> list[str]:
    """Prints the medians against `base` and returns them as a Markdown table."""
    by_tool: dict[str, list[Sample]] = {}
    for s in samples:
        by_tool.setdefault(s.tool, []).append(s)
    names = {"locust-fasthttp": "locust", "engine-co": "engine", "engine-nh": "engine"}
    med: dict[str, tuple[float, float, float]] = {}
    for tool, ss in by_tool.items():
        fixed = startups.get(names.get(tool, tool)) or 0.0  # None: not measured, taken as none
        med[tool] = (statistics.median(s.us_per_request for s in ss),
                     statistics.median((s.cpu_s - fixed) / s.requests * 1e6 for s in ss),
                     statistics.median(s.rps for s in ss))
    base_us, base_steady, base_rps = med.get(base, (float("nan"),) * 3)
    vs = f"vs {base}"
    print(f"\nkeep-alive {'on' if keepalive else 'off'}: medians over {max((len(v) for v in by_tool.values()), default=0)} "
          "rounds (CPU: user+system of the tool's process tree; start-up: a one-request run)")
    print(f"  {'tool':<16}{'us CPU/req':>11}{vs:>8}{'minus start-up':>16}{vs:>8}{'req/s':>9}"
          f"{vs:>8}{'start-up s':>12}")
    table = [f"| tool | µs CPU/request | {vs} | minus start-up | {vs} | requests/s | {vs} | start-up CPU s "
             "| server µs/request | server CPU idle |", "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for tool, (us, steady, rps) in sorted(med.items(), key=lambda kv: kv[1][0]):
        fixed = startups.get(names.get(tool, tool))
        start = f"{fixed:.3f}" if fixed is not None else "—"
        less = (f"{steady:.2f}", f"{steady / base_steady:.2f}×") if fixed is not None else ("—", "—")
        print(f"  {tool:<16}{us:>11.2f}{us / base_us:>7.2f}x{less[0]:>16}{less[1]:>8}"
              f"{rps:>9.0f}{rps / base_rps:>7.2f}x{start:>12}")
        label = f"{tool} {versions[tool]}" if tool in versions else tool
        table.append(f"| {label} | {us:.2f} | {us / base_us:.2f}× | {less[0]} | {less[1]} "
                     f"| {rps:,.0f} | {rps / base_rps:.2f}× | {start} | {_server(by_tool[tool])} |")
    if "engine" in med and base in med:
        _bar(by_tool, med["engine"], (base_us, base_rps), base, keepalive)
    return table


def _server(samples: list[Sample]) -> str:
    """The server's median CPU per request and CPU 0's idle share over the tool's runs."""
    cost = [s.server_us_per_request for s in samples if s.server_us_per_request is not None]
    idle = [s.server_idle_s / s.seconds for s in samples if s.server_idle_s is not None and s.seconds]
    if not cost or not idle:
        return "— | —"
    return f"{statistics.median(cost):.2f} | {statistics.median(idle):.0%}"


def _bar(by_tool: dict[str, list[Sample]], engine: tuple[float, float, float], base_med: tuple[float, float],
         base: str, keepalive: bool) -> None:
    us, _, rps = engine
    base_us, base_rps = base_med
    # Side by side within each round, as well as over the medians; the engine's variants too.
    for name in [t for t in ("engine", "engine-nh", "engine-co") if t in by_tool]:
        rounds = list(zip(by_tool[name], by_tool[base]))
        cpu_ratios = [e.us_per_request / a.us_per_request for e, a in rounds]
        rps_ratios = [e.rps / a.rps for e, a in rounds]
        print(f"  per round, {name}/{base}: CPU/req {' '.join(f'{r:.3f}' for r in cpu_ratios)}; "
              f"req/s {' '.join(f'{r:.3f}' for r in rps_ratios)}")
    if keepalive:  # issue 29's
        met = us <= 0.9 * base_us and rps >= 1.0 * base_rps
        print(f"  bar (<= 0.9x wrk CPU/req, >= 1.0x wrk req/s), start-up included: {'met' if met else 'NOT met'}")
        return
    met = us <= 1.05 * base_us and rps >= 0.95 * base_rps
    print(f"  bar (<= 1.05x ab CPU/req, >= 0.95x ab req/s), start-up included: {'met' if met else 'NOT met'}")


def _write_readme(readme: Path, table: list[str], args: argparse.Namespace, skipped: dict[str, str]) -> None:
    """Replaces the marked section of the README with this run's table (the rest stays)."""
    text = readme.read_text(encoding="utf-8")
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{readme}: no {BEGIN!r} ... {END!r} section to write the table into")
    load = os.getloadavg()[0]
    when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    said = [f"Last run {when}, `--rounds {args.rounds} --duration {args.duration:g} --connections "
            f"{args.connections}`, load average {load:.1f} at the end; medians, sorted by CPU per request:", ""]
    said += table
    if skipped:
        said += ["", "Not in the table: " + "; ".join(f"{t} ({why})" for t, why in sorted(skipped.items())) + "."]
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    readme.write_text(head + BEGIN + "\n" + "\n".join(said) + "\n" + END + tail, encoding="utf-8")
    print(f"table written into {readme}")


if __name__ == "__main__":
    sys.exit(main())
