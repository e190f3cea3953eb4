"""Bad input ends in a clear error or a counted failure class: never a hang or a traceback. The
tests that load a server run on both connection paths (`engine_path`: C and Python)."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from engine_paths import PATHS, use_path
from helpers.engine_servers import (ENGINE, OK, chunked, close_delimited, cut_short, delayed, echo_head, garbage, huge,
                                    read_request, responder, run_engine, serve, silent, statuses)
from toolbench.contract.host import free_port
from toolbench.engine.interrupt import deferred
from toolbench.record.schema import RunResult, Status

BOTH_PATHS = pytest.mark.usefixtures("engine_path")


@pytest.fixture(params=PATHS)
def engine_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The test runs on each connection path (engine_paths.py); the value says which."""
    return use_path(str(request.param), monkeypatch)

# Runs argv and prints its peak RSS in KiB. ru_maxrss keeps the peak of the image a process was
# forked from, so the engine is started from this small Python rather than from pytest, whose
# own size (after tests that draw charts) would otherwise count as the engine's.
PEAK_RSS = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL); "
            "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); sys.exit(code)")


def run_cli(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
    return subprocess.run(ENGINE + list(args), capture_output=True, text=True, timeout=timeout)


@pytest.mark.integration  # asserts on elapsed time
@BOTH_PATHS
def test_unreachable_url_is_one_clear_line(tmp_path: Path) -> None:
    port = free_port()
    out = tmp_path / "r.json"
    started = time.monotonic()
    proc = run_cli(f"http://127.0.0.1:{port}/", "-c", "4", "-d", "10s", "--json-out", str(out))
    assert time.monotonic() - started < 10  # it does not load a dead port for the whole duration
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toolbench: error: "), proc.stderr
    assert "connection refused" in lines[0].lower() and str(port) in lines[0]
    result = RunResult.from_dict(json.loads(out.read_text()))
    assert result.outcome.status is Status.FAILED and "refused" in (result.outcome.error or "").lower()


@pytest.mark.parametrize("args, says", [
    (["-c", "0", "-n", "5"], "positive integer"),
    (["-c", "ten", "-n", "5"], "positive integer"),
    (["-c", "2"], "give -c/--connections and one of -d/--duration or -n/--requests"),
    (["-c", "2", "-d", "soon"], "not a duration"),
    (["-c", "2", "-n", "5", "--frobnicate"], "unrecognized arguments"),
    (["-c", "2", "-n", "5", "-H", "no colon"], "not a header"),
    (["-c", "2", "-n", "5", "--body", "/nonexistent/body"], "--body"),
])
def test_bad_flags_exit_2_with_one_line(args: list[str], says: str) -> None:
    proc = run_cli("http://127.0.0.1:9/", *args)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("toolbench: error: ") and says in lines[0], proc.stderr
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("url, says", [("https://127.0.0.1:1/", "cannot connect"),
                                       ("ftp://x/", "expected a URL"),
                                       ("http://no-such-host.invalid/", "cannot resolve")])
def test_bad_urls_exit_2_with_one_line(url: str, says: str) -> None:
    proc = run_cli(url, "-c", "1", "-n", "1")
    assert proc.returncode == 2 and says in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


@BOTH_PATHS
def test_a_server_that_is_not_http_counts_malformed_responses() -> None:
    with serve(garbage) as (url, _):
        result = run_engine(url, requests=20)
    assert result.outcome.status is Status.FAILED
    assert result.measurement.counts.failures.other == 20 and result.measurement.counts.requests_ok == 0
    assert "malformed=20" in " ".join(result.all_notes)


@BOTH_PATHS
def test_a_close_mid_response_counts_a_read_failure() -> None:
    with serve(cut_short) as (url, _):
        result = run_engine(url, requests=10)
    assert result.measurement.counts.failures.read == 10 and result.measurement.counts.requests_ok == 0
    assert "closed=10" in " ".join(result.all_notes)


@pytest.mark.integration  # asserts on elapsed time
@BOTH_PATHS
def test_timeouts_are_counted_and_the_run_ends() -> None:
    started = time.monotonic()
    with serve(silent) as (url, _):
        result = run_engine(url, requests=4, timeout_s=0.3)
    assert time.monotonic() - started < 10
    assert result.measurement.counts.failures.timeout == 4 and result.outcome.status is Status.FAILED


@pytest.mark.integration  # asserts on elapsed time
def test_connect_timeouts_are_counted_and_the_run_ends() -> None:
    """A listener that never accepts: once its backlog is full, connects hang (SYNs dropped)."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    port = listener.getsockname()[1]
    started = time.monotonic()
    with listener:
        result = run_engine(f"http://127.0.0.1:{port}", requests=6, keepalive=False, timeout_s=0.5)
    assert time.monotonic() - started < 15
    assert result.measurement.counts.failures.timeout == 6 and result.outcome.status is Status.FAILED
    assert "connect_timeout=" in " ".join(result.all_notes)


@pytest.mark.integration  # asserts on elapsed time
def test_connect_refused_mid_run_is_counted() -> None:
    """Keep-alive off against a server that stops listening after 20 connections:
    the refusals that follow are counted, and the run still ends on time."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve_then_vanish() -> None:
        for _ in range(20):
            conn, _ = listener.accept()
            with conn:
                if read_request(conn, bytearray()) is not None:
                    conn.sendall(OK)
        listener.close()

    thread = threading.Thread(target=serve_then_vanish, daemon=True)
    thread.start()
    started = time.monotonic()
    result = run_engine(f"http://127.0.0.1:{port}", duration_s=1.0, keepalive=False, timeout_s=1.0)
    assert time.monotonic() - started < 8
    thread.join(timeout=5)
    assert result.measurement.counts.requests_ok == 19  # the 20th connection was the engine's probe
    assert result.measurement.counts.failures.connect and result.measurement.counts.failures.connect > 0
    assert result.outcome.status is Status.OK  # some requests succeeded: failures are counted, not fatal
    assert "connect_refused=" in " ".join(result.all_notes)


@BOTH_PATHS
def test_a_huge_response_is_discarded_as_it_arrives(tmp_path: Path) -> None:
    size = 64 << 20
    with serve(huge(size)) as (url, _):
        out = tmp_path / "r.json"
        proc = subprocess.run([sys.executable, "-c", PEAK_RSS, *ENGINE, url + "/", "-c", "1", "-w", "1", "-n", "3",
                               "--json-out", str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = RunResult.from_dict(json.loads(out.read_text()))
    assert result.measurement.counts.requests_ok == 3
    assert result.measurement.transfer.received_bytes >= 3 * size
    peak_kib = int(proc.stdout.split()[-1])
    assert peak_kib < size // 1024, peak_kib  # the engine and its workers together hold less than one body


@BOTH_PATHS
def test_chunked_close_delimited_head_and_error_statuses() -> None:
    with serve(responder(chunked)) as (url, _):
        result = run_engine(url, requests=20)
    assert result.measurement.counts.requests_ok == 20 and result.measurement.counts.requests_failed == 0
    with serve(close_delimited) as (url, _):
        result = run_engine(url, requests=10)
    assert result.measurement.counts.requests_ok == 10 and result.measurement.counts.requests_failed == 0
    with serve(responder(echo_head)) as (url, stats):
        result = run_engine(url, requests=20, method="HEAD")
    assert result.measurement.counts.requests_ok == 20 and stats.connections == 2  # keep-alive survived HEAD
    with serve(responder(statuses)) as (url, _):
        result = run_engine(url, requests=30)
    assert result.measurement.counts.status_codes == {200: 10, 404: 10, 503: 10}
    assert (result.measurement.counts.failures.http_4xx, result.measurement.counts.failures.http_5xx) == (10, 10)
    assert result.measurement.counts.requests_ok == 10 and result.measurement.counts.requests_failed == 20


@BOTH_PATHS
def test_method_headers_and_body_are_sent(tmp_path: Path) -> None:
    body = tmp_path / "body.json"
    body.write_bytes(b'{"hello": "world"}')
    with serve(responder(lambda raw, stats: OK)) as (url, stats):
        proc = run_cli(url + "/submit?x=1", "-c", "1", "-n", "3", "-m", "post", "-H", "X-Test: yes",
                       "-H", "Content-Type: application/json", "--body", str(body))
    assert proc.returncode == 0, proc.stderr
    assert "3 requests in" in proc.stdout
    raw = stats.requests[0]
    assert raw.startswith(b"POST /submit?x=1 HTTP/1.1\r\n")
    assert b"\r\nX-Test: yes\r\n" in raw and b"Content-Length: 18\r\n" in raw
    assert raw.endswith(b'\r\n\r\n{"hello": "world"}')


@pytest.mark.integration  # asserts on elapsed time
@BOTH_PATHS
def test_ctrl_c_stops_cleanly_with_the_figures_so_far() -> None:
    with serve(delayed(0.005)) as (url, stats):
        proc = subprocess.Popen(ENGINE + [url + "/", "-c", "2", "-w", "2", "-d", "60s"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        deadline = time.monotonic() + 30  # a busy machine starts the engine late
        while len(stats.requests) < 50 and time.monotonic() < deadline:  # its probe, then the load
            time.sleep(0.05)
        started = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # as a terminal does: the whole process group
        out, err = proc.communicate(timeout=15)
    assert time.monotonic() - started < 5
    assert proc.returncode == 130
    assert "Traceback" not in err
    assert "requests in" in out and "interrupted" in out


def test_a_ctrl_c_inside_a_deferred_block_is_raised_at_its_end_and_the_handler_is_back() -> None:
    # The import machinery's callbacks swallow a KeyboardInterrupt raised inside them, so the
    # engine's start-up holds Ctrl-C as a flag and raises it once its imports are done.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    steps: list[str] = []
    try:
        with pytest.raises(KeyboardInterrupt):
            with deferred():
                os.kill(os.getpid(), signal.SIGINT)
                time.sleep(0.05)  # a handler that raised would have done so by now
                steps.append("ran on")
        assert steps == ["ran on"]
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
        with deferred():  # and without a Ctrl-C, nothing is raised
            steps.append("quiet")
        # A SIGINT the caller ignores stays ignored: the block does not turn it into an interrupt.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        with deferred():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.05)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)


@pytest.mark.parametrize("after_s", [round(0.06 + 0.02 * n, 2) for n in range(13)])
def test_ctrl_c_while_the_workers_start_ends_the_engine(after_s: float) -> None:
    # A Ctrl-C between a worker's fork and its own SIG_IGN once hung the engine for good: that
    # worker died half-made and its siblings, holding stdout, waited for a start never sent.
    # The window is a few milliseconds wide, so the sweep finds it only now and then.
    with serve(delayed(0.005)) as (url, _):
        proc = subprocess.Popen(ENGINE + [url + "/", "-c", "2", "-w", "2", "-d", "60s"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                start_new_session=True)
        time.sleep(after_s)
        os.killpg(proc.pid, signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            pytest.fail(f"a Ctrl-C {after_s}s after the start hung the engine")
    assert proc.returncode != 0, err
