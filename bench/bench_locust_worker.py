"""An engine Locust worker against Locust's own FastHttpUser worker, under the same
headless Locust master: requests per CPU second of the worker.

One nginx (1 worker) and the Locust master pinned to CPU 0; one worker pinned to CPU 1
(the engine's `toolbench engine URL --locust-master`, or `locust --worker` with a
FastHttpUser and no wait); keep-alive; the 13-byte "Hello, World!"; 50 users. The two
alternate within each round. Requests are what the master counted (its --json output);
CPU is the worker's user + system time (os.wait4), start-up included, and without it: less
the worker's CPU time when the master sends its spawn (read with psutil at that log line:
Python, the imports, gevent for Locust, and joining the master).

    .venv/bin/python bench/bench_locust_worker.py [--rounds 3] [--duration 5] [--users 50]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path

import psutil
from bench_engine import LOCUSTFILE  # the same FastHttpUser, no wait

from toolbench.engine.locust_cell import free_port
from toolbench.servers.nginx import nginx_static

WORKERS = ("engine", "locust")


@dataclass(frozen=True)
class Sample:
    worker: str
    requests: int
    failures: int
    cpu_s: float
    startup_cpu_s: float
    run_s: float

    @property
    def per_cpu_s(self) -> float:
        return self.requests / self.cpu_s if self.cpu_s else float("nan")

    @property
    def per_cpu_s_running(self) -> float:
        used = self.cpu_s - self.startup_cpu_s
        return self.requests / used if used > 0 else float("nan")


def one_run(kind: str, url: str, users: int, duration: int, work: Path) -> Sample:
    port = free_port()
    master = subprocess.Popen(
        ["taskset", "-c", "0", sys.executable, "-m", "locust", "-f", "locustfile.py", "--master", "--headless",
         "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port), "--expect-workers", "1",
         "--expect-workers-max-wait", "60", "-u", str(users), "-r", str(users), "-t", f"{duration}s",
         "--host", url, "--json", "--only-summary", "--loglevel", "INFO", "--exit-code-on-error", "0"],
        cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if kind == "engine":
        argv = [sys.executable, "-m", "toolbench.engine", url + "/", "--locust-master", f"127.0.0.1:{port}"]
    else:
        argv = [sys.executable, "-m", "locust", "-f", "locustfile.py", "--worker", "--master-host", "127.0.0.1",
                "--master-port", str(port), "--loglevel", "WARNING"]
    worker = subprocess.Popen(["taskset", "-c", "1", *argv], cwd=work, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    startup: list[float] = []
    watcher = threading.Thread(target=_startup_cpu, args=(master, worker.pid, startup))
    watcher.start()
    out = master.stdout.read() if master.stdout else ""
    master.wait(timeout=duration + 120)
    watcher.join()
    _, _, usage = os.wait4(worker.pid, 0)
    worker.returncode = 0  # reaped by wait4 above
    (entry,) = json.loads(out)
    return Sample(kind, entry["num_requests"], entry["num_failures"], usage.ru_utime + usage.ru_stime,
                  startup[0] if startup else float("nan"), entry["last_request_timestamp"] - entry["start_time"])


def _startup_cpu(master: subprocess.Popen[str], pid: int, found: list[float]) -> None:
    """The worker's CPU time when the master starts sending it users."""
    assert master.stderr is not None
    for line in master.stderr:
        if not found and "Sending spawn jobs" in line:
            times = psutil.Process(pid).cpu_times()
            found.append(times.user + times.system)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--duration", type=int, default=5, help="the master's run time, whole seconds")
    parser.add_argument("--users", type=int, default=50)
    args = parser.parse_args()
    if len(os.sched_getaffinity(0)) < 2:
        print("needs 2 CPUs (nginx and the master on one, the worker on the other)", file=sys.stderr)
        return 2
    samples: list[Sample] = []
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "locustfile.py").write_text(LOCUSTFILE)
        with nginx_static(work / "nginx") as target:
            assert target.pid is not None
            subprocess.run(["taskset", "-a", "-p", "-c", "0", str(target.pid)], check=True,
                           stdout=subprocess.DEVNULL)
            for round_ in range(args.rounds):
                order = WORKERS if round_ % 2 == 0 else WORKERS[::-1]
                for kind in order:
                    sample = one_run(kind, target.base_url, args.users, args.duration, work)
                    samples.append(sample)
                    print(f"round {round_ + 1} {kind}: {sample.requests} requests ({sample.failures} failed), "
                          f"{sample.cpu_s:.2f} s CPU ({sample.startup_cpu_s:.2f} s of it before the spawn), "
                          f"{sample.per_cpu_s:,.0f} requests per CPU second", file=sys.stderr)
    _report(samples)
    return 0


def _report(samples: list[Sample]) -> None:
    medians = {}
    for kind in WORKERS:
        mine = [s for s in samples if s.worker == kind]
        medians[kind] = (statistics.median(s.per_cpu_s for s in mine),
                         statistics.median(s.per_cpu_s_running for s in mine),
                         statistics.median(s.requests / s.run_s for s in mine))
    base, base_running = medians["locust"][0], medians["locust"][1]
    print("| worker | requests per CPU second | vs Locust's | without start-up | vs Locust's | requests/s |")
    print("| --- | --- | --- | --- | --- | --- |")
    names = {"engine": "engine (`toolbench engine --locust-master`)", "locust": "Locust 2.47 FastHttpUser worker"}
    for kind, (per_cpu, running, rps) in medians.items():
        print(f"| {names[kind]} | {per_cpu:,.0f} | {per_cpu / base:.1f}× | {running:,.0f} | "
              f"{running / base_running:.1f}× | {rps:,.0f} |")


if __name__ == "__main__":
    sys.exit(main())
