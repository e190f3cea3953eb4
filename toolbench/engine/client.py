"""HTTP/1.1 over a raw asyncio protocol: the per-request hot path of one worker with
keep-alive where the C path (_churn_keepalive.c, churn_native.NativeKeepAlive) is not
built or TOOLBENCH_ENGINE_CHURN=python asks for this one; both run the same tests.

A `Conn` is one TCP connection of a slot (load.py). In the closed model with
keep-alive, the next request is written straight from the parser's
message-complete callback: no Future, task, timer or allocation per request, one
clock read per received chunk. Every other case (keep-alive off, the open model,
a request count, a failure) goes back to the slot, on a slower path."""
from __future__ import annotations

import asyncio
import re
import time
from typing import TYPE_CHECKING

from httptools import HttpParserError, HttpResponseParser

if TYPE_CHECKING:
    from asyncio import Transport

    from toolbench.engine.load import Slot

clock = time.perf_counter_ns  # CLOCK_MONOTONIC: comparable across the worker processes

# Budget of a run that stops on time rather than on a request count.
UNLIMITED = 1 << 62


class _Unsolicited(Exception):
    """A response arrived while no request was in flight."""


class Conn(asyncio.Protocol):
    __slots__ = ("slot", "load", "parser", "transport", "request", "lat", "ulat", "codes", "fast",
                 "busy", "t_sched", "t_start", "t_sent", "t_first", "now", "first", "rx", "gap",
                 "broken", "opened")

    def __init__(self, slot: Slot) -> None:
        load = slot.load
        self.slot = slot
        self.load = load
        self.parser = HttpResponseParser(self)
        self.transport: Transport | None = None
        self.request = load.request
        self.lat = load.rec.lat.append
        self.ulat = load.rec.ulat.append if load.rec.ulat is not None else None
        self.codes = load.rec.codes
        # The fast path: closed model, keep-alive, run by time (so no request budget to check).
        self.fast = load.keepalive and not load.open and not load.counted
        self.busy = False
        self.t_sched = self.t_start = self.t_sent = self.t_first = self.now = 0
        self.first = b""  # the first chunk of the response in flight, for a close-delimited body
        # Time to first byte is latency minus `gap`: the body's arrival after the first byte,
        # and the connect (or the open model's lag) before the send. Both are 0 on the fast
        # path for a response in one chunk, so the fast path does no TTFB arithmetic.
        self.rx = self.gap = 0
        self.broken: str | None = None  # why the connection was dropped while idle
        self.opened = clock()

    def connection_made(self, transport: "asyncio.BaseTransport") -> None:
        self.transport = transport  # type: ignore[assignment]
        self.load.conns.add(self)

    def send(self, scheduled: int, started: int, now: int) -> None:
        self.t_sched = scheduled  # latency origin: intended time (open) or start (closed)
        self.t_start = started  # actual start, connect included: the uncorrected origin
        self.t_sent = now  # time-to-first-byte origin
        self.gap += now - scheduled
        self.busy = True
        assert self.transport is not None
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = clock()
        self.now = now
        if not self.t_first:
            self.t_first = now
            self.first = data
        else:
            self.first = with_head(self.first, data)
        self.rx += len(data)
        try:
            self.parser.feed_data(data)
        except HttpParserError:
            self.broken = "malformed"
            self.fail("malformed")

    def on_message_complete(self) -> None:
        code = self.parser.get_status_code()
        if code != 200 or not self.busy:
            if not self.busy:
                raise _Unsolicited()  # surfaces from feed_data as a parser error: malformed
            if code < 200:
                return  # an interim 1xx response: the real one follows
            self.codes[code] += 1  # 200s are the responses not counted here
        now = self.now
        self.lat(now - self.t_sched)
        if self.t_first != now:
            self.gap += now - self.t_first
        self.t_first = 0
        if self.fast and self.parser.should_keep_alive():
            self.t_sched = self.t_sent = now
            self.load.budget -= 1  # unlimited here, but Load.issued() (the bytes sent) counts it
            self.transport.write(self.request)  # type: ignore[union-attr]
            return
        self.busy = False
        self.load.last_done_ns = now
        if self.ulat is not None:
            self.ulat(now - self.t_start)
        self.slot.done(self, now, self.parser.should_keep_alive())

    def fail(self, kind: str) -> None:
        """The request in flight failed: count it, drop the connection, go on."""
        self.t_first = 0
        if self.transport is not None:
            self.transport.abort()
        if not self.busy:
            return
        self.busy = False
        self.gap -= self.t_sent - self.t_sched  # no latency recorded: take back its connect
        load = self.load
        load.rec.fail(kind)
        load.last_done_ns = clock()
        self.slot.done(self, load.last_done_ns)

    def connection_lost(self, exc: Exception | None) -> None:
        load = self.load
        load.conns.discard(self)
        rec = load.rec
        if not self.rx and self.opened < load.window_ns:
            rec.silent_conns += 1  # open all through the window, and never answered in it
        rec.received_bytes += self.rx
        rec.gap_ns += self.gap
        self.rx = self.gap = 0
        if self.slot.conn is self:
            self.slot.conn = None
        if self.busy:
            if exc is None and self.t_first and ends_at_close(self.first, self.parser):
                self.now = clock()
                self.on_message_complete()  # a body delimited by the close is complete now
            else:
                self.fail("reset" if isinstance(exc, ConnectionResetError) else "closed")
        # Conn <-> parser and Conn <-> transport are reference cycles: break them, so that a
        # closed connection is freed at once rather than by the (slow) cyclic GC.
        self.parser = self.transport = None  # type: ignore[assignment]


class HeadConn(Conn):
    """A response to HEAD announces a body it does not send: complete at its headers,
    with a fresh parser for the next response."""

    __slots__ = ()

    def on_headers_complete(self) -> None:
        self.on_message_complete()
        self.parser = HttpResponseParser(self)


HEAD_KEPT = 1 << 16  # bytes of a response kept to find its head's end
_TRANSFER_ENCODING = re.compile(rb"\ntransfer-encoding:([^\r\n]*)")


def with_head(first: bytes, data: bytes) -> bytes:
    """The response's bytes kept so far (`first`), with the next read's `data` while the head
    is not whole yet: ends_at_close() reads a head split across reads whole."""
    return first + data if len(first) < HEAD_KEPT and b"\r\n\r\n" not in first else first


def ends_at_close(first: bytes, parser: HttpResponseParser) -> bool:
    """Whether the response in flight has a body that only the close ends (neither a
    length nor chunked): then the close completes it rather than cutting it short."""
    if parser.get_status_code() < 200:
        return False
    rest = first
    while True:  # past the interim (1xx) heads: the final one decides
        head, sep, rest = rest.partition(b"\r\n\r\n")
        if not sep:
            return False  # the final head is not whole: the close cut it short
        if head[9:10] != b"1":  # "HTTP/1.1 1xx"
            break
    head = head.lower()
    if b"\ncontent-length:" in head:
        return False
    # A coding other than chunked last: the close ends the body (RFC 9112 6.3, as llhttp reads it).
    codings = _TRANSFER_ENCODING.findall(head)
    return not codings or not codings[-1].rstrip().endswith(b"chunked")
