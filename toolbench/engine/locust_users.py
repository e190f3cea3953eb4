"""The users of an engine Locust worker: each one connection in a closed loop, sending the
one request again as soon as its response is complete (or, with a throughput per user, as
Locust's constant_throughput would: no sooner than 1/R after the previous start).

The hot path appends the response time (ns) to an array and adds the body's length;
failures are counted by their Locust error text. Everything else happens once a second,
when the worker turns what was recorded into Locust's stats (locust_protocol.Entry)."""
from __future__ import annotations

import asyncio
import time
from array import array
from collections import Counter
from typing import TYPE_CHECKING

from httptools import HttpParserError, HttpResponseParser

from toolbench.engine.client import ends_at_close, with_head
from toolbench.engine.locust_protocol import VALID_CODES

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop, Transport

    from toolbench.engine.options import Target

clock = time.perf_counter_ns

# Error texts as Locust's FastHttpUser reports them (an exception's repr), so that the
# master's error report, and toolbench's reading of it, class them alike.
TIMEOUT = "TimeoutError('timed out')"
RESET = "ConnectionResetError(104, 'Connection reset by peer')"
CLOSED = "HTTPConnectionClosed('connection closed.')"
MALFORMED = "HTTPParseError('malformed response')"


def bad_status(code: int) -> str:
    return f"LocustBadStatusCode(code={code})"


class Users:
    """Every user of the worker, and what they recorded since the last take()."""

    def __init__(self, loop: "AbstractEventLoop", target: "Target", request: bytes, *, keepalive: bool,
                 head: bool, timeout_s: float, pacing_s: float | None) -> None:
        self.loop = loop
        self.target = target
        self.request = request
        self.keepalive = keepalive
        self.head = head
        self.timeout_ns = int(timeout_s * 1e9)
        self.pacing_ns = int(pacing_s * 1e9) if pacing_s else 0
        self.slots: list[Slot] = []
        self.lat = array("q")
        self.content = 0
        self.failures: Counter[str] = Counter()
        self.bad_codes = [0] * 1000  # by status: the text is made once a second, not per failure
        self.failed = 0

    def __len__(self) -> int:
        return len(self.slots)

    def resize(self, count: int) -> None:
        """Starts or stops users until `count` run; a stopped user's request in flight is
        dropped unrecorded, as Locust kills a stopped user's greenlet."""
        while len(self.slots) > count:
            self.slots.pop().cancel()
        while len(self.slots) < count:
            slot = Slot(self)
            self.slots.append(slot)
            slot.issue(clock())

    def take(self) -> tuple[array, int, int, Counter[str]]:
        """What was recorded since the last call: response times (ns), body bytes, the
        failed count among them, and failures by error text."""
        lat, self.lat = self.lat, array("q")
        content, self.content = self.content, 0
        failed, self.failed = self.failed, 0
        failures, self.failures = self.failures, Counter()
        for code, n in enumerate(self.bad_codes):
            if n:
                failures[bad_status(code)] += n
        self.bad_codes[:] = [0] * 1000
        return lat, content, failed, failures

    def fail(self, elapsed_ns: int, text: str) -> None:
        self.lat.append(elapsed_ns)
        self.failed += 1
        self.failures[text] += 1

    def sweep(self) -> None:
        """Fails the requests (and connects) older than the timeout: one pass a second
        rather than a timer per request."""
        limit = clock() - self.timeout_ns
        for slot in self.slots:
            if slot.busy_since and slot.busy_since < limit:
                slot.timed_out()


class Slot:
    """One user: its connection, and when its next request starts."""

    __slots__ = ("users", "conn", "task", "timer", "busy_since", "stopped")

    def __init__(self, users: Users) -> None:
        self.users = users
        self.conn: Conn | None = None
        self.task: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.busy_since = 0  # when the request (or connect) in flight began; 0: none
        self.stopped = False

    def issue(self, now: int) -> None:
        self.timer = None
        if self.stopped:
            return
        conn = self.conn
        self.busy_since = now
        if conn is not None and conn.transport is not None and not conn.transport.is_closing():
            conn.send(now)
        else:
            self.conn = None
            self.task = self.users.loop.create_task(self._connect(now))

    async def _connect(self, started: int) -> None:
        users = self.users
        factory = (lambda: HeadConn(self)) if users.head else (lambda: Conn(self))
        try:
            _, conn = await users.loop.create_connection(factory, users.target.address, users.target.port)
        except asyncio.CancelledError:
            return  # stopped, or timed out (the sweep has counted it)
        except OSError as exc:
            self.task = None
            users.fail(clock() - started, repr(exc))
            self.next(started, clock())
            return
        self.task = None
        if self.stopped:
            conn.transport.abort()
            return
        self.conn = conn
        conn.send(started)  # Locust's time of a request on a new connection includes the connect

    def next(self, started: int, now: int) -> None:
        """The request that began at `started` is over: start the next one, now or paced."""
        self.busy_since = 0
        if self.stopped:
            return
        pacing = self.users.pacing_ns
        if pacing and started + pacing > now:
            self.timer = self.users.loop.call_later((started + pacing - now) / 1e9, self._paced)
        else:
            self.issue(now)

    def _paced(self) -> None:
        self.issue(clock())

    def timed_out(self) -> None:
        started, now = self.busy_since, clock()
        if self.task is not None:
            self.task.cancel()
            self.task = None
        conn, self.conn = self.conn, None
        if conn is not None:
            conn.drop()
        self.users.fail(now - started, TIMEOUT)
        self.next(started, now)

    def cancel(self) -> None:
        self.stopped = True
        if self.timer is not None:
            self.timer.cancel()
        if self.task is not None:
            self.task.cancel()
        if self.conn is not None:
            self.conn.drop()


class Conn(asyncio.Protocol):
    """One TCP connection of a user, HTTP/1.1 parsed by httptools."""

    __slots__ = ("slot", "users", "parser", "transport", "t0", "body", "first", "busy")

    def __init__(self, slot: Slot) -> None:
        self.slot = slot
        self.users = slot.users
        self.parser = HttpResponseParser(self)
        self.transport: Transport | None = None
        self.t0 = 0
        self.body = 0
        self.first: bytes | None = None  # the response's first chunk: is its body ended by the close?
        self.busy = False

    def connection_made(self, transport: "asyncio.BaseTransport") -> None:
        self.transport = transport  # type: ignore[assignment]

    def send(self, started: int) -> None:
        self.t0 = started
        self.busy = True
        self.transport.write(self.users.request)  # type: ignore[union-attr]

    def data_received(self, data: bytes) -> None:
        if self.first is None:
            self.first = data
        else:
            self.first = with_head(self.first, data)
        try:
            self.parser.feed_data(data)
        except HttpParserError:
            self._failed(MALFORMED)

    def on_body(self, body: bytes) -> None:
        self.body += len(body)

    def on_message_complete(self) -> None:
        now = clock()
        code = self.parser.get_status_code()
        if code < 200 or not self.busy:
            if not self.busy:
                self._failed(MALFORMED)  # a response nobody asked for
            return  # an interim 1xx response: the real one follows
        users = self.users
        users.lat.append(now - self.t0)
        users.content += self.body
        self.body = 0
        self.first = None
        if code not in VALID_CODES:
            users.bad_codes[code] += 1
            users.failed += 1
        slot = self.slot
        if users.keepalive and not users.pacing_ns and not slot.stopped and self.parser.should_keep_alive():
            self.t0 = slot.busy_since = now
            self.transport.write(users.request)  # type: ignore[union-attr]
            return
        self.busy = False
        if not (users.keepalive and self.parser.should_keep_alive()):
            self.drop()
        slot.next(self.t0, now)

    def _failed(self, text: str) -> None:
        busy, self.busy = self.busy, False
        self.drop()
        if busy:
            now = clock()
            self.users.fail(now - self.t0, text)
            self.slot.next(self.t0, now)

    def drop(self) -> None:
        self.busy = False
        if self.slot.conn is self:
            self.slot.conn = None
        if self.transport is not None:
            self.transport.abort()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.slot.conn is self:
            self.slot.conn = None
        if self.busy:
            if exc is None and self.first is not None and ends_at_close(self.first, self.parser):
                self.on_message_complete()
            else:
                self._failed(RESET if isinstance(exc, ConnectionResetError) else CLOSED)
        self.parser = self.transport = None  # type: ignore[assignment]  # no cycles left for the GC


class HeadConn(Conn):
    """A response to HEAD announces a body it never sends: complete at its headers."""

    __slots__ = ()

    def on_headers_complete(self) -> None:
        self.on_message_complete()
        self.parser = HttpResponseParser(self)

