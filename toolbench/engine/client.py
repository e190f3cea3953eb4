"""HTTP/1.1 over raw asyncio protocols: the per-request hot path of one worker.

A `Slot` is one virtual user (one of the -c connections); it owns at most one
`Conn` (a TCP connection) at a time and, in the open model, its send schedule.
In the closed model with keep-alive, the next request is written straight from
the parser's message-complete callback: no Future, task, timer or allocation
per request, one clock read per received chunk. Every other case (keep-alive
off, the open model, a failure, the end of the budget) takes the slower path
through the Slot."""
from __future__ import annotations

import asyncio
import time
from typing import TYPE_CHECKING

from httptools import HttpParserError, HttpResponseParser

from toolbench.engine.options import EngineOptions, Target
from toolbench.engine.stats import Recorder

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop, Transport

clock = time.perf_counter_ns  # CLOCK_MONOTONIC: comparable across the worker processes

# Budget of a run that stops on time rather than on a request count.
UNLIMITED = 1 << 62


class _Unsolicited(Exception):
    """A response arrived while no request was in flight."""


class Load:
    """One worker's share of the run: its slots, live connections and stop rule."""

    def __init__(self, loop: "AbstractEventLoop", opts: EngineOptions, target: Target, request: bytes,
                 rec: Recorder, slots: int, first_slot: int, total_slots: int) -> None:
        self.loop = loop
        self.target = target
        self.request = request
        self.rec = rec
        self.keepalive = opts.keepalive
        self.head = opts.method == "HEAD"
        self.open = opts.open_model
        self.timeout_ns = int(opts.timeout_s * 1e9)
        self.connect_timeout_s = opts.connect_timeout
        self.budget = UNLIMITED  # requests this worker may still start
        self.conns: set[Conn] = set()
        self.stopped = False
        self.idle = 0
        self.finished: asyncio.Future[None] = loop.create_future()
        self.last_done_ns = 0
        self.window_budget = self.final_budget = UNLIMITED  # for the count of requests sent
        interval = int(total_slots / opts.rate_rps * 1e9) if opts.rate_rps else 0
        spacing = int(1e9 / opts.rate_rps) if opts.rate_rps else 0
        self.slots = [Slot(self, interval, (first_slot + i) * spacing) for i in range(slots)]

    async def prepare(self) -> tuple[int, str | None]:
        """Opens the keep-alive connections before the clock starts (as wrk does), or one
        probe connection without keep-alive. Returns how many opened and the first error."""
        slots = self.slots if self.keepalive else self.slots[:1]
        outcomes = await asyncio.gather(*(slot.open_idle() for slot in slots))
        errors = [e for e in outcomes if e is not None]
        return len(outcomes) - len(errors), (errors[0] if errors else None)

    def start(self, t0_ns: int) -> None:
        for slot in self.slots:
            slot.begin(t0_ns)

    def window_starts(self, budget: int | None) -> None:
        """The warm-up is over: forget it, and give a request count its budget."""
        self.rec.reset()
        for conn in self.conns:
            conn.rx = conn.ttfb = conn.responses = 0
        if budget is not None:
            in_flight = sum(1 for conn in self.conns if conn.busy)
            self.budget = max(0, budget - in_flight)
        self.window_budget = self.budget

    def issued(self) -> int:
        """Requests started since the window opened."""
        return self.window_budget - (self.budget if not self.stopped else self.final_budget)

    def sweep(self) -> None:
        """Times out requests without a timer per request: one pass over the connections."""
        limit = clock() - self.timeout_ns
        for conn in [c for c in self.conns if c.busy and c.t_sent < limit]:
            conn.fail("timeout")

    def slot_idle(self) -> None:
        self.idle += 1
        if self.idle >= len(self.slots):
            self.stop()

    def stop(self) -> None:
        """Ends the run now: requests in flight are dropped uncounted, as wrk does."""
        if self.stopped:
            return
        self.stopped = True
        self.final_budget = self.budget
        self.budget = 0
        for slot in self.slots:
            slot.cancel()
        for conn in list(self.conns):
            conn.busy = False
            if conn.transport is not None:
                conn.transport.abort()
        if not self.finished.done():
            self.finished.set_result(None)

    def totals(self) -> tuple[int, int, int]:
        """Bytes received, summed time to first byte and responses of the live connections."""
        conns = self.conns
        return (sum(c.rx for c in conns), sum(c.ttfb for c in conns), sum(c.responses for c in conns))


class Slot:
    __slots__ = ("load", "conn", "interval", "phase", "intended", "timer", "task")

    def __init__(self, load: Load, interval: int, phase: int) -> None:
        self.load = load
        self.conn: Conn | None = None
        self.interval = interval  # open model: ns between this slot's intended sends
        self.phase = phase
        self.intended = 0
        self.timer: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[None] | None = None

    async def open_idle(self) -> str | None:
        load = self.load
        started = clock()
        try:
            _, conn = await asyncio.wait_for(
                load.loop.create_connection(self._new_conn, load.target.address, load.target.port),
                load.connect_timeout_s)
        except (OSError, asyncio.TimeoutError) as exc:
            return _connect_error(exc, load.target)
        if load.keepalive:
            load.rec.connected(clock() - started)
            self.conn = conn
        else:
            conn.transport.close()  # only a probe: keep-alive off opens one per request
        return None

    def _new_conn(self) -> "Conn":
        return HeadConn(self) if self.load.head else Conn(self)

    def begin(self, t0_ns: int) -> None:
        if self.load.open:
            self.intended = t0_ns + self.phase
            self._at(self.intended, clock())
        else:
            self.issue(t0_ns)

    def _at(self, intended: int, now: int) -> None:
        if intended <= now:
            self.issue(intended)
        else:
            self.timer = self.load.loop.call_later((intended - now) / 1e9, self.issue, intended)

    def issue(self, scheduled: int) -> None:
        """Starts one request; `scheduled` is when it was meant to start."""
        self.timer = None
        load = self.load
        if load.budget <= 0:
            if not load.stopped:
                load.slot_idle()
            return
        load.budget -= 1
        self.intended = scheduled
        conn = self.conn
        if conn is not None and conn.transport is not None and not conn.transport.is_closing():
            now = clock()
            conn.send(scheduled if load.open else now, now, now)
        else:
            self.conn = None
            self.task = load.loop.create_task(self._connect_and_send(scheduled))

    async def _connect_and_send(self, scheduled: int) -> None:
        load = self.load
        started = clock()
        try:
            _, conn = await asyncio.wait_for(
                load.loop.create_connection(self._new_conn, load.target.address, load.target.port),
                load.connect_timeout_s)
        except asyncio.CancelledError:
            return
        except (OSError, asyncio.TimeoutError) as exc:
            if not load.stopped:
                load.rec.fail(_connect_kind(exc))
                self.done(None, clock())
            return
        finally:
            self.task = None
        now = clock()
        load.rec.connected(now - started)
        if load.stopped:
            conn.transport.abort()
            return
        self.conn = conn
        # Closed model: the request began when the slot wanted it, connect included (as ab counts).
        conn.send(scheduled if load.open else started, started, now)

    def done(self, conn: "Conn | None", now: int, reusable: bool = False) -> None:
        """The request ended (answered or failed): drop the connection unless it can go on,
        then start the next request now (closed model) or at its intended time (open)."""
        load = self.load
        if load.stopped:
            return
        if conn is not None and not (reusable and load.keepalive):
            if conn.transport is not None:
                conn.transport.close()
            self.conn = None
        if load.open:
            self.intended += self.interval
            self._at(self.intended, now)
        else:
            self.issue(now)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if self.task is not None:
            self.task.cancel()


class Conn(asyncio.Protocol):
    __slots__ = ("slot", "load", "parser", "transport", "request", "lat", "ulat", "codes", "fast",
                 "busy", "t_sched", "t_start", "t_sent", "t_first", "now", "first", "rx", "ttfb",
                 "responses")

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
        self.fast = load.keepalive and not load.open
        self.busy = False
        self.t_sched = self.t_start = self.t_sent = self.t_first = self.now = 0
        self.first = b""  # the first chunk of the response in flight, for a close-delimited body
        self.rx = self.ttfb = self.responses = 0

    def connection_made(self, transport: "asyncio.BaseTransport") -> None:
        self.transport = transport  # type: ignore[assignment]
        self.load.conns.add(self)

    def send(self, scheduled: int, started: int, now: int) -> None:
        self.t_sched = scheduled  # latency origin: intended time (open) or start (closed)
        self.t_start = started  # actual start, connect included: the uncorrected origin
        self.t_sent = now  # time-to-first-byte origin
        self.busy = True
        assert self.transport is not None
        self.transport.write(self.request)

    def data_received(self, data: bytes) -> None:
        now = clock()
        self.now = now
        if not self.t_first:
            self.t_first = now
            self.first = data
        self.rx += len(data)
        try:
            self.parser.feed_data(data)
        except HttpParserError:
            self.fail("malformed")

    def on_message_complete(self) -> None:
        code = self.parser.get_status_code()
        if code < 200 or not self.busy:
            if not self.busy:
                raise _Unsolicited()  # surfaces from feed_data as a parser error: malformed
            return  # an interim 1xx response: the real one follows
        now = self.now
        self.codes[code] += 1
        self.lat(now - self.t_sched)
        self.ttfb += self.t_first - self.t_sent
        self.responses += 1
        self.t_first = 0
        load = self.load
        if self.fast and load.budget > 0 and self.parser.should_keep_alive():
            load.budget -= 1
            self.t_sched = self.t_sent = now
            self.transport.write(self.request)  # type: ignore[union-attr]
            return
        self.busy = False
        load.last_done_ns = now
        if self.ulat is not None:
            self.ulat(now - self.t_start)
        self.slot.done(self, now, self.parser.should_keep_alive())

    def fail(self, kind: str) -> None:
        """The request in flight failed: count it, drop the connection, go on."""
        if self.transport is not None:
            self.transport.abort()
        if not self.busy:
            return
        self.busy = False
        self.t_first = 0
        load = self.load
        load.rec.fail(kind)
        load.last_done_ns = clock()
        self.slot.done(self, load.last_done_ns)

    def connection_lost(self, exc: Exception | None) -> None:
        load = self.load
        load.conns.discard(self)
        rec = load.rec
        rec.received_bytes += self.rx
        rec.ttfb_sum_ns += self.ttfb
        rec.ttfb_count += self.responses
        self.rx = self.ttfb = self.responses = 0
        if self.slot.conn is self:
            self.slot.conn = None
        if not self.busy:
            return
        if exc is None and self.t_first and _ends_at_close(self.first, self.parser):
            self.now = clock()
            self.on_message_complete()  # a body delimited by the close is complete now
            return
        self.fail("reset" if isinstance(exc, ConnectionResetError) else "closed")


class HeadConn(Conn):
    """A response to HEAD announces a body it does not send: complete at its headers,
    with a fresh parser for the next response."""

    __slots__ = ()

    def on_headers_complete(self) -> None:
        self.on_message_complete()
        self.parser = HttpResponseParser(self)


def _ends_at_close(first: bytes, parser: HttpResponseParser) -> bool:
    """Whether the response in flight has a body that only the close ends (neither a
    length nor chunked): then the close completes it rather than cutting it short."""
    head, sep, _ = first.partition(b"\r\n\r\n")
    if not sep or parser.get_status_code() < 200:
        return False
    head = head.lower()
    return b"\ncontent-length:" not in head and b"\ntransfer-encoding:" not in head


def _connect_kind(exc: BaseException) -> str:
    if isinstance(exc, ConnectionRefusedError):
        return "connect_refused"
    if isinstance(exc, asyncio.TimeoutError):
        return "connect_timeout"
    return "connect_other"


def _connect_error(exc: BaseException, target: Target) -> str:
    where = f"{target.address}:{target.port}"
    if isinstance(exc, asyncio.TimeoutError):
        return f"cannot connect to {where}: no answer within the connect timeout"
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return f"cannot connect to {where}: {reason}"
