"""The TLS handshakes a bundled target served during a cell, read from the log nginx keeps of
each TLS connection's first request (toolbench.servers.nginx: `handshakes.log`), one line a
connection: `$connection $ssl_session_reused $ssl_protocol $ssl_cipher $server_protocol`, where
reused is `r` (the session was resumed, from the cache or a ticket) or `.` (a full handshake).

The log is read from the byte offset it had when the cell started, line by line against a
strict pattern: a line that does not match, or is longer than any line nginx writes with that
format, is counted as unread, never interpreted; a read stops at MAX_BYTES."""
from __future__ import annotations

import re
import time
from collections import Counter
from pathlib import Path
from typing import BinaryIO

from toolbench.record.observed import TlsHandshakes
from toolbench.servers import loglines

MAX_LINE = 256  # the longest cipher name is ~50 characters: a line is under 100
MAX_BYTES = 512 * 1024 * 1024  # ~8 million connections: far more than a cell makes in its minutes
SETTLE_QUIET_S = 0.05
SETTLE_LIMIT_S = 1.0

_LINE = re.compile(rb"(\d{1,20}) ([r.]) (TLSv1(?:\.[0-3])?|SSLv3) ([A-Za-z0-9_-]{1,80}) (HTTP/[0-9.]{1,4})\n")


def size(path: Path) -> int | None:
    """The log's size now; None: there is no log."""
    try:
        return path.stat().st_size
    except OSError:
        return None


def settled_size(path: Path, quiet_s: float = SETTLE_QUIET_S, limit_s: float = SETTLE_LIMIT_S) -> int | None:
    """The log's size once it stopped growing for `quiet_s` (at most `limit_s`): nginx writes a
    connection's line after the response is sent, so the client may have its answer a moment
    before the line is there."""
    deadline = time.monotonic() + limit_s
    last = size(path)
    while time.monotonic() < deadline:
        time.sleep(quiet_s)
        now = size(path)
        if now == last:
            break
        last = now
    return last


def read(path: Path, offset: int, http2_probe: bool | None = None, probe_connections: int = 0,
         end: int | None = None) -> TlsHandshakes | None:
    """The connections logged from `offset` to `end` (the log's end by default). `probe_connections`:
    how many of them were toolbench's probe's (each a full handshake, over HTTP/2 when
    `http2_probe`), left out of the counts. None: no log, a log shorter than `offset` or `end` (it
    was replaced), or a stretch longer than MAX_BYTES."""
    try:
        with path.open("rb") as log:
            log.seek(0, 2)
            size_now = log.tell()
            stop = size_now if end is None else end
            if stop > size_now or offset > stop or stop - offset > MAX_BYTES:
                return None
            log.seek(offset)
            return _counted(log, stop - offset, http2_probe, probe_connections)
    except OSError:
        return None


def _counted(log: BinaryIO, length: int, http2_probe: bool | None, probe: int) -> TlsHandshakes:
    reused: Counter[bytes] = Counter()
    versions: Counter[str] = Counter()
    ciphers: Counter[str] = Counter()
    http: Counter[str] = Counter()
    unread = 0
    for line in loglines.lines(log, length, MAX_LINE):
        if line is None:
            unread += 1
            continue
        if not line.endswith(b"\n"):
            continue  # a last line still being written is not yet a connection
        found = _LINE.fullmatch(line)
        if found is None:
            unread += 1
            continue
        reused[found.group(2)] += 1
        versions[found.group(3).decode()] += 1
        ciphers[found.group(4).decode()] += 1
        http[found.group(5).decode()] += 1
    return _summary(reused, versions, ciphers, http, unread, http2_probe, probe)


def _summary(reused: Counter[bytes], versions: Counter[str], ciphers: Counter[str], http: Counter[str],
             unread: int, http2_probe: bool | None, probe: int) -> TlsHandshakes:
    full, resumed = reused[b"."], reused[b"r"]
    http2 = http["HTTP/2.0"]
    http1 = http["HTTP/1.1"] + http["HTTP/1.0"]
    # The probe's connections are full handshakes over its own HTTP version; fewer may be in the
    # log than it counted (one aborted as the cell ended), never more are taken away than are there.
    if http2_probe is None:
        probe = 0
    probe = max(0, min(probe, full, http2 if http2_probe else http1))
    if http2_probe:
        http2 -= probe
    else:
        http1 -= probe
    return TlsHandshakes(connections=full - probe + resumed, handshakes_full=full - probe, handshakes_resumed=resumed,
                         http1_connections=http1, http2_connections=http2, tls_version=_most(versions),
                         cipher=_most(ciphers), probe_connections=probe, lines_unread=unread)


def _most(counted: Counter[str]) -> str | None:
    """The most common value; of a tie, the first in name order (stable across reads)."""
    if not counted:
        return None
    return min(counted.items(), key=lambda item: (-item[1], item[0]))[0]
