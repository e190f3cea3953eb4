"""CPU hogs a test starts: busy loops, each under `timeout` so that it ends by itself whatever
happens to the test, and ended by pid. Killing `timeout` alone would leave its loop running,
reparented to init: `end()` kills the loops first, then their `timeout`."""
from __future__ import annotations

import os
import subprocess
import sys
import time

import psutil

LOOP = "while True: pass"


class Hogs:
    """`count` busy loops (one per CPU this process may use by default), each bounded by `bound_s`."""

    def __init__(self, bound_s: int, count: int | None = None) -> None:
        n = count if count is not None else len(os.sched_getaffinity(0))
        self.procs = [subprocess.Popen(["timeout", str(bound_s), sys.executable, "-c", LOOP]) for _ in range(n)]
        deadline = time.monotonic() + 30
        while len(self.loops()) < n and time.monotonic() < deadline:  # each loop started under its timeout
            time.sleep(0.05)

    def loops(self) -> set[int]:
        """The pids of the busy loops now running under their `timeout`."""
        found: set[int] = set()
        for p in self.procs:
            try:
                found |= {c.pid for c in psutil.Process(p.pid).children(recursive=True)}
            except psutil.Error:
                pass
        return found

    def pids(self) -> set[int]:
        """The `timeout` processes and the loops under them, as they are now."""
        return {p.pid for p in self.procs} | self.loops()

    def end(self) -> None:
        for pid in self.loops():
            try:
                os.kill(pid, 9)
            except ProcessLookupError:
                pass
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
