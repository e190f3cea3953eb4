"""Keep-alive on, on both connection paths (engine/_churn_keepalive.c, and client.py's Conn where
C is not built): connections reused while the server keeps them and reopened, counted, when it
closes one; chunked and HEAD responses; failures by status and by timeout; a request body; exact
request counts; what is sent. Functional: nothing here is timed."""
from __future__ import annotations

import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest

from engine_paths import PATHS, use_path
from helpers.engine_servers import OK, chunked, echo_head, read_request, responder
from helpers.engine_servers import run_engine as errors_run_engine
from helpers.engine_servers import serve, silent, statuses
from toolbench.engine.options import EngineOptions, parse_url, request_bytes
from toolbench.record import histogram
from toolbench.record.schema import RunResult, Status
from toolbench.scenario.targets import NginxOptions
from toolbench.servers.nginx import nginx_static
from toolbench.servers.process import RunningTarget

PER_CONNECTION = 10  # nginx's keepalive_requests here: it closes a connection after that many


@pytest.fixture(autouse=True, params=PATHS)
def engine_path(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on the C path and on the Python one (engine_paths.py)."""
    return use_path(str(request.param), monkeypatch)


@pytest.fixture(scope="module")
def closing_nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTarget]:
    """A real nginx that answers `Connection: close` on every connection's 10th response."""
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (scripts/install.sh installs it)")
    options = NginxOptions(workers=1, worker_connections=1024, keepalive_requests=PER_CONNECTION)
    with nginx_static(tmp_path_factory.mktemp("nginx"), options=options) as target:
        yield target


def run_engine(url: str, **kw: Any) -> RunResult:
    """As test_engine_errors runs it: 2 connections, 1 worker, keep-alive."""
    return errors_run_engine(url, **kw)


def closing_after(n: int) -> Any:
    """A server that says `Connection: close` on every connection's n-th response, then closes."""
    def handle(sock: socket.socket, stats: Any) -> None:
        with stats.lock:
            index = stats.connections - 1
        buf = bytearray()
        for k in range(1, n + 1):
            raw = read_request(sock, buf)
            if raw is None:
                return
            stats.saw_request(index, raw)
            sock.sendall(OK if k < n else b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
    return handle


def answers_once(sock: socket.socket, stats: Any) -> None:
    """Answers a connection's first request, then nothing more (until the engine gives up)."""
    with stats.lock:
        index = stats.connections - 1
    buf = bytearray()
    raw = read_request(sock, buf)
    if raw is None:
        return
    stats.saw_request(index, raw)
    sock.sendall(OK)
    silent(sock, stats)


def test_a_connection_the_server_closes_is_reopened_and_counted() -> None:
    with serve(closing_after(5)) as (url, stats):
        result = run_engine(url, connections=1, requests=30)
    counts = result.measurement.counts
    assert counts.requests_ok == 30 and counts.requests_failed == 0
    assert stats.connections == 6 and stats.requests_per_connection == [5] * 6
    assert counts.connections_opened == 6  # the one opened before the start, and five reopened


def test_nginx_closing_after_its_keepalive_requests(closing_nginx: RunningTarget) -> None:
    result = run_engine(closing_nginx.base_url, connections=4, requests=200)
    counts = result.measurement.counts
    assert counts.requests_ok == 200 and counts.requests_failed == 0
    # Ten requests a connection, but for each slot's last (how the 200 fall to the slots varies).
    assert 200 // PER_CONNECTION <= (counts.connections_opened or 0) <= 200 // PER_CONNECTION + 4
    result = run_engine(closing_nginx.base_url, connections=4, duration_s=0.5)
    counts = result.measurement.counts
    assert counts.requests_failed == 0 and counts.requests_total and counts.requests_total > PER_CONNECTION
    assert counts.connections_opened is not None
    # Every connection carried ten requests but the last of each slot, cut short by the stop.
    assert counts.requests_total / PER_CONNECTION <= counts.connections_opened
    assert counts.connections_opened <= counts.requests_total / PER_CONNECTION + 4


def test_a_server_closing_every_connection_unannounced_in_the_open_model() -> None:
    """The close arrives while the connection waits for its next send: that send opens another."""
    with serve(responder(lambda raw, stats: OK, keepalive=False)) as (url, stats):
        result = run_engine(url, duration_s=0.6, rate_rps=40.0)
    counts = result.measurement.counts
    assert counts.requests_failed == 0 and counts.requests_total and counts.requests_total >= 10
    assert counts.connections_opened is not None and counts.connections_opened >= counts.requests_total
    assert set(stats.requests_per_connection) <= {0, 1}


def test_chunked_responses_keep_the_connection() -> None:
    with serve(responder(chunked)) as (url, stats):
        result = run_engine(url, requests=20)
    assert result.measurement.counts.requests_ok == 20 and result.measurement.counts.requests_failed == 0
    assert stats.connections == 2
    assert result.measurement.transfer.received_bytes == 20 * len(chunked(b"", stats))


def test_a_404_is_a_failure_by_status(nginx: RunningTarget) -> None:
    result = run_engine(nginx.base_url + "/nope", requests=20)
    counts = result.measurement.counts
    assert counts.status_codes == {404: 20} and counts.failures.http_4xx == 20
    assert counts.requests_ok == 0 and counts.requests_failed == 20
    assert counts.connections_opened == 2  # nginx keeps a connection after a 404
    with serve(responder(statuses)) as (url, stats):
        counts = run_engine(url, requests=30).measurement.counts
    assert counts.status_codes == {200: 10, 404: 10, 503: 10}
    assert (counts.failures.http_4xx, counts.failures.http_5xx, counts.requests_failed) == (10, 10, 20)
    assert stats.connections == 2


def test_a_timeout_drops_the_connection_and_the_next_request_reopens_one() -> None:
    with serve(answers_once) as (url, stats):
        result = run_engine(url, connections=1, requests=6, timeout_s=0.3)
    counts = result.measurement.counts
    assert counts.requests_ok == 3 and counts.failures.timeout == 3 and counts.requests_failed == 3
    assert counts.connections_opened == 3 == stats.connections
    assert histogram.decode(result.measurement.histogram).get_total_count() == 3


def test_head() -> None:
    with serve(responder(echo_head)) as (url, stats):
        result = run_engine(url, requests=20, method="HEAD")
    assert result.measurement.counts.requests_ok == 20 and result.measurement.counts.requests_failed == 0
    assert stats.connections == 2 and all(raw.startswith(b"HEAD / HTTP/1.1\r\n") for raw in stats.requests)


def test_a_request_body_small_and_larger_than_the_socket_buffer(tmp_path: Path) -> None:
    for body in (b'{"hello": "world"}', bytes(range(256)) * 16384):  # 4 MiB: many partial sends
        with serve(responder(lambda raw, stats: OK)) as (url, stats):
            result = run_engine(url, requests=6, method="POST", body=body)
        assert result.measurement.counts.requests_ok == 6 and result.measurement.counts.requests_failed == 0
        assert len(stats.requests) == 6 and stats.connections == 2
        assert all(raw.startswith(b"POST / HTTP/1.1\r\n") and raw.endswith(b"\r\n\r\n" + body)
                   and b"\r\nContent-Length: %d\r\n" % len(body) in raw for raw in stats.requests)


@pytest.mark.parametrize("kw", [{"connections": 5, "workers": 2}, {"connections": 3, "rate_rps": 2000.0}],
                         ids=["closed-two-workers", "open"])
def test_a_request_count_is_exact(kw: dict[str, Any]) -> None:
    with serve(responder(lambda raw, stats: OK)) as (url, stats):
        result = run_engine(url, requests=1001, **kw)
    counts = result.measurement.counts
    assert counts.requests_total == counts.requests_ok == 1001 == len(stats.requests)
    assert histogram.decode(result.measurement.histogram).get_total_count() == 1001
    assert sum(s.requests for s in result.measurement.series) == 1001
    assert result.measurement.transfer.received_bytes == 1001 * len(OK)
    assert counts.connections_opened == kw["connections"] == stats.connections


def test_a_timed_run_counts_what_it_sent() -> None:
    """Requests in flight at the stop are dropped uncounted (as wrk), but they were sent."""
    with serve(responder(lambda raw, stats: OK)) as (url, stats):
        result = run_engine(url, duration_s=0.5)
    counts = result.measurement.counts
    assert counts.requests_failed == 0 and counts.requests_total and counts.requests_total > 50
    size = len(request_bytes(EngineOptions(url=url + "/", connections=2), parse_url(url + "/")))
    sent = result.measurement.transfer.sent_bytes
    assert sent is not None and sent % size == 0
    assert counts.requests_total <= sent // size <= counts.requests_total + 2  # and the two in flight, at most
    assert counts.connections_opened == 2


def test_connects_that_hang_or_are_refused_are_counted() -> None:
    """A listener that never accepts: once its backlog is full, connects hang (SYNs dropped),
    before the start (each slot's first connection) and after it (a slot reopening one)."""
    listener = socket.create_server(("127.0.0.1", 0), backlog=0)
    with listener:
        result = run_engine(f"http://127.0.0.1:{listener.getsockname()[1]}", requests=6, timeout_s=0.5)
    counts = result.measurement.counts
    assert counts.requests_ok == 0 and counts.failures.timeout == 6 and result.outcome.status is Status.FAILED
    assert "connect_timeout=" in " ".join(result.all_notes)


def test_a_reopen_refused_is_counted() -> None:
    """The server closes its connection after 5 requests, and stops listening first: the
    slot's reconnects are refused, each counted as a failed request."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]

    def serve_then_vanish() -> None:
        conn, _ = listener.accept()
        with conn:
            buf = bytearray()
            for k in range(1, 6):
                if read_request(conn, buf) is None:
                    return
                if k == 5:
                    listener.close()  # before the answer: the reconnect that follows it is refused
                    conn.sendall(b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok")
                else:
                    conn.sendall(OK)

    thread = threading.Thread(target=serve_then_vanish, daemon=True)
    thread.start()
    result = run_engine(f"http://127.0.0.1:{port}", connections=1, requests=8)
    thread.join(timeout=10)
    counts = result.measurement.counts
    assert counts.requests_ok == 5 and counts.failures.connect == 3 and counts.requests_total == 8
    assert "connect_refused=3" in " ".join(result.all_notes)
    assert counts.connections_opened == 1


def dribbling(response: bytes, pause_s: float = 0.0002) -> Any:
    """Sends `response` a byte at a time (Nagle off, a pause between) for every request of a
    connection; after a body that only the close ends, closes."""
    def handle(sock: socket.socket, stats: Any) -> None:
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        buf = bytearray()
        while read_request(sock, buf) is not None:
            for k in range(len(response)):
                sock.sendall(response[k:k + 1])
                time.sleep(pause_s)
            if b"gzip" in response:
                return
    return handle


@pytest.mark.parametrize("response, ok, code, connections", [
    (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\nX-Trailer: t\r\n\r\n", True, 201, 2),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\nnot chunked: the close ends it", True, 200, 4),
    (b"HTTP/2.0 203 Whatever\r\nContent-Length: 4\r\n\r\nbody", True, 203, 4),  # read as 1.0: not kept
    (b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
     False, None, 4),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", False, None, 4),
], ids=["interim-chunked-trailer", "other-coding", "http2-line", "length-and-chunked", "bad-chunk"])
def test_framing_a_byte_at_a_time(response: bytes, ok: bool, code: int | None, connections: int) -> None:
    """Both paths frame a response as llhttp does however its bytes are split, and keep the
    connection when llhttp would: `connections` for 4 requests on 2 slots."""
    with serve(dribbling(response)) as (url, stats):
        result = run_engine(url, requests=4)
    counts = result.measurement.counts
    if ok:
        assert counts.requests_ok == 4 and counts.status_codes == {code: 4}
    else:
        assert counts.requests_ok == 0 and counts.failures.other == 4, counts
    assert counts.connections_opened == connections == stats.connections
