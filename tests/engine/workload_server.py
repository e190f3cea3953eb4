"""A small real HTTP server for the engine's workload tests (a thread per connection on 127.0.0.1,
tests/helpers/engine_servers.serve): the bundled workload app's endpoints in miniature, and a log
of every request it got, by connection, to check what the engine sent against.

  POST /login {"user", "password"}  200 {"token": "tok-<user>"} when password is "pw-<user>", else 401
  GET /api/search?q=...             200 {"q", "count": 3, "results"} with `Authorization: Bearer tok-...`, else 401
  POST /api/items                   201 {"id": N}
  GET /page                         200, an HTML page of 2,000 bytes
  GET /status/NNN                   that status, body "status NNN"
"""
from __future__ import annotations

import contextlib
import dataclasses
import json
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Iterator

from helpers.engine_servers import Stats, read_request, serve

PAGE = b"<html>" + b"x" * (2000 - len(b"<html></html>")) + b"</html>"


@dataclass(frozen=True)
class Seen:
    conn: int
    method: str
    path: str
    query: dict[str, str]
    headers: dict[str, str]  # lower-case names
    body: bytes
    at: float = 0.0  # time.monotonic() when it arrived


@dataclass
class Site:
    lock: threading.Lock = field(default_factory=threading.Lock)
    log: list[Seen] = field(default_factory=list)
    active: int = 0
    peak_active: int = 0
    items: int = 0

    def by_path(self, path: str) -> list[Seen]:
        with self.lock:
            return [s for s in self.log if s.path == path]

    def by_conn(self) -> dict[int, list[Seen]]:
        """What each connection carried, in order."""
        out: dict[int, list[Seen]] = {}
        with self.lock:
            for seen in self.log:
                out.setdefault(seen.conn, []).append(seen)
        return out

    def handle(self, sock: socket.socket, stats: Stats) -> None:
        with stats.lock:
            index = stats.connections - 1
        buf = bytearray()
        with self._open():
            while True:
                raw = read_request(sock, buf)
                if raw is None:
                    return
                seen = dataclasses.replace(_parse(index, raw), at=time.monotonic())
                with self.lock:
                    self.log.append(seen)
                answer = self._answer(seen)
                if seen.method == "HEAD":  # its head only, announcing the body's length
                    answer = answer[:answer.index(b"\r\n\r\n") + 4]
                sock.sendall(answer)
                if seen.headers.get("connection", "").lower() == "close":
                    return

    @contextlib.contextmanager
    def _open(self) -> Iterator[None]:
        with self.lock:
            self.active += 1
            self.peak_active = max(self.peak_active, self.active)
        try:
            yield
        finally:
            with self.lock:
                self.active -= 1

    def _answer(self, seen: Seen) -> bytes:
        if seen.method == "POST" and seen.path == "/login":
            try:
                given = json.loads(seen.body)
            except ValueError:
                given = {}
            user = str(given.get("user", ""))
            if user and given.get("password") == f"pw-{user}":
                return _response(200, json.dumps({"token": f"tok-{user}"}).encode())
            return _response(401, b'{"error": "bad login"}')
        if seen.path == "/api/search":
            if not seen.headers.get("authorization", "").startswith("Bearer tok-"):
                return _response(401, b'{"error": "no token"}')
            q = seen.query.get("q", "")
            return _response(200, json.dumps({"q": q, "count": 3, "results": [q + "1", q + "2", q + "3"]}).encode())
        if seen.method == "POST" and seen.path == "/api/items":
            with self.lock:
                self.items += 1
                number = self.items
            return _response(201, json.dumps({"id": number}).encode())
        if seen.path == "/page":
            return _response(200, PAGE, "text/html")
        if seen.path.startswith("/status/"):
            code = int(seen.path.rsplit("/", 1)[1])
            return _response(code, f"status {code}".encode(), "text/plain")
        return _response(404, b"not found", "text/plain")


def _parse(conn: int, raw: bytes) -> Seen:
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("utf-8").split("\r\n")
    method, target, _ = lines[0].split(" ", 2)
    parts = urllib.parse.urlsplit(target)
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return Seen(conn, method, parts.path, dict(urllib.parse.parse_qsl(parts.query)), headers, body)


def _response(code: int, body: bytes, kind: str = "application/json") -> bytes:
    return (f"HTTP/1.1 {code} X\r\nContent-Type: {kind}\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


@contextlib.contextmanager
def site() -> Iterator[tuple[str, Site]]:
    """The server running: yields its base URL and what it saw."""
    state = Site()
    with serve(state.handle) as (url, _stats):
        yield url, state
