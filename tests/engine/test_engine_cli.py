"""`toolbench engine` as a user runs it: through the main CLI, with --json, on a terminal."""
from __future__ import annotations

import json
import os
import pty
import select
import subprocess
import sys
import time

from conftest import REPO
from helpers.engine_servers import OK, responder, serve
from toolbench.record.schema import RunResult, Status

TOOLBENCH = str(REPO / ".venv" / "bin" / "toolbench")


def test_the_main_cli_runs_the_engine_and_prints_a_wrk_like_summary() -> None:
    with serve(responder(lambda raw, stats: OK)) as (url, _):
        done = subprocess.run([TOOLBENCH, "engine", url + "/", "-c", "2", "-n", "50", "-w", "1"],
                              capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert out.startswith("Running ") and f"@ {url}/" in out
    assert "Latency distribution" in out and "99.9%" in out and "50 requests in" in out
    assert "Requests/sec:" in out and "Transfer/sec:" in out


def test_json_is_a_run_result() -> None:
    with serve(responder(lambda raw, stats: OK)) as (url, _):
        done = subprocess.run([sys.executable, "-m", "toolbench.engine", url + "/", "-c", "2", "-n", "40",
                               "-w", "2", "--json"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = RunResult.from_dict(json.loads(done.stdout))
    assert result.identity.tool == "engine" and result.outcome.status is Status.OK
    assert result.measurement.counts.requests_ok == 40 and result.identity.params["workers"] == "2"


def test_a_progress_line_on_a_terminal() -> None:
    with serve(responder(lambda raw, stats: OK)) as (url, _):
        master, slave = pty.openpty()
        proc = subprocess.Popen([sys.executable, "-m", "toolbench.engine", url + "/", "-c", "1", "-w", "1",
                                 "-d", "1.6s"], stdout=subprocess.PIPE, stderr=slave, text=True)
        os.close(slave)
        seen = b""
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    break  # the engine closed the terminal: it is done
                if not chunk:
                    break
                seen += chunk
            elif proc.poll() is not None:
                break
        out, _ = proc.communicate(timeout=20)
        os.close(master)
    assert proc.returncode == 0
    assert b"\r" in seen and b"requests" in seen and b"req/s" in seen and b"\x1b[K" in seen
    assert "requests in" in out  # the summary itself goes to stdout
