"""The engine against wrk, ab and Locust FastHttpUser: CPU per request and requests/s.

One nginx (1 worker) pinned to CPU 0; each tool pinned to CPU 1; the 13-byte
"Hello, World!"; 50 connections. Tools alternate within each round, and the medians
over the rounds are compared with wrk (keep-alive on) or ab (`--keepalive off`: a new
connection per request). CPU is the user+system time of the tool's whole process tree
(os.wait4 on the pinned child), start-up included.

    .venv/bin/python bench/bench_engine.py [--rounds 3] [--duration 5] [--connections 50]
    .venv/bin/python bench/bench_engine.py --keepalive off [--rounds 5]
"""
from __future__ import annotations

import argparse
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
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import psutil

from toolbench.targets import nginx_static

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

    @property
    def us_per_request(self) -> float:
        return self.cpu_s / self.requests * 1e6 if self.requests else float("nan")

    @property
    def rps(self) -> float:
        return self.requests / self.seconds if self.seconds else float("nan")


def pinned(argv: list[str], cpu: int, cwd: Path, timeout: float) -> tuple[str, str, float]:
    """Runs argv on one CPU; returns stdout, stderr and the CPU seconds of its process tree."""
    out, err, usage = pinned_usage(argv, cpu, cwd, timeout)
    return out, err, usage.ru_utime + usage.ru_stime


def pinned_usage(argv: list[str], cpu: int, cwd: Path, timeout: float) -> tuple[str, str, resource.struct_rusage]:
    """Runs argv on one CPU; returns stdout, stderr and the resource usage of its process tree
    (ru_maxrss: the peak of its largest process)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(["taskset", "-c", str(cpu)] + argv, cwd=cwd, stdout=out, stderr=err,
                                stdin=subprocess.DEVNULL)
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


def run_engine(url: str, conns: int, duration: float, work: Path, keepalive: bool = True) -> Sample:
    result = work / "engine.json"
    argv = [sys.executable, "-m", "toolbench.engine", url, "-c", str(conns), "-d", f"{duration:g}s",
            "-w", "1", "--json-out", str(result), "--no-progress"] + ([] if keepalive else ["--no-keepalive"])
    out, err, cpu = pinned(argv, 1, work, duration + 60)
    data = json.loads(result.read_text())["measurement"]
    if data["counts"]["requests_failed"]:
        raise RuntimeError(f"engine: {data['counts']['requests_failed']} requests failed: {err[-500:]!r}")
    return Sample("engine", data["counts"]["requests_total"], data["timing"]["duration_s"], cpu)


def run_wrk(url: str, conns: int, duration: float, work: Path) -> Sample:
    out, err, cpu = pinned(["wrk", "-t1", f"-c{conns}", f"-d{duration:g}s", url], 1, work, duration + 60)
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
    if tool == "engine":
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


def have_locust() -> bool:
    # Not `import locust`: it monkey-patches this process with gevent, whose child
    # watcher then reaps the tools before os.wait4 can read their CPU time.
    return importlib.util.find_spec("locust") is not None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--connections", type=int, default=50)
    parser.add_argument("--keepalive", choices=("on", "off"), default="on",
                        help="off: a new connection per request, compared with ab (default tools engine,ab)")
    parser.add_argument("--tools", help="default engine,wrk,ab,locust (keep-alive on), engine,ab (off)")
    parser.add_argument("--json", type=Path, help="write every sample here")
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        print("needs 2 CPUs (nginx on CPU 0, the tool on CPU 1)", file=sys.stderr)
        return 2
    keepalive = args.keepalive == "on"
    tools = (args.tools or ("engine,wrk,ab,locust" if keepalive else "engine,ab")).split(",")
    base = "wrk" if keepalive else "ab"
    missing = [t for t in ("wrk", "ab") if t in tools and shutil.which(t) is None]
    if "locust" in tools and not have_locust():
        print("locust: skipped (not importable; pip install locust)")
        tools.remove("locust")
    for tool in missing:
        print(f"{tool}: skipped (not installed)")
        tools.remove(tool)
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
                sample = _one(tool, url, args, work, expected_rps)
                if tool in ("wrk", "engine"):
                    expected_rps = sample.rps  # sizes ab's -n for about --duration
                samples.append(sample)
                print(f"round {rnd + 1}  {sample.tool:<16} {sample.requests:>9} req  {sample.rps:>9.0f} req/s"
                      f"  {sample.cpu_s:6.2f} s CPU  {sample.us_per_request:6.2f} us/req", flush=True)
                time.sleep(1.0)
        startups = {tool: startup_cpu(tool, url, work, keepalive) for tool in tools}
    _report(samples, startups, base, keepalive)
    if args.json:
        args.json.write_text(json.dumps([s.__dict__ for s in samples], indent=1))
    return 0


def _one(tool: str, url: str, args: argparse.Namespace, work: Path, expected_rps: float) -> Sample:
    runners: dict[str, Callable[[], Sample]] = {
        "engine": lambda: run_engine(url, args.connections, args.duration, work, args.keepalive == "on"),
        "wrk": lambda: run_wrk(url, args.connections, args.duration, work),
        "ab": lambda: run_ab(url, args.connections, args.duration, work, expected_rps, args.keepalive == "on"),
        "locust": lambda: run_locust(url, args.connections, args.duration, work),
    }
    return runners[tool]()


def _report(samples: list[Sample], startups: dict[str, float], base: str, keepalive: bool) -> None:
    by_tool: dict[str, list[Sample]] = {}
    for s in samples:
        by_tool.setdefault(s.tool, []).append(s)
    names = {"locust-fasthttp": "locust"}
    med: dict[str, tuple[float, float, float]] = {}
    for tool, ss in by_tool.items():
        fixed = startups.get(names.get(tool, tool), 0.0)
        med[tool] = (statistics.median(s.us_per_request for s in ss),
                     statistics.median((s.cpu_s - fixed) / s.requests * 1e6 for s in ss),
                     statistics.median(s.rps for s in ss))
    base_us, base_steady, base_rps = med.get(base, (float("nan"),) * 3)
    vs = f"vs {base}"
    print(f"\nkeep-alive {'on' if keepalive else 'off'}: medians over {max(len(v) for v in by_tool.values())} "
          "rounds (CPU: user+system of the tool's process tree; start-up: a one-request run)")
    print(f"  {'tool':<16}{'us CPU/req':>11}{vs:>8}{'minus start-up':>16}{vs:>8}{'req/s':>9}"
          f"{vs:>8}{'start-up s':>12}")
    for tool, (us, steady, rps) in med.items():
        fixed = startups.get(names.get(tool, tool), 0.0)
        print(f"  {tool:<16}{us:>11.2f}{us / base_us:>7.2f}x{steady:>16.2f}{steady / base_steady:>7.2f}x"
              f"{rps:>9.0f}{rps / base_rps:>7.2f}x{fixed:>12.3f}")
    if "engine" not in med or base not in med:
        return
    us, steady, rps = med["engine"]
    if keepalive:
        met = us <= 13.0 and us <= 1.25 * base_us and rps >= 0.95 * base_rps
        print(f"  bar (<= 13 us and <= 1.25x wrk CPU/req, >= 0.95x wrk req/s), start-up included: "
              f"{'met' if met else 'NOT met'}")
        return
    # Side by side within each round, as well as over the medians.
    rounds = list(zip(by_tool["engine"], by_tool[base]))
    cpu_ratios = [e.us_per_request / a.us_per_request for e, a in rounds]
    rps_ratios = [e.rps / a.rps for e, a in rounds]
    print(f"  per round, engine/ab: CPU/req {' '.join(f'{r:.3f}' for r in cpu_ratios)}; "
          f"req/s {' '.join(f'{r:.3f}' for r in rps_ratios)}")
    met = us <= 1.05 * base_us and rps >= 0.95 * base_rps
    print(f"  bar (<= 1.05x ab CPU/req, >= 0.95x ab req/s), start-up included: {'met' if met else 'NOT met'}")


if __name__ == "__main__":
    sys.exit(main())
