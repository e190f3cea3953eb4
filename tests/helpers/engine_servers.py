"""Small misbehaving HTTP servers for the engine's tests: real sockets on 127.0.0.1,
one thread per connection, each started and stopped by a context manager."""
from __future__ import annotations

import contextlib
import socket
import socketserver
import sys
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from toolbench.engine import coordinator
from toolbench.engine.options import EngineOptions
from toolbench.engine.result import run_result
from toolbench.record.schema import RunResult

Handler = Callable[[socket.socket, "Stats"], None]

OK = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"


@dataclass
class Stats:
    """What the server saw, for the tests to check against what the engine says."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    connections: int = 0
    requests_per_connection: list[int] = field(default_factory=list)
    requests: list[bytes] = field(default_factory=list)
    first_request_at: float | None = None

    def saw_request(self, conn_index: int, raw: bytes) -> None:
        with self.lock:
            self.requests_per_connection[conn_index] += 1
            self.requests.append(raw)
            if self.first_request_at is None:
                self.first_request_at = time.monotonic()


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    block_on_close = False  # a handler stuck on purpose must not hold up the test
    allow_reuse_address = True
    request_queue_size = 1024


@contextlib.contextmanager
def serve(handler: Handler) -> Iterator[tuple[str, Stats]]:
    """Runs `handler(sock, stats)` for every connection; yields (base URL, stats)."""
    stats = Stats()

    class _Handle(socketserver.BaseRequestHandler):
        def handle(self) -> None:
            with stats.lock:
                stats.connections += 1
                stats.requests_per_connection.append(0)
            try:
                handler(self.request, stats)
            except OSError:
                pass  # the engine hung up: that is its right

    server = _Server(("127.0.0.1", 0), _Handle)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", stats
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def read_request(sock: socket.socket, buf: bytearray) -> bytes | None:
    """One request (head and Content-Length body) from the connection, or None at EOF."""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    end = buf.index(b"\r\n\r\n") + 4
    length = 0
    for line in bytes(buf[:end]).split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":", 1)[1])
    while len(buf) < end + length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    raw = bytes(buf[:end + length])
    del buf[:end + length]
    return raw


def responder(respond: Callable[[bytes, Stats], bytes | None], keepalive: bool = True) -> Handler:
    """A handler that answers each request with respond(request, stats); None hangs up."""

    def handle(sock: socket.socket, stats: Stats) -> None:
        with stats.lock:
            index = stats.connections - 1
        buf = bytearray()
        while True:
            raw = read_request(sock, buf)
            if raw is None:
                return
            stats.saw_request(index, raw)
            answer = respond(raw, stats)
            if answer is None:
                return
            sock.sendall(answer)
            if not keepalive or b"connection: close" in raw.lower():
                return

    return handle


def delayed(delay_s: float) -> Handler:
    """Every response after exactly `delay_s` (time.sleep: sub-millisecond precision)."""
    def respond(raw: bytes, stats: Stats) -> bytes:
        time.sleep(delay_s)
        return OK
    return responder(respond)


def stalling(after_s: float, stall_s: float) -> Handler:
    """Answers at once, except that every request arriving in the window
    [first request + after_s, + stall_s] waits until the window ends."""
    def respond(raw: bytes, stats: Stats) -> bytes:
        assert stats.first_request_at is not None
        start = stats.first_request_at + after_s
        now = time.monotonic()
        if start <= now < start + stall_s:
            time.sleep(start + stall_s - now)
        return OK
    return responder(respond)


def garbage(sock: socket.socket, stats: Stats) -> None:
    """Not HTTP at all: a banner of another protocol, then more noise per request."""
    sock.sendall(b"SSH-2.0-OpenSSH_9.0\r\n")
    read_request(sock, bytearray())
    sock.sendall(b"\x00\x01\x02 protocol mismatch\r\n")


def cut_short(sock: socket.socket, stats: Stats) -> None:
    """Promises 1000 bytes, sends 10, closes."""
    if read_request(sock, bytearray()) is not None:
        sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789")


def silent(sock: socket.socket, stats: Stats) -> None:
    """Reads the request and never answers (until the engine gives up)."""
    read_request(sock, bytearray())
    while sock.recv(65536):
        pass


def huge(size: int) -> Handler:
    """A `size`-byte body, sent in 1 MiB pieces, with keep-alive."""
    piece = b"x" * (1 << 20)

    def handle(sock: socket.socket, stats: Stats) -> None:
        buf = bytearray()
        while read_request(sock, buf) is not None:
            sock.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % size)
            left = size
            while left:
                n = min(left, len(piece))
                sock.sendall(piece[:n])
                left -= n
    return handle


def chunked(raw: bytes, stats: Stats) -> bytes:
    return (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            b"5\r\nHello\r\n8\r\n, World!\r\n0\r\n\r\n")


def close_delimited(sock: socket.socket, stats: Stats) -> None:
    """HTTP/1.0 style: no length, the close ends the body."""
    if read_request(sock, bytearray()) is not None:
        sock.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n\r\nbody until close")


def statuses(raw: bytes, stats: Stats) -> bytes:
    """404, 503 and 200 in turn."""
    with stats.lock:
        n = len(stats.requests)
    code = (b"404 Not Found", b"503 Service Unavailable", b"200 OK")[n % 3]
    return b"HTTP/1.1 " + code + b"\r\nContent-Length: 0\r\n\r\n"


def echo_head(raw: bytes, stats: Stats) -> bytes:
    """HEAD: a Content-Length announcing a body that a HEAD response never has."""
    return b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n"


def dribble(response: bytes, pause_s: float = 0.0002) -> Handler:
    """Sends `response` a byte at a time (Nagle off, a pause between), then closes:
    every split of a head, a length or a chunk that a reader can meet."""
    def handle(sock: socket.socket, stats: Stats) -> None:
        if read_request(sock, bytearray()) is None:
            return
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for k in range(len(response)):
            sock.sendall(response[k:k + 1])
            time.sleep(pause_s)
    return handle


ENGINE = [sys.executable, "-m", "toolbench.engine"]


def run_engine(url: str, **kw: Any) -> RunResult:
    opts = EngineOptions(url=url + "/", **{"connections": 2, "workers": 1, **kw})
    return run_result(coordinator.run(opts))
