"""A toolbench run in a process of its own, and the checks that nothing it started outlives it."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from pathlib import Path

import psutil
import pytest

from conftest import REPO
from toolbench.hosts import lifeline


class Run:
    """`toolbench run` as a user starts it, its output in files."""

    def __init__(self, tmp_path: Path, name: str, *args: str) -> None:
        self.out, self.err = tmp_path / f"{name}.out", tmp_path / f"{name}.err"
        with open(self.out, "w") as out, open(self.err, "w") as err:
            self.proc = subprocess.Popen([TOOLBENCH, "run", *args, "--no-progress"], stdout=out, stderr=err,
                                         stdin=subprocess.DEVNULL)

    def wait(self, timeout: float = 120) -> int:
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            raise

    @property
    def stderr(self) -> str:
        return self.err.read_text()

    @property
    def stdout(self) -> str:
        return self.out.read_text()


def wait_for(what: str, check, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError(f"{what}: not within {timeout:g}s")


def run_folder(root: Path) -> Path:
    return wait_for("the run folder", lambda: next(iter(root.glob("*/manifest.json")), None)).parent


def ledger(run_dir: Path) -> list[dict]:
    path = run_dir / lifeline.LEDGER
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def assert_nothing_survives(run_dir: Path, port: int | None) -> None:
    """Every process the run recorded is gone with its whole group (nginx's workers too), and
    the target's port (if it was the run's own) answers no more. A pid alive again with another create time is not ours."""
    for entry in ledger(run_dir):
        if entry["event"] != "started":
            continue

        def ended(entry=entry) -> bool:
            try:
                proc = psutil.Process(entry["pid"])
                if abs(proc.create_time() - entry["create_time"]) <= 0.01 and proc.status() != psutil.STATUS_ZOMBIE:
                    return False
            except psutil.NoSuchProcess:
                pass
            return not [p for p in running() if _group(p.pid) == entry["pgid"]]

        wait_for(f"the end of {entry['role']} (pid {entry['pid']})", ended, timeout=15)
    if port is None:
        return
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def _group(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None


TOOLBENCH = str(REPO / ".venv/bin/toolbench")


def running() -> list[psutil.Process]:
    """Every process but zombies (dead, waiting for whoever inherited them to reap them)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                found.append(proc)
        except psutil.Error:
            pass
    return found
