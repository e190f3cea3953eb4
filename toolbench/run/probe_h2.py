"""One probe request over HTTP/2 (toolbench.run.probe): over TLS with ALPN `h2`, or in clear with
prior knowledge (h2c), on a fresh connection, through the pure-Python `h2` package of the [run]
extra. Without it, a cell in h2 or h2c has no probe (and says so): timing it over HTTP/1.1
instead would time another protocol, and an h2c port speaks nothing else."""
from __future__ import annotations

import socket
import ssl
from typing import Any, Mapping

try:  # at import, not in a timed request: the first probe request must not pay for loading it
    from h2.config import H2Configuration
    from h2.connection import H2Connection
    from h2.events import ConnectionTerminated, DataReceived, ResponseReceived, StreamEnded, StreamReset
    from h2.exceptions import H2Error
except ImportError:  # a cell in h2 or h2c then has no probe (toolbench.run.probe.ProbeTarget.unspoken)
    H2Connection = None  # type: ignore[assignment,misc]

MAX_READS = 100_000  # a probe's answer is a small page: bounds a server that streams forever
READ_SIZE = 65536
# Connection-specific headers HTTP/2 forbids (RFC 9113 8.2.2); `Host` becomes :authority.
_NOT_SENT = frozenset({"connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade", "host", "te"})


class H2Failure(Exception):
    """The exchange failed; the message says how, in a few words (toolbench.run.probe makes it a ProbeFailure)."""


def available() -> bool:
    return H2Connection is not None


class Exchange:
    """One request on one connection: `sock` is open while it runs, so that the probe's stop
    can abort it (as it aborts an http.client connection)."""

    def __init__(self, host: str, port: int, timeout_s: float, context: ssl.SSLContext | None) -> None:
        self.host, self.port, self.timeout_s, self.context = host, port, timeout_s, context
        self.sock: socket.socket | None = None

    def request(self, method: str, path: str, headers: Mapping[str, str], body: bytes | None) -> int:
        """The answer's status, once its whole body has arrived."""
        raw = socket.create_connection((self.host, self.port), timeout=self.timeout_s)
        self.sock = raw
        try:
            if self.context is not None:
                self.sock = self.context.wrap_socket(raw, server_hostname=self.host)
                if self.sock.selected_alpn_protocol() != "h2":
                    raise H2Failure(f"the server did not agree to HTTP/2 (ALPN {self.sock.selected_alpn_protocol()})")
            conn = H2Connection(config=H2Configuration(client_side=True, header_encoding="utf-8"))
            conn.initiate_connection()
            stream = conn.get_next_available_stream_id()
            conn.send_headers(stream, self._headers(method, path, headers, body), end_stream=not body)
            if body:
                conn.send_data(stream, body, end_stream=True)  # a probe's body fits the first window
            self.sock.sendall(conn.data_to_send())
            return self._answer(conn, stream)
        except H2Error as exc:
            raise H2Failure(f"HTTP/2: {exc or type(exc).__name__}") from None
        finally:
            self.sock.close()

    def _headers(self, method: str, path: str, headers: Mapping[str, str], body: bytes | None) -> list[tuple[str, str]]:
        given = {k.lower(): v for k, v in headers.items()}
        authority = given.get("host") or (self.host if self.port in (80, 443) else f"{self.host}:{self.port}")
        out = [(":method", method), (":scheme", "https" if self.context else "http"), (":authority", authority),
               (":path", path)]
        out += [(k, v) for k, v in given.items() if k not in _NOT_SENT]
        if body:
            out.append(("content-length", str(len(body))))
        return out

    def _answer(self, conn: Any, stream: int) -> int:
        assert self.sock is not None
        status = None
        for _ in range(MAX_READS):
            data = self.sock.recv(READ_SIZE)
            if not data:
                raise H2Failure("the server closed the connection")
            for event in conn.receive_data(data):
                if isinstance(event, ResponseReceived) and event.stream_id == stream:
                    status = dict(event.headers).get(":status")
                elif isinstance(event, DataReceived):
                    conn.acknowledge_received_data(event.flow_controlled_length, event.stream_id)
                elif isinstance(event, StreamReset) and event.stream_id == stream:
                    raise H2Failure(f"the server reset the stream (error {event.error_code})")
                elif isinstance(event, ConnectionTerminated):
                    raise H2Failure(f"the server ended the connection (error {event.error_code})")
                elif isinstance(event, StreamEnded) and event.stream_id == stream:
                    return _status(status)
            pending = conn.data_to_send()
            if pending:
                self.sock.sendall(pending)
        raise H2Failure("the answer did not end")


def _status(value: Any) -> int:
    text = value.decode("ascii", "replace") if isinstance(value, bytes) else str(value)
    if len(text) != 3 or not text.isdigit():
        raise H2Failure(f"no valid :status in the answer ({text[:20]!r})")
    return int(text)
