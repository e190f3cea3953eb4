"""Keep-alive off in Python: a new connection per request, on raw non-blocking sockets.

The path where the C one (_churn.c, churn_native.py) is not built, and its reference:
both run the same tests (tests/engine/test_engine_churn.py).

Profiled (perf, strace; bench/README.md): through uvloop's create_connection a
connection cost a coroutine, a task, a future, a transport and a protocol, and ten
system calls (uvloop adds TCP_NODELAY, getsockname, getpeername, getsockopt) where ab
makes about twelve for its own reasons. Here a request is a socket, connect, send,
one epoll registration, recv and close: six calls (close also drops the socket
from the epoll set). On loopback the handshake is over when connect returns, so the
request is sent at once; only a connect still in progress waits for the socket to
turn writable. The sockets live in an epoll set of their own, whose descriptor the
event loop watches: one callback per batch of ready sockets, none per connection.

Each slot keeps one `Fresh` for its whole run: the state of its request in flight
is a handful of integers on it, not new objects, and its response parser is kept
from one connection to the next (told to ignore `Connection: close`, after which it
would refuse more input) as long as each response ended where the parser says it
does; a new one follows anything else (a failure, a body the close ended, HEAD).
The socket is the only allocation per request. Every request is still timed into
the recorder's latency array, and its connect into the connect figures."""
from __future__ import annotations

import errno
import select
from _socket import AF_INET, AF_INET6, SO_ERROR, SOCK_NONBLOCK, SOCK_STREAM, SOL_SOCKET
from _socket import socket as raw_socket
from select import EPOLLIN, EPOLLOUT
from typing import TYPE_CHECKING, Any

from httptools import HttpParserError, HttpResponseParser

from toolbench.engine.client import clock, ends_at_close, with_head

if TYPE_CHECKING:
    from toolbench.engine.load import Load, Slot

READ_SIZE = 65536
BATCH = 256  # ready sockets handled per callback; the loop calls again while more are ready
_CONNECTING = (errno.EINPROGRESS, errno.EAGAIN, 0)
_STREAM = SOCK_STREAM | SOCK_NONBLOCK


class Fresh:
    """One slot's request in flight (the same object for all of the slot's requests)."""

    __slots__ = ("slot", "churn", "sock", "fd", "parser", "code", "connecting", "out", "t_sched", "t_start",
                 "t_sent", "t_first", "first", "rx")

    def __init__(self, slot: Slot, churn: Churn) -> None:
        self.slot = slot
        self.churn = churn
        self.sock: raw_socket | None = None
        self.fd = -1
        self.parser: HttpResponseParser | None = None  # None: make a new one for the next response
        self.code = 0  # the final status, once the response is complete
        self.connecting = False  # waiting for the socket to turn writable
        self.out = b""  # request bytes not yet sent (a large body)
        self.t_sched = self.t_start = self.t_sent = self.t_first = 0
        self.first = b""  # the response's first chunk, for a close-delimited body
        self.rx = 0

    def on_message_complete(self) -> None:
        code = self.parser.get_status_code()  # type: ignore[union-attr]
        if code >= 200:  # not an interim 1xx: the real response follows that
            self.code = code


class HeadFresh(Fresh):
    """A response to HEAD announces a body it does not send: complete at its headers
    (with the parser still waiting for that body: it is not kept)."""

    __slots__ = ()

    def on_headers_complete(self) -> None:
        Fresh.on_message_complete(self)
        if self.code:  # not after an interim 1xx
            self.parser = None

    def on_message_complete(self) -> None:
        pass  # (a HEAD response with Content-Length: 0) already complete at its headers


class Churn:
    """The keep-alive-off connections of one worker, in an epoll set the loop watches."""

    # What a non-blocking send raises when the socket takes nothing now (TlsChurn: OpenSSL's wants).
    AGAIN: tuple[type[Exception], ...] = (BlockingIOError,)

    def __init__(self, load: Load) -> None:
        self.load = load
        self.rec = load.rec
        self.addr = (load.target.address, load.target.port)
        self.family = AF_INET6 if ":" in load.target.address else AF_INET
        self.request = load.request
        self.epoll = select.epoll()
        self.by_fd: dict[int, Fresh] = {}
        self.lat = load.rec.lat.append
        self.ulat = load.rec.ulat.append if load.rec.ulat is not None else None
        self.codes = load.rec.codes
        self.closed = not load.open  # then a request is timed from its connect (send())
        load.loop.add_reader(self.epoll.fileno(), self.ready)

    def fresh(self, slot: Slot) -> Fresh:
        return HeadFresh(slot, self) if self.load.head else Fresh(slot, self)

    def idle(self, f: Fresh) -> bool:
        return f.sock is None

    def _open(self, f: Fresh, scheduled: int) -> int | None:
        """Starts the slot's connection (non-blocking): its descriptor, or None when it failed
        at once (said). `scheduled` is when the request was meant to start."""
        started = clock()
        sock = f.sock = raw_socket(self.family, _STREAM)
        f.t_start = started
        # Closed model: the request began when the slot started it, connect included (as ab counts).
        f.t_sched = started if self.closed else min(scheduled, started)
        err = sock.connect_ex(self.addr)
        if err not in _CONNECTING:
            self._fail_soon(f, _connect_kind(err))
            return None
        fd = f.fd = sock.fileno()
        self.by_fd[fd] = f
        return fd

    def send(self, f: Fresh, scheduled: int) -> None:
        """Opens a connection and sends the request; `scheduled` is when it was meant to start."""
        fd = self._open(f, scheduled)
        if fd is None:
            return
        sock: Any = f.sock
        started = f.t_start
        request = self.request
        try:
            sent = sock.send(request)
        except BlockingIOError:
            f.connecting = True  # the handshake is not over: wait until writable
            self.epoll.register(fd, EPOLLOUT)
            return
        except OSError as exc:
            self._fail_soon(f, _connect_kind(exc.errno))
            return
        f.t_sent = clock()
        self.rec.connected(f.t_sent - started)
        if f.parser is None:
            f.parser = _parser(f)
        if sent == len(request):
            self.epoll.register(fd, EPOLLIN)
        else:
            f.out = request[sent:]
            self.epoll.register(fd, EPOLLOUT)

    def _connected(self, f: Fresh, sent: int) -> None:
        """A connect that was in progress is over, and `sent` bytes of the request went out."""
        f.t_sent = clock()
        self.rec.connected(f.t_sent - f.t_start)
        if f.parser is None:
            f.parser = _parser(f)
        events = EPOLLIN
        if sent < len(self.request):
            f.out = self.request[sent:]
            events = EPOLLOUT
        self.epoll.modify(f.fd, events)

    def ready(self) -> None:
        """The loop's callback: the epoll set has ready sockets. (The C path, _churn_conn.c,
        does this per request without the calls; this one is kept plain.)"""
        by_fd = self.by_fd
        for fd, _ in self.epoll.poll(0, BATCH):
            f = by_fd.get(fd)
            if f is None:
                continue
            if f.connecting or f.out:  # a connect in progress, or the rest of a large request
                self._writable(f)
                continue
            sock = f.sock
            try:
                data = sock.recv(READ_SIZE)  # type: ignore[union-attr]
            except OSError as exc:
                self._read_failed(f, exc)
                continue
            now = clock()
            if not data:
                self._eof(f, now)
                continue
            self._received(f, data, now)

    def _writable(self, f: Fresh) -> None:
        sock = f.sock
        assert sock is not None
        if f.connecting:
            err = sock.getsockopt(SOL_SOCKET, SO_ERROR)
            if err:
                self._fail(f, _connect_kind(err))
                return
            f.connecting = False
            f.out = b""
            try:
                sent = sock.send(self.request)
            except BlockingIOError:
                sent = 0
            except OSError as exc:
                self._fail(f, _connect_kind(exc.errno))
                return
            self._connected(f, sent)
            return
        self._send_rest(f)

    def _send_rest(self, f: Fresh) -> None:
        """More of a request the socket took only part of; reading once it is all sent."""
        try:
            sent = f.sock.send(f.out)  # type: ignore[union-attr]
        except self.AGAIN:
            return
        except OSError as exc:
            self._fail(f, "reset" if isinstance(exc, ConnectionResetError) else "closed")
            return
        f.out = f.out[sent:]
        if not f.out:
            self.epoll.modify(f.fd, EPOLLIN)

    def _read_failed(self, f: Fresh, exc: OSError) -> None:
        if not isinstance(exc, BlockingIOError):
            self._fail(f, "reset" if isinstance(exc, ConnectionResetError) else "closed")

    def _received(self, f: Fresh, data: bytes, now: int) -> None:
        """Bytes of the response (TlsChurn's too, once decrypted)."""
        if not f.t_first:
            f.t_first = now
            f.first = data
        else:
            f.first = with_head(f.first, data)
        f.rx += len(data)
        try:
            f.parser.feed_data(data)  # type: ignore[union-attr]
        except HttpParserError:
            if self._bad_bytes(f):
                return
        if f.code:  # complete (else more of the response is to come)
            self._complete(f, f.code, now)

    def _eof(self, f: Fresh, now: int) -> None:
        """The server closed: the end of a close-delimited body, or a failure."""
        if f.t_first and f.parser is not None and ends_at_close(f.first, f.parser):
            code = f.parser.get_status_code()
            f.parser = None  # still in that body
            self._complete(f, code, now)
        else:
            self._fail(f, "closed")

    def _bad_bytes(self, f: Fresh) -> bool:
        """The parser refused the bytes: True when that failed the request. Bytes after
        a complete response are ignored, as with keep-alive."""
        f.parser = None
        if not f.code:
            self._fail(f, "malformed")
            return True
        return False

    def _complete(self, f: Fresh, code: int, now: int) -> None:
        if code != 200:
            self.codes[code] += 1  # 200s are the responses not counted here
        self.lat(now - f.t_sched)
        if self.ulat is not None:
            self.ulat(now - f.t_start)
        self.rec.gap_ns += (f.t_sent - f.t_sched) + (now - f.t_first)  # TTFB = latency - gap
        self._close(f)
        self.load.last_done_ns = now
        f.slot.done(None, now)

    def _close(self, f: Fresh) -> None:
        del self.by_fd[f.fd]
        f.sock.close()  # type: ignore[union-attr]  # and out of the epoll set with it
        self.rec.received_bytes += f.rx
        f.sock = None
        f.code = f.rx = f.t_first = 0

    def _fail(self, f: Fresh, kind: str) -> None:
        """The request in flight failed: count it, drop the connection, go on."""
        if f.t_first or f.connecting or f.out:
            f.parser = None  # mid-response, or a request never fully sent
        f.connecting = False
        f.out = b""
        self._close(f)
        f.slot.failed(kind)

    def _fail_soon(self, f: Fresh, kind: str) -> None:
        """A connect that failed at once (refused): counted from the loop, so that a slot
        refused again and again never recurses and the loop's timers (the stop) still run."""
        if self.by_fd.get(f.fd) is f:  # (f.fd may be an older socket's number, now another's)
            del self.by_fd[f.fd]
        f.sock.close()  # type: ignore[union-attr]  # kept till then: the slot is not idle
        self.load.loop.call_soon(self._failed_at_once, f, kind)

    def _failed_at_once(self, f: Fresh, kind: str) -> None:
        f.sock = None
        if not self.load.stopped:
            f.slot.failed(kind)

    def window_starts(self) -> int:
        """The warm-up is over: the bytes of the requests in flight count from now.
        Returns how many are in flight."""
        for f in self.by_fd.values():
            f.rx = 0
        return len(self.by_fd)

    def sweep(self, limit: int, connect_limit: int) -> None:
        """Times out connects that take too long, and requests unanswered within the timeout."""
        for f in [f for f in self.by_fd.values() if (f.t_start < connect_limit if f.connecting
                                                      else f.t_sent < limit)]:
            self._fail(f, "connect_timeout" if f.connecting else "timeout")

    def stop(self) -> None:
        """Drops the requests in flight uncounted (as the keep-alive path does), keeping their bytes."""
        for f in list(self.by_fd.values()):
            self._close(f)
        loop = self.load.loop
        if not self.epoll.closed:
            loop.remove_reader(self.epoll.fileno())
            self.epoll.close()


def _parser(f: Fresh) -> HttpResponseParser:
    """A response parser for slot `f`, kept across its connections (see the module's doc)."""
    parser = HttpResponseParser(f)
    parser.set_dangerous_leniencies(lenient_keep_alive=True)
    return parser


def _connect_kind(err: int | None) -> str:
    if err == errno.ECONNREFUSED:
        return "connect_refused"
    if err == errno.ETIMEDOUT:
        return "connect_timeout"
    return "connect_other"
