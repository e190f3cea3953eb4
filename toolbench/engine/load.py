"""One worker's share of the run: its virtual users (slots), their schedule in the
open model, the request budget, timeouts and the stop. The per-request work is in
client.py; this is what happens between requests and around connections."""
from __future__ import annotations

import asyncio
import ssl
from typing import TYPE_CHECKING

from toolbench.engine.churn import Fresh
from toolbench.engine.churn_native import NativeKeepAlive, make_churn
from toolbench.engine.client import UNLIMITED, Conn, HeadConn, clock
from toolbench.engine.options import EngineOptions, Target
from toolbench.engine.recorder import DRAIN_AT, LATE_NS, Recorder
from toolbench.engine.tls import TLS_KIND, ClientContext, client_context, count_handshake, handshake_error, keep_session

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop


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
        self.counted = opts.requests is not None  # stops on a request count, not on time
        self.coalesce_ns = round(opts.coalesce_s * 1e9)  # the C keep-alive core's (options.DEFAULT_COALESCE_S)
        self.timeout_ns = int(opts.timeout_s * 1e9)
        self.connect_timeout_s = opts.connect_timeout
        self.budget = UNLIMITED  # requests this worker may still start
        self.conns: set[Conn] = set()
        self.stopped = False
        self.idle = 0
        self.finished: asyncio.Future[None] = loop.create_future()
        self.last_done_ns = 0
        self.crashed: str | None = None
        self.stalls = 0  # consecutive sweeps that found a stalled slot
        self.started = False
        self.stopped_at = 0
        self.window_budget = self.final_budget = UNLIMITED  # for the count of requests sent
        self.window_ns = UNLIMITED  # when the measured window began
        # https: the worker's TLS context (tls.py), and what create_connection is given for it.
        self.tls: ClientContext | None = client_context(opts) if target.tls else None
        self.tls_resume = opts.tls_resume
        self.tls_args = {"ssl": self.tls, "server_hostname": target.hostname} if self.tls is not None else {}
        # Keep-alive off: a connection per request, on the C path (churn_native.py) or churn.py's;
        # on: the C path's persistent connections, or None where client.py's Conn carries them.
        self.churn = make_churn(self, slots)
        interval = int(total_slots / opts.rate_rps * 1e9) if opts.rate_rps else 0
        spacing = int(1e9 / opts.rate_rps) if opts.rate_rps else 0
        self.slots = [Slot(self, interval, (first_slot + i) * spacing) for i in range(slots)]

    async def prepare(self) -> tuple[int, str | None]:
        """Opens the keep-alive connections before the clock starts (as wrk does), or one
        probe connection without keep-alive. Returns how many opened and the first error."""
        if self.keepalive and self.churn is not None:  # the C path opens its own (NativeKeepAlive)
            return await self.churn.prepare()  # type: ignore[union-attr]
        slots = self.slots if self.keepalive else self.slots[:1]
        outcomes = await asyncio.gather(*(slot.open_idle() for slot in slots))
        errors = [e for e in outcomes if e is not None]
        return len(outcomes) - len(errors), (errors[0] if errors else None)

    def start(self, t0_ns: int) -> None:
        self.started = True
        for slot in self.slots:
            slot.begin(t0_ns)

    def window_starts(self, budget: int | None) -> None:
        """The warm-up is over: forget it, and give a request count its budget."""
        self.rec.reset()
        self.window_ns = clock()
        for conn in self.conns:
            conn.rx = conn.gap = 0
        in_flight = sum(1 for conn in self.conns if conn.busy)
        if self.churn is not None:
            in_flight += self.churn.window_starts()
        if budget is not None:
            self.budget = max(0, budget - in_flight)
        self.window_budget = self.budget

    def hold(self, until_ns: int, wake_fd: int) -> None:
        """The loop's next timer: the C keep-alive core may hold the loop until then
        (NativeKeepAlive.hold); the other paths hand it back after every callback."""
        if isinstance(self.churn, NativeKeepAlive):
            self.churn.hold(until_ns, wake_fd)

    def issued(self) -> int:
        """Requests started since the window opened."""
        return self.window_budget - (self.budget if not self.stopped else self.final_budget)

    def sweep(self) -> None:
        """Times out connects and requests without a timer for each: one pass over all."""
        now = clock()
        limit = now - self.timeout_ns
        connect_limit = now - int(self.connect_timeout_s * 1e9)
        for slot in self.slots:
            if slot.task is not None and 0 < slot.connecting < connect_limit and not slot.expired:
                slot.expired = True
                slot.task.cancel()
        for conn in [c for c in self.conns if c.busy and c.t_sent < limit]:
            conn.fail("timeout")
        if self.churn is not None:
            self.churn.sweep(limit, connect_limit)
        self._check_progress()

    def _check_progress(self) -> None:
        """Every slot that is not done waits on something: a request, a connect or a timer.
        One that waits on nothing would never end a run by request count: stop instead."""
        if self.stopped or not self.started:
            return
        stalled = sum(1 for s in self.slots if not s.finished and s.task is None and s.timer is None
                      and not (s.conn is not None and s.conn.busy)
                      and (s.fresh is None or self.churn is None or self.churn.idle(s.fresh)))
        self.stalls = self.stalls + 1 if stalled else 0
        if self.stalls >= 2:
            self.crash(f"{stalled} connection(s) stalled with nothing in flight; stopped")

    def crash(self, message: str) -> None:
        """Something unexpected: stop, and say what (the parent reports it)."""
        if self.crashed is None:
            self.crashed = message
        self.stop()

    def slot_idle(self) -> None:
        self.idle += 1
        if self.idle >= len(self.slots):
            self.stop()

    def stop(self) -> None:
        """Ends the run now: requests in flight are dropped uncounted, as wrk does."""
        if self.stopped:
            return
        self.stopped = True
        self.stopped_at = clock()
        self.final_budget = self.budget
        self.budget = 0
        for slot in self.slots:
            slot.cancel()
        for conn in list(self.conns):
            conn.busy = False
            if conn.transport is not None:
                conn.transport.abort()
        if self.churn is not None:
            self.churn.stop()
        if not self.finished.done():
            self.finished.set_result(None)

    def totals(self) -> tuple[int, int, int]:
        """Bytes received, the summed latency that was not waiting for the first byte, and
        how many of those open since the window began received nothing in it, of the live connections."""
        conns = self.conns
        return (sum(c.rx for c in conns), sum(c.gap for c in conns),
                sum(1 for c in conns if not c.rx and c.opened < self.window_ns))


class Slot:
    __slots__ = ("load", "conn", "fresh", "interval", "phase", "intended", "timer", "task", "connecting",
                 "expired", "finished", "origin", "sent")

    def __init__(self, load: Load, interval: int, phase: int) -> None:
        self.load = load
        self.conn: Conn | None = None
        self.fresh: Fresh | int | None = load.churn.fresh(self) if load.churn is not None else None
        self.interval = interval  # open model: ns between this slot's intended sends
        self.phase = phase
        self.intended = 0
        self.timer: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[None] | None = None
        self.connecting = 0  # when the connect in progress began
        self.expired = False  # the sweep cancelled that connect: it timed out
        self.finished = False  # no budget left for this slot
        # Open model: the k-th send is due at origin + k × interval, in order; `sent` of them went out.
        self.origin = 0
        self.sent = 0

    async def open_idle(self) -> str | None:
        load = self.load
        started = clock()
        try:
            _, conn = await asyncio.wait_for(
                load.loop.create_connection(self._new_conn, load.target.address, load.target.port,
                                            **load.tls_args),
                load.connect_timeout_s)
        except (OSError, asyncio.TimeoutError) as exc:
            return _connect_error(exc, load.target, load.connect_timeout_s)
        if load.keepalive:
            load.rec.connected(clock() - started)
            if load.tls is not None:
                count_handshake(load.rec, conn.transport)
            self.conn = conn
        elif conn.transport is not None:
            conn.transport.close()  # only a probe: keep-alive off opens one per request
        return None

    def _new_conn(self) -> "Conn":
        return HeadConn(self) if self.load.head else Conn(self)

    def begin(self, t0_ns: int) -> None:
        if self.load.open:
            self.intended = self.origin = t0_ns + self.phase
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
            if not load.stopped and not self.finished:
                self.finished = True
                load.slot_idle()
            return
        load.budget -= 1
        self.intended = scheduled
        if load.open:
            self.sent += 1
            lag = clock() - scheduled
            if lag > LATE_NS:
                load.rec.lagged(lag)
        fresh = self.fresh
        if fresh is not None:  # keep-alive off
            load.churn.send(fresh, scheduled)  # type: ignore[union-attr,arg-type]
            return
        conn = self.conn
        if conn is not None and conn.transport is not None and not conn.transport.is_closing():
            now = clock()
            # A timer may fire a little early (libuv's are in whole ms): then the request
            # began when it was actually sent, never later.
            conn.send(min(scheduled, now) if load.open else now, now, now)
        else:
            self.conn = None
            self.task = load.loop.create_task(self._connect_and_send(scheduled))

    async def _connect_and_send(self, scheduled: int) -> None:
        """Opens a connection for one request. No wait_for (a task and a timer more per
        connection): Load.sweep cancels a connect that takes too long."""
        load = self.load
        started = self.connecting = clock()
        conn: Conn | None = None
        failure: str | None = None
        try:
            _, conn = await load.loop.create_connection(self._new_conn, load.target.address,
                                                        load.target.port, **load.tls_args)
        except asyncio.CancelledError:
            failure = "connect_timeout" if self.expired else "stopped"
        except OSError as exc:
            failure = _connect_kind(exc)
        # Clear the connect's state before anything below starts the slot's next one.
        self.task = None
        self.connecting = 0
        self.expired = False
        try:
            if failure is None and conn is not None:
                self._send_on(conn, scheduled, started)
            elif failure != "stopped" and not load.stopped:
                self._connect_failed(failure or "connect_other")
        except Exception as exc:  # a bug must end the run with a message, never stall a slot
            load.crash(f"{type(exc).__name__}: {exc}")

    def _connect_failed(self, kind: str) -> None:
        self.load.rec.fail(kind)
        self.done(None, clock())

    def _send_on(self, conn: "Conn", scheduled: int, started: int) -> None:
        load = self.load
        now = clock()
        load.rec.connected(now - started)
        if load.tls is not None:
            count_handshake(load.rec, conn.transport)
        if load.stopped:
            conn.transport.abort()  # type: ignore[union-attr]
            return
        if conn.transport is None or conn.transport.is_closing():
            # The server spoke first (not HTTP) or hung up before the request went out.
            load.rec.fail(conn.broken or "closed")
            self.done(None, now)
            return
        self.conn = conn
        # Closed model: the request began when the slot wanted it, connect included (as ab counts).
        conn.send(min(scheduled, started) if load.open else started, started, now)

    def done(self, conn: "Conn | None", now: int, reusable: bool = False) -> None:
        """The request ended (answered or failed): drop the connection unless it can go on,
        then start the next request now (closed model) or at its intended time (open)."""
        load = self.load
        if load.stopped:
            return
        if conn is not None and not (reusable and load.keepalive):
            if conn.transport is not None:
                if load.tls is not None and load.tls_resume:
                    keep_session(load.tls, conn.transport)  # for the connection that replaces it
                conn.transport.close()
            self.conn = None
        if load.open:
            if len(load.rec.lat) >= DRAIN_AT:
                load.rec.drain()  # a little at a time, not a second's worth at the tick
            self.intended += self.interval
            self._at(self.intended, now)
        else:
            self.issue(now)

    def due(self, start: int, end: int) -> tuple[int, int]:
        """Open model: how many of this slot's sends were due in [start, end), and how many
        of those went out (its sends go out in the order they are due)."""
        if not self.interval or not self.origin or end <= start:
            return 0, 0
        first = max(0, -(-(start - self.origin) // self.interval))  # the first due at or after start
        past = max(0, -(-(end - self.origin) // self.interval))  # the first due at or after end
        return past - first, max(0, min(past, self.sent) - first)

    def failed(self, kind: str) -> None:
        """The request failed on a keep-alive-off connection: count it, and go on from now."""
        load = self.load
        load.rec.fail(kind)
        load.last_done_ns = clock()
        self.done(None, load.last_done_ns)

    def cancel(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
        if self.task is not None:
            self.task.cancel()


def _connect_kind(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return TLS_KIND
    if isinstance(exc, ConnectionRefusedError):
        return "connect_refused"
    if isinstance(exc, asyncio.TimeoutError):
        return "connect_timeout"
    return "connect_other"


def _connect_error(exc: BaseException, target: Target, timeout_s: float) -> str:
    where = f"{target.address}:{target.port}"
    if isinstance(exc, ssl.SSLError):
        return handshake_error(exc, where)
    if isinstance(exc, asyncio.TimeoutError):
        return f"connect timeout: {where} accepted no connection within {timeout_s:g}s"
    reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return f"cannot connect to {where}: {reason}"
