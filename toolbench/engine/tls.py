"""HTTP/1.1 over TLS (https URLs): the client context, and keep-alive off as a raw-socket
path like churn.py's, with TLS on each connection and its session resumed.

TLS always runs in Python: the C path (_churn*.c) speaks plain HTTP only, so make_churn
(churn_native.py) sends an https run here (keep-alive off) or to client.py's Conn over
uvloop's own TLS (keep-alive on), whatever is built.

Keep-alive off: each request is a non-blocking socket in the worker's epoll set, wrapped in an
`ssl.SSLSocket` once connected, so that OpenSSL reads and writes the descriptor itself (no
memory BIO to copy through, no transport, task or future per connection). A slot hands its
last session to its next connection (`wrap_socket(session=...)`): with TLS 1.3 the ticket
comes after the handshake, so the session is taken when the response is complete, never
before. Why not uvloop's create_connection(ssl=...) here too: one connection at a time against
nginx (TLS 1.3, resumed), an SSLSocket spent about 0.9 ms of CPU per connection and uvloop's
TLS transport 1.1 to 1.3 ms; OpenSSL's handshake is most of it either way (TLS 1.3 resumption
still makes a key exchange), bench/bench_tls.py measures the engine.

Keep-alive on: uvloop's create_connection makes the TLS layer and cannot take a session; it
builds its `SSLObject` with the context's wrap_bio, so `ClientContext.resume_with` (the
worker's last session, taken when a connection closes) rides on the context into it."""
from __future__ import annotations

import ssl
from _socket import SO_ERROR, SOL_SOCKET
from select import EPOLLIN, EPOLLOUT
from typing import TYPE_CHECKING, Any

from toolbench.engine.churn import BATCH, READ_SIZE, Churn, Fresh, HeadFresh
from toolbench.engine.churn import _connect_kind, _parser
from toolbench.engine.client import clock
from toolbench.engine.options import EngineError, EngineOptions

if TYPE_CHECKING:
    from toolbench.engine.load import Load, Slot
    from toolbench.engine.recorder import Recorder

ALPN = ["http/1.1"]  # the engine frames HTTP/1.1 only: a server must not pick h2
TLS_KIND = "tls"  # the failure kind of a handshake that failed (recorder.FAILURE_KINDS)
_WANT = (ssl.SSLWantReadError, ssl.SSLWantWriteError)


class ClientContext(ssl.SSLContext):
    """The worker's TLS client context. `resume_with`: the session a connection made by
    uvloop (keep-alive on) resumes; None: a full handshake."""

    resume_with: ssl.SSLSession | None = None

    def wrap_bio(self, incoming: ssl.MemoryBIO, outgoing: ssl.MemoryBIO, server_side: bool = False,
                 server_hostname: Any = None, session: ssl.SSLSession | None = None) -> ssl.SSLObject:
        return super().wrap_bio(incoming, outgoing, server_side, server_hostname,
                                session=session or self.resume_with)


def client_context(opts: EngineOptions) -> ClientContext:
    """A verifying client context: the CA file given (--cacert), else the system's store;
    ALPN http/1.1 only. An EngineError when the CA file cannot be read."""
    context = ClientContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the certificate and the host name
    try:
        if opts.cacert is not None:
            context.load_verify_locations(cafile=opts.cacert)
        else:
            context.load_default_certs()
    except FileNotFoundError:
        raise EngineError(f"--cacert {opts.cacert}: no such file") from None
    except (ssl.SSLError, OSError, ValueError) as exc:
        raise EngineError(f"--cacert {opts.cacert}: not a PEM file of certificates ({exc})") from None
    context.set_alpn_protocols(ALPN)
    return context


def handshake_error(exc: BaseException, where: str) -> str:
    """One line for a handshake that failed, saying what to do about an untrusted certificate."""
    reason = getattr(exc, "verify_message", None) or getattr(exc, "reason", None) or str(exc)
    line = f"TLS handshake with {where} failed: {reason}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        line += " (the server's certificate is not trusted: give its CA with --cacert)"
    return line


def count_handshake(rec: Recorder, transport: Any) -> None:
    """A connection made by uvloop (keep-alive on) finished its handshake."""
    sslobj = transport.get_extra_info("ssl_object") if transport is not None else None
    if sslobj is not None:
        rec.handshake(sslobj.session_reused)


def keep_session(context: ClientContext, transport: Any) -> None:
    """A connection made by uvloop is closing after a response: the next one resumes its session."""
    sslobj = transport.get_extra_info("ssl_object") if transport is not None else None
    if sslobj is not None:
        context.resume_with = sslobj.session


class TlsFresh(Fresh):
    """A slot's request in flight over TLS; `session`: the slot's last, for its next connection."""

    __slots__ = ("shaking", "session")

    def __init__(self, slot: Slot, churn: Churn) -> None:
        super().__init__(slot, churn)
        self.shaking = False  # connected, in the TLS handshake (`connecting` stays set till it is over)
        self.session: ssl.SSLSession | None = None


class HeadTlsFresh(HeadFresh, TlsFresh):
    __slots__ = ()


class TlsChurn(Churn):
    """Keep-alive off over TLS. `connecting` spans the TCP connect and the handshake: a
    connect timeout covers both, and the connect time recorded is both."""

    AGAIN = _WANT

    def __init__(self, load: Load, context: ClientContext, resume: bool) -> None:
        super().__init__(load)
        self.context = context
        self.hostname = load.target.hostname
        self.resume = resume

    def fresh(self, slot: Slot) -> Fresh:
        return HeadTlsFresh(slot, self) if self.load.head else TlsFresh(slot, self)

    def send(self, f: Fresh, scheduled: int) -> None:  # type: ignore[override]
        fd = self._open(f, scheduled)
        if fd is None:
            return
        f.connecting = True
        self.epoll.register(fd, EPOLLOUT)  # writable: connected (or refused, in SO_ERROR)

    def ready(self) -> None:
        by_fd = self.by_fd
        for fd, _ in self.epoll.poll(0, BATCH):
            f = by_fd.get(fd)
            if f is None:
                continue
            if f.connecting or f.out:
                self._writable(f)
                continue
            sock: Any = f.sock
            try:
                data = sock.recv(READ_SIZE)
                if sock.pending():  # a record larger than the read: the rest is in OpenSSL, not the socket
                    data += sock.recv(sock.pending())
            except _WANT:
                continue  # a whole record is not here yet, or it was a session ticket
            except OSError as exc:
                self._fail(f, "reset" if isinstance(exc, ConnectionResetError) else "closed")
                continue
            now = clock()
            if not data:
                self._eof(f, now)
            else:
                self._received(f, data, now)

    def _writable(self, f: Fresh) -> None:  # type: ignore[override]
        assert isinstance(f, TlsFresh)
        sock: Any = f.sock
        if f.connecting and not f.shaking:
            err = sock.getsockopt(SOL_SOCKET, SO_ERROR)
            if err:
                self._fail(f, _connect_kind(err))
                return
            try:
                f.sock = self.context.wrap_socket(sock, server_hostname=self.hostname,
                                                  do_handshake_on_connect=False, session=f.session)
            except (ssl.SSLError, OSError):
                self._fail(f, TLS_KIND)
                return
            f.shaking = True
        if f.shaking:
            self._shake(f)
            return
        self._send_rest(f)

    def _shake(self, f: TlsFresh) -> None:
        """One step of the handshake; when it is over, the request goes out."""
        sock: Any = f.sock
        try:
            sock.do_handshake()
        except ssl.SSLWantReadError:
            self.epoll.modify(f.fd, EPOLLIN)
            return
        except ssl.SSLWantWriteError:
            self.epoll.modify(f.fd, EPOLLOUT)
            return
        except (ssl.SSLError, OSError):
            self._fail(f, TLS_KIND)
            return
        f.shaking = f.connecting = False
        self.rec.handshake(sock.session_reused)
        try:
            sent = sock.send(self.request)
        except _WANT:
            sent = 0  # OpenSSL takes the same bytes again once writable
        except OSError as exc:
            self._fail(f, "reset" if isinstance(exc, ConnectionResetError) else "closed")
            return
        f.t_sent = clock()
        self.rec.connected(f.t_sent - f.t_start)
        if f.parser is None:
            f.parser = _parser(f)
        if sent == len(self.request):
            self.epoll.modify(f.fd, EPOLLIN)
        else:
            f.out = self.request[sent:]
            self.epoll.modify(f.fd, EPOLLOUT)

    def _complete(self, f: Fresh, code: int, now: int) -> None:
        if self.resume:
            f.session = f.sock.session  # type: ignore[union-attr,attr-defined]  # the ticket is in by now
        super()._complete(f, code, now)

    def _fail(self, f: Fresh, kind: str) -> None:
        f.shaking = False  # type: ignore[attr-defined]
        super()._fail(f, kind)
