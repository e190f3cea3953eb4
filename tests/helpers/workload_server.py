"""A small real HTTP/1.1 server with the bundled workload target's endpoints (POST /login with a
user's JSON returns a token, GET /api/search with `Authorization: Bearer <token>`, POST
/api/items, GET /page), which counts what it served: the workload tests of the Locust and JMeter
adapters run against it (bound to 127.0.0.1, in a thread of the test's own process)."""
from __future__ import annotations

import collections
import contextlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator
from urllib.parse import parse_qs, urlsplit

USERS = {"alice": "a-pass", "bob": "b-pass", "carol": "c-pass"}


class Served:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: collections.Counter[tuple[str, str, int]] = collections.Counter()  # method, path, status
        self.logins: collections.Counter[str] = collections.Counter()  # user names that logged in
        self.terms: collections.Counter[str] = collections.Counter()  # q of authorised searches
        self.tokens: dict[str, str] = {}  # token -> user

    def count(self, method: str, path: str, status: int) -> None:
        with self.lock:
            self.requests[(method, path, status)] += 1

    def by_path(self, method: str, path: str) -> int:
        return sum(n for (m, p, _), n in self.requests.items() if (m, p) == (method, path))


def _handler(served: Served) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are two writes: no delayed-ACK stall between them

        def log_message(self, *args: object) -> None:  # quiet
            pass

        def _reply(self, status: int, body: bytes, kind: str = "application/json") -> None:
            path = urlsplit(self.path).path
            served.count(self.command, path, status)
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _body(self) -> bytes:
            return self.rfile.read(int(self.headers.get("Content-Length") or 0))

        def do_POST(self) -> None:
            path = urlsplit(self.path).path
            body = self._body()
            if path == "/login":
                try:
                    given = json.loads(body)
                except ValueError:
                    given = {}
                user = given.get("user") if isinstance(given, dict) else None
                if user in USERS and given.get("password") == USERS[user]:
                    token = f"t{len(served.tokens)}x{user}"
                    with served.lock:
                        served.tokens[token] = user
                        served.logins[user] += 1
                    return self._reply(200, json.dumps({"token": token}).encode())
                return self._reply(401, b'{"error": "bad credentials"}')
            if path == "/api/items":
                return self._reply(201, json.dumps({"id": len(body)}).encode())
            return self._reply(404, b"{}")

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            if url.path == "/page":
                return self._reply(200, b"<html><body>" + b"x" * 2000 + b"</body></html>", "text/html")
            if url.path == "/api/search":
                auth = self.headers.get("Authorization", "")
                if not auth.startswith("Bearer ") or auth[7:] not in served.tokens:
                    return self._reply(401, b'{"error": "no token"}')
                q = parse_qs(url.query).get("q", [""])[0]
                with served.lock:
                    served.terms[q] += 1
                return self._reply(200, json.dumps({"q": q, "count": 3, "results": [1, 2, 3]}).encode())
            return self._reply(404, b"{}")

    return Handler


@contextlib.contextmanager
def workload_server() -> Iterator[tuple[str, Served]]:
    """The server's base URL (http://127.0.0.1:PORT) and what it served, until the block ends."""
    served = Served()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", served
    finally:
        server.shutdown()
        server.server_close()
