"""`python -m toolbench.engine.locust_cell N ENGINE_ARGS... -- LOCUST_ARGS...`: one Locust
cell whose workers are the engine's.

Starts a headless Locust master (LOCUST_ARGS plus --master on a free loopback port and
--expect-workers N) and N engine workers (`toolbench engine ENGINE_ARGS --locust-master`),
passes the master's stdout and stderr through as its own (the results are read from them
as from any Locust run), keeps the workers' output in engine_workers.txt, and exits with
the master's exit code. N = -1: one worker per core this process may run on."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from types import FrameType

WORKERS_LOG = "engine_workers.txt"
EXPECT_WORKERS_MAX_WAIT_S = 30  # a worker that never comes ends the master, not the cell's hard limit
WORKERS_GRACE_S = 10.0  # after the master's end, for the workers' own (they were told to quit)


def split_argv(argv: list[str]) -> tuple[int, list[str], list[str]]:
    """(workers, engine args, Locust args). Raises ValueError naming what is wrong."""
    if "--" not in argv or not argv:
        raise ValueError("usage: locust_cell N ENGINE_ARGS... -- LOCUST_ARGS...")
    cut = argv.index("--")
    try:
        workers = int(argv[0])
    except ValueError:
        raise ValueError(f"workers: expected a count, got {argv[0]!r}") from None
    if workers == -1:
        workers = len(os.sched_getaffinity(0))
    if workers < 1:
        raise ValueError(f"workers: expected a positive count or -1, got {argv[0]!r}")
    return workers, argv[1:cut], argv[cut + 1:]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def main(argv: list[str]) -> int:
    try:
        workers, engine_args, locust_args = split_argv(argv)
    except ValueError as exc:
        print(f"toolbench: error: {exc}", file=sys.stderr)
        return 2
    port = free_port()
    master = [sys.executable, "-m", "locust", *locust_args, "--master", "--master-bind-host", "127.0.0.1",
              "--master-bind-port", str(port), "--expect-workers", str(workers),
              "--expect-workers-max-wait", str(EXPECT_WORKERS_MAX_WAIT_S)]
    worker = [sys.executable, "-m", "toolbench.engine", *engine_args, "--locust-master", f"127.0.0.1:{port}"]
    started: list[subprocess.Popen[bytes]] = []

    def forward(signum: int, _frame: FrameType | None) -> None:
        for proc in started:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)

    for signum in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, forward)
    with open(Path.cwd() / WORKERS_LOG, "ab") as log:
        started.append(subprocess.Popen(master))
        started += [subprocess.Popen(worker, stdout=log, stderr=log, stdin=subprocess.DEVNULL)
                    for _ in range(workers)]
        code = started[0].wait()
        deadline = time.monotonic() + WORKERS_GRACE_S
        for index, proc in enumerate(started[1:], 1):
            try:
                status = proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
                status = proc.wait()
                print(f"engine worker {index} was still running {WORKERS_GRACE_S:g}s after the master "
                      "ended: killed", file=sys.stderr)
            if status != 0:
                print(f"engine worker {index} exited with code {status} (its output: {WORKERS_LOG})",
                      file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
