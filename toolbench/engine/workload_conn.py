"""One connection of a workload's virtual user: a request written, its response read whole (the
body kept up to MAX_KEPT where a check or an extractor reads it), and a Future that ends with the
response or the kind of failure (engine.recorder.FAILURE_KINDS). The workload's path is this
simpler one, a Future per request, rather than client.py's callback-driven hot path, because every
request differs and its response decides what the user sends next."""
from __future__ import annotations

import asyncio
from dataclasses import dataclass

from httptools import HttpParserError, HttpResponseParser

from toolbench.engine.client import clock, ends_at_close, with_head

MAX_KEPT = 1 << 20  # bytes of a body kept for checks and extractors; the rest is only counted


@dataclass
class Response:
    status: int
    body: bytes  # what was kept of it
    body_bytes: int  # its whole length
    sent_ns: int
    first_ns: int  # its first byte
    done_ns: int
    keepalive: bool


class Failed(Exception):
    """The request got no (whole) response: `kind` is the engine's failure kind."""

    def __init__(self, kind: str) -> None:
        super().__init__(kind)
        self.kind = kind


class WorkloadConn(asyncio.Protocol):
    def __init__(self, loop: asyncio.AbstractEventLoop, on_bytes: "list[int]") -> None:
        self.loop = loop
        self.transport: asyncio.Transport | None = None
        self.parser = HttpResponseParser(self)
        self.waiter: asyncio.Future[Response] | None = None
        self.keep = False
        self.head_only = False  # a response to HEAD: whole at its headers, whatever length it announces
        self.body: list[bytes] = []
        self.kept = self.body_bytes = 0
        self.sent_ns = self.first_ns = 0
        self.head = b""
        self.received = on_bytes  # [bytes], shared with the load: what every connection received

    @property
    def usable(self) -> bool:
        return self.transport is not None and not self.transport.is_closing() and self.waiter is None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, data: bytes, keep_body: bool, head_only: bool = False) -> "asyncio.Future[Response]":
        assert self.transport is not None and self.waiter is None
        self.waiter = self.loop.create_future()
        self.keep = keep_body
        self.head_only = head_only
        self.body = []
        self.kept = self.body_bytes = self.first_ns = 0
        self.head = b""
        self.sent_ns = clock()
        self.transport.write(data)
        return self.waiter

    def data_received(self, data: bytes) -> None:
        now = clock()
        self.received[0] += len(data)
        if self.waiter is None:
            self.abort()  # a response nobody asked for: the connection is not usable
            return
        if not self.first_ns:
            self.first_ns = now
        self.head = with_head(self.head, data)
        try:
            self.parser.feed_data(data)
        except HttpParserError:
            self._fail("malformed")

    def on_body(self, chunk: bytes) -> None:
        self.body_bytes += len(chunk)
        if self.keep and self.kept < MAX_KEPT:
            piece = chunk[:MAX_KEPT - self.kept]
            self.body.append(piece)
            self.kept += len(piece)

    def on_headers_complete(self) -> None:
        if self.head_only and self.parser.get_status_code() >= 200:
            self.on_message_complete()
            self.parser = HttpResponseParser(self)  # the announced body never comes

    def on_message_complete(self) -> None:
        status = self.parser.get_status_code()
        if status < 200:
            return  # an interim response: the real one follows
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(Response(status, b"".join(self.body), self.body_bytes, self.sent_ns, self.first_ns,
                                       clock(), self.parser.should_keep_alive()))

    def connection_lost(self, exc: Exception | None) -> None:
        if self.waiter is not None:
            if exc is None and self.first_ns and ends_at_close(self.head, self.parser):
                self.on_message_complete()  # a body delimited by the close is whole now
            else:
                self._fail("reset" if isinstance(exc, ConnectionResetError) else "closed")
        self.transport = None

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def _fail(self, kind: str) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(Failed(kind))
        self.abort()
