"""Keep-alive off (a connection per request: engine/_churn.c, and churn.py where C is not built) against servers that
misbehave, and the engine's file-descriptor limit. Functional: nothing here is timed."""
from __future__ import annotations

import json
import resource
import socket
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from engine_paths import PATHS, use_path
from helpers.engine_servers import (ENGINE, OK, chunked, close_delimited, cut_short, dribble, echo_head, garbage,
                                    read_request, responder)
from helpers.engine_servers import run_engine as errors_run_engine
from helpers.engine_servers import serve, silent, statuses
from toolbench.engine.result import PYTHON_PATH_NOTE, SILENT_NOTE
from toolbench.record import histogram
from toolbench.record.schema import RunResult, Status
from toolbench.servers.process import RunningTarget


@pytest.fixture(autouse=True, params=PATHS)
def churn_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on both keep-alive-off paths: the C one (_churn.c) and the
    pure-Python one (churn.py) that runs where the extension was not built (and so do the
    keep-alive ones here: _churn_keepalive.c, client.py)."""
    return use_path(str(request.param), monkeypatch)


def run_engine(url: str, **kw: Any) -> RunResult:
    """As test_engine_errors runs it (2 connections, 1 worker), keep-alive off unless asked."""
    return errors_run_engine(url, **{"keepalive": False, **kw})


def test_every_request_is_timed_and_its_connect_counted(churn_path: str) -> None:
    with serve(responder(lambda raw, stats: OK)) as (url, stats):
        result = run_engine(url, connections=4, requests=200)
    assert (PYTHON_PATH_NOTE in result.all_notes) == (churn_path == "Python")  # a run says which path it took
    counts = result.measurement.counts
    assert counts.requests_ok == 200 and counts.requests_failed == 0
    assert histogram.decode(result.measurement.histogram).get_total_count() == 200
    assert counts.connections_opened == 200  # the probe before the start is not counted
    assert stats.connections == 201 and sorted(set(stats.requests_per_connection)) == [0, 1]
    assert result.measurement.transfer.received_bytes == 200 * len(OK)
    lat = result.measurement.latency
    assert lat.connect_mean_ms is not None and lat.ttfb_mean_ms is not None and lat.mean_ms is not None
    assert lat.connect_mean_ms <= lat.mean_ms and lat.ttfb_mean_ms <= lat.mean_ms


def test_malformed_cut_short_and_close_delimited_responses() -> None:
    with serve(garbage) as (url, _):
        result = run_engine(url, requests=10)
    assert result.measurement.counts.failures.other == 10 and "malformed=10" in " ".join(result.all_notes)
    with serve(cut_short) as (url, _):
        result = run_engine(url, requests=10)
    assert result.measurement.counts.failures.read == 10 and result.measurement.counts.requests_ok == 0
    with serve(close_delimited) as (url, _):
        result = run_engine(url, requests=10)
    assert result.measurement.counts.requests_ok == 10 and result.measurement.counts.requests_failed == 0


def test_chunked_statuses_and_head() -> None:
    with serve(responder(chunked)) as (url, _):
        assert run_engine(url, requests=12).measurement.counts.requests_ok == 12
    with serve(responder(statuses)) as (url, _):
        result = run_engine(url, requests=30)
    assert result.measurement.counts.status_codes == {200: 10, 404: 10, 503: 10}
    with serve(responder(echo_head)) as (url, stats):
        result = run_engine(url, requests=10, method="HEAD")
    assert result.measurement.counts.requests_ok == 10 and stats.connections == 11


@pytest.mark.parametrize("response, ok, code", [
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nX-Trailer: t\r\n\r\n", True, 201),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nnot chunked: the close ends it", True, 200),
    (b"HTTP/2.0 203 Whatever\r\nContent-Length: 4\r\n\r\nbody", True, 203),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
     False, None),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\nabc", False, None),
    (b"HTTP/1.1 200 OK\nContent-Length: 3\n\nabc", False, None),
    (b"HTTP/1.1 200 OK\r\nContent Length: 3\r\n\r\nabc", False, None),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", False, None),
], ids=["interim-chunked-trailer", "other-coding", "http2-line", "length-and-chunked", "two-lengths", "bare-lf",
        "bad-name", "bad-chunk"])
def test_framing_a_byte_at_a_time(response: bytes, ok: bool, code: int | None) -> None:
    """Both paths frame a response as llhttp does, however the bytes are split."""
    with serve(dribble(response)) as (url, _):
        result = run_engine(url, requests=3)
    counts = result.measurement.counts
    if ok:
        assert counts.requests_ok == 3 and counts.status_codes == {code: 3}
    else:
        assert counts.requests_ok == 0 and counts.failures.other == 3, counts


def test_keepalive_on_reads_a_split_head_whole_too() -> None:
    """The keep-alive path decides at the close from the whole head, not its first read."""
    with serve(dribble(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nthe close ends it")) as (url, _):
        result = run_engine(url, requests=3, keepalive=True)
    assert result.measurement.counts.requests_ok == 3


def test_a_body_larger_than_the_socket_buffer_is_sent_whole() -> None:
    body = bytes(range(256)) * 16384  # 4 MiB: many partial sends
    with serve(responder(lambda raw, stats: OK)) as (url, stats):
        result = run_engine(url, requests=3, method="POST", body=body)
    assert result.measurement.counts.requests_ok == 3
    assert all(raw.endswith(body) for raw in stats.requests)


def test_unanswered_requests_time_out() -> None:
    with serve(silent) as (url, _):
        result = run_engine(url, requests=4, timeout_s=0.3)
    assert result.measurement.counts.failures.timeout == 4 and result.outcome.status is Status.FAILED


def test_open_model_and_warmup() -> None:
    with serve(responder(lambda raw, stats: OK)) as (url, stats):
        result = run_engine(url, connections=4, duration_s=1.0, rate_rps=200.0, warmup_s=0.3)
    counts = result.measurement.counts
    assert counts.requests_failed == 0 and counts.requests_total and counts.requests_total > 100
    assert len(stats.requests) > counts.requests_total  # the warm-up's requests are not counted
    assert result.measurement.latency_uncorrected is not None


def test_a_keepalive_connection_that_gets_no_response_is_noted() -> None:
    with serve(silent) as (url, _):
        result = run_engine(url, duration_s=0.5, keepalive=True)
    assert f"{SILENT_NOTE}: 2 of the connections open" in " ".join(result.all_notes)


def test_no_note_when_every_connection_was_used(nginx: RunningTarget) -> None:
    result = run_engine(nginx.base_url, connections=20, duration_s=0.5, keepalive=True)
    assert result.measurement.counts.connections_opened == 20
    assert not any(SILENT_NOTE in note for note in result.all_notes)


def _limited(soft: int, hard: int) -> Any:
    def preexec() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    return preexec


@pytest.mark.parametrize("keepalive", [True, False])
def test_the_engine_raises_its_soft_descriptor_limit(nginx: RunningTarget, tmp_path: Path, keepalive: bool) -> None:
    """300 connections at once under a soft limit of 128: only possible once it is raised."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1024:
        pytest.skip(f"the hard limit here ({hard}) leaves no room to test raising the soft one")
    out = tmp_path / "r.json"
    argv = ENGINE + [nginx.base_url + "/", "-c", "300", "-w", "1", "-n", "900", "--json-out", str(out)]
    proc = subprocess.run(argv + ([] if keepalive else ["--no-keepalive"]), capture_output=True, text=True,
                          timeout=120, preexec_fn=_limited(128, 1024))
    assert proc.returncode == 0, proc.stderr
    result = RunResult.from_dict(json.loads(out.read_text()))
    assert result.measurement.counts.requests_ok == 900 and result.measurement.counts.requests_failed == 0
    if keepalive:
        assert result.measurement.counts.connections_opened == 300


def test_a_hard_limit_too_low_is_one_clear_line() -> None:
    proc = subprocess.run(ENGINE + ["http://127.0.0.1:9/", "-c", "500", "-w", "1", "-n", "500"],
                          capture_output=True, text=True, timeout=60, preexec_fn=_limited(128, 256))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "500 connections need 564 file descriptors" in lines[0] and "hard limit (ulimit -Hn) is 256" in lines[0]


def test_a_connect_still_in_progress_waits_then_sends() -> None:
    """A listener with a full accept queue drops SYNs, so connects are still in progress
    when the engine first tries to send; each is retried by the kernel and then served."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    port = listener.getsockname()[1]

    def serve_slowly() -> None:
        for _ in range(7):  # the probe, then six requests
            time.sleep(0.2)
            conn, _ = listener.accept()
            with conn:
                if read_request(conn, bytearray()) is not None:
                    conn.sendall(OK)

    thread = threading.Thread(target=serve_slowly, daemon=True)
    thread.start()
    with listener:
        result = run_engine(f"http://127.0.0.1:{port}", connections=3, requests=6, timeout_s=30.0)
        thread.join(timeout=60)
    assert result.measurement.counts.requests_ok == 6 and result.measurement.counts.requests_failed == 0
    assert result.measurement.counts.connections_opened == 6
