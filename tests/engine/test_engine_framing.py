"""The C path's framing (_churn_framing.c) against llhttp, the Python path's parser: for
responses built from the parts a server sends, well-formed and not, split at any bytes,
both say the same thing (complete with this status, more to come, or malformed), so the two
paths count every response alike; and with keep-alive, whether the connection carries the
next request."""
from __future__ import annotations

from typing import Any

import pytest
from httptools import HttpParserError, HttpResponseParser
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolbench.engine.client import ends_at_close

churn = pytest.importorskip("toolbench.engine._churn", reason="the engine's C path is not built here")

STATUS_LINES = [b"HTTP/1.1 200 OK", b"HTTP/1.1 404 Not Found", b"HTTP/1.0 204 No Content", b"HTTP/1.1 304 Not Modified",
                b"HTTP/1.1 503", b"HTTP/2.0 201 Created", b"HTTP/1.1 999 Odd",
                b"HTTP/1.1 20 Short", b"HTTP/1.1 2000 Long", b"HTTX/1.1 200 OK", b"SSH-2.0-OpenSSH_9.0", b"HTTP/1.1 2x0 OK"]
INTERIM = [b"", b"HTTP/1.1 100 Continue\r\n\r\n", b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"]
OTHER_HEADERS = [b"Server: nginx", b"Content-Type: text/plain", b"X-A: b c", b"Connection: close", b"Connection: keep-alive"]
BAD_HEADERS = [b"Content Length: 3", b"X-Bad : 1", b"NoColon", b"X(y): 1"]


class _Seen:
    def __init__(self) -> None:
        self.complete = False
        self.parser: HttpResponseParser | None = None
        self.code = 0

    def on_message_complete(self) -> None:
        assert self.parser is not None
        code = self.parser.get_status_code()
        if code >= 200 and not self.complete:
            self.complete = True
            self.code = code


class _HeadSeen(_Seen):
    def on_headers_complete(self) -> None:
        _Seen.on_message_complete(self)


def llhttp(chunks: list[bytes], head: bool) -> tuple[int, int]:
    """What the Python path makes of the chunks: (1, status) complete, (0, _) more, (-1, 0) malformed.
    Bytes after a complete response are ignored, as churn.py ignores them."""
    seen = _HeadSeen() if head else _Seen()
    parser = HttpResponseParser(seen)
    parser.set_dangerous_leniencies(lenient_keep_alive=True)
    seen.parser = parser
    for chunk in chunks:
        try:
            parser.feed_data(chunk)
        except HttpParserError:
            return (1, seen.code) if seen.complete else (-1, 0)
        if seen.complete:
            return 1, seen.code
    return 0, 0


@st.composite
def responses(draw: Any) -> tuple[bytes, bool]:
    """A response, and whether it was cut short inside its (final) head."""
    status = draw(st.sampled_from(STATUS_LINES))
    headers = draw(st.lists(st.sampled_from(OTHER_HEADERS), max_size=3))
    body_kind = draw(st.sampled_from(["length", "chunked", "close", "coding", "length+chunked", "two-lengths"]))
    body = draw(st.binary(max_size=40))
    framing: list[bytes] = []
    if body_kind in ("length", "length+chunked", "two-lengths"):
        framing.append(b"Content-Length: %d" % len(body))
    if body_kind == "two-lengths":
        framing.append(b"Content-Length: %d" % len(body))
    if body_kind in ("chunked", "length+chunked"):
        framing.append(draw(st.sampled_from([b"Transfer-Encoding: chunked", b"transfer-encoding: gzip, chunked"])))
        pieces = [body[:7], body[7:]] if len(body) > 7 else [body]
        ext = draw(st.sampled_from([b"", b";name=value", b" ;x"]))
        trailer = draw(st.sampled_from([b"", b"X-Trailer: t\r\n"]))
        body = b"".join(b"%x%s\r\n%s\r\n" % (len(p), ext, p) for p in pieces if p) + b"0\r\n" + trailer + b"\r\n"
    if body_kind == "coding":
        framing.append(b"Transfer-Encoding: gzip")
    if draw(st.booleans()):
        headers.append(draw(st.sampled_from(BAD_HEADERS)))
    lines = draw(st.permutations(headers + framing))
    eol = draw(st.sampled_from([b"\r\n"] * 5 + [b"\n"]))  # now and then a bare LF
    interim = draw(st.sampled_from(INTERIM))
    head = status + eol + b"".join(h + eol for h in lines) + eol
    raw = interim + head + body
    if draw(st.booleans()):  # cut short somewhere
        cut = draw(st.integers(0, len(raw)))
        return raw[:cut], cut < len(interim) + len(head)
    return raw, False


@st.composite
def split(draw: Any, raw: bytes) -> list[bytes]:
    cuts = sorted(draw(st.lists(st.integers(0, len(raw)), max_size=6)))
    bounds = [0] + cuts + [len(raw)]
    return [raw[a:b] for a, b in zip(bounds, bounds[1:]) if b > a]


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), head=st.booleans())
def test_c_framing_says_what_llhttp_says(data: Any, head: bool) -> None:
    raw, cut_in_head = data.draw(responses())
    chunks = data.draw(split(raw))
    state, code, c_ends_at_close, _, _ = churn.frame(chunks, head)
    said = llhttp(chunks, head)
    if cut_in_head and (state, said[0]) == (0, -1):
        # The one leeway: llhttp judges a length or a duplicate as its bytes arrive, the C path
        # once the line is whole; a head cut short inside such a line is then "closed" (a read
        # failure) there and "malformed" in Python. Syntax (the status line, a header name, a
        # bare LF) both judge byte by byte.
        return
    assert (state, code if state == 1 else 0) == said, raw
    if state == 0 and b"\r\n\r\n" in raw and not head:  # the head is whole: would the close end the body?
        probe = _Seen()
        parser = HttpResponseParser(probe)
        probe.parser = parser
        try:
            parser.feed_data(raw)
        except HttpParserError:
            return
        assert c_ends_at_close == ends_at_close(raw, parser), raw


def test_a_head_split_at_every_byte() -> None:
    raw = (b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
           b"3;ext=1\r\nabc\r\n0\r\nX-T: t\r\n\r\n")
    assert churn.frame([raw[k:k + 1] for k in range(len(raw))], False)[:3] == (1, 201, False)
    assert churn.frame([raw[:-1]], False)[0] == 0  # the last CRLF of the trailers is still to come


def test_a_head_longer_than_its_limit_is_malformed() -> None:
    """Not what llhttp does (it has no limit): the one difference, kept so that a server
    sending an endless head cannot grow the worker's memory without bound."""
    raw = b"HTTP/1.1 200 OK\r\nX-Pad: " + b"x" * (300 * 1024)
    assert churn.frame([raw[k:k + 4096] for k in range(0, len(raw), 4096)], False)[0] == -1


def llhttp_keeps(raw: bytes, head: bool) -> bool | None:
    """What the keep-alive Python path (client.Conn, HeadConn) decides once the response is
    complete: llhttp's should_keep_alive, asked at the end of the final response (at its head,
    for HEAD). None: llhttp refused it before that."""
    seen: list[bool] = []

    class Probe:
        def on_headers_complete(self) -> None:
            if head and parser.get_status_code() >= 200 and not seen:
                seen.append(parser.should_keep_alive())

        def on_message_complete(self) -> None:
            if not head and parser.get_status_code() >= 200 and not seen:
                seen.append(parser.should_keep_alive())

    parser = HttpResponseParser(Probe())
    try:
        parser.feed_data(raw)
    except HttpParserError:
        pass
    return seen[0] if seen else None


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), head=st.booleans())
def test_c_keeps_a_connection_when_llhttp_does(data: Any, head: bool) -> None:
    raw, _ = data.draw(responses())
    chunks = data.draw(split(raw))
    state, code, _, keep_alive, unread = churn.frame(chunks, head)
    if state != 1:
        assert not keep_alive
        return
    said = llhttp_keeps(raw, head)
    if said is not None:  # (llhttp may refuse a head the C path has finished with: test_c_framing_says...)
        assert keep_alive == said, raw
    if not head and code not in (204, 304):  # one response, nothing after it (those three have no body)
        assert unread == 0, raw


@pytest.mark.parametrize("response, keeps", [
    (b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", True),
    (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\nok", False),
    (b"HTTP/1.1 200 OK\r\nconnection: Keep-Alive, CLOSE\r\nContent-Length: 2\r\n\r\nok", False),
    (b"HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 2\r\n\r\nok", True),
    (b"HTTP/1.1 200 OK\r\nProxy-Connection: close\r\nContent-Length: 2\r\n\r\nok", False),
    (b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", False),
    (b"HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok", True),
    (b"HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nok", False),  # llhttp reads it as 1.0
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n", True),
    (b"HTTP/1.1 204 No Content\r\n\r\n", True),
], ids=["length", "close", "token-list", "not-a-token", "proxy", "http10", "http10-keep", "http20", "chunked", "204"])
def test_keep_alive_verdicts(response: bytes, keeps: bool) -> None:
    assert llhttp_keeps(response, False) is keeps  # the reference itself
    assert churn.frame([response], False)[3] is keeps


def test_bytes_after_the_response_are_counted_unread() -> None:
    ok = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"
    assert churn.frame([ok + b"HTTP/1.1"], False)[::4] == (1, 8)
    assert churn.frame([ok[:10], ok[10:] + b"xyz"], False)[::4] == (1, 3)
    head_only = b"HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n"
    assert churn.frame([head_only + b"body"], True)[::4] == (1, 4)  # HEAD: no body follows a head
