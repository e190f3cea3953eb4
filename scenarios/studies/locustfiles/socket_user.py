"""Study 001's raw-socket client as a Locust user: HTTP/1.1 written on a plain socket (one per
user, reopened when the server closes it or keep-alive is off), each request timed here and
reported through Locust's request event.

toolbench copies this file into the cell's folder as locustfile.py; the cell (path, headers,
timeout) is read from locust_params.json beside it."""
import json
import socket
import time
from pathlib import Path
from urllib.parse import urlsplit

from locust import User, constant, task

PARAMS = json.loads(Path(__file__).with_name("locust_params.json").read_text(encoding="utf-8"))


def _request_bytes(host: str) -> bytes:
    headers = {"Host": host, **PARAMS["headers"]}
    lines = [f"{PARAMS['method']} {PARAMS['path']} HTTP/1.1"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def _read_response(sock: socket.socket) -> tuple[int, int, bool]:
    """Status, body length and whether the server keeps the connection (Content-Length only)."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection mid-response")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    fields = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:])}
    length = int(fields.get("content-length", "0"))
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("the server closed the connection mid-body")
        body += chunk
    return status, length, fields.get("connection", "").lower() != "close"


class SocketUser(User):
    wait_time = constant(0)

    def on_start(self):
        split = urlsplit(self.host)
        self.address = (split.hostname, split.port or 80)
        self.payload = _request_bytes(split.netloc)
        self.sock = None

    @task
    def one_request(self):
        started = time.perf_counter()
        length, error = 0, None
        try:
            if self.sock is None:
                self.sock = socket.create_connection(self.address, timeout=float(PARAMS["timeout_s"]))
            self.sock.sendall(self.payload)
            status, length, keep = _read_response(self.sock)
            if status >= 400:
                error = Exception(f"HTTP {status}")
            if not keep:
                self._close()
        except Exception as exc:  # every failure is reported to Locust, not raised
            error = exc
            self._close()
        self.environment.events.request.fire(
            request_type=PARAMS["method"], name=PARAMS["path"],
            response_time=(time.perf_counter() - started) * 1000, response_length=length,
            exception=error, context={})

    def _close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def on_stop(self):
        self._close()
