"""What a target toolbench started wrote to its own error logs during a cell, counted by kind:
nginx's error.log (written at `warn` and above: toolbench.servers.nginx), uWSGI's stderr and
gunicorn's (its `errorlog` is stderr; toolbench.servers.python_stacks). Request logging is off
everywhere, so each line is an event: a request refused by limit_req, an upstream that did not
answer, a full listen queue, a worker killed.

Each log is read from the byte offset it had when the cell started to the one it had when the cell
stopped (a stretch over MAX_BYTES is not read: absent), line by line, each at most MAX_LINE bytes:
a line is first checked against its log's own line format (nginx's and gunicorn's date, level and pid), then
against the kinds' fixed patterns; a line that is too long or not of its log's format is counted
as unread, never interpreted. Which log a file is follows from its name, which toolbench gave it."""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Iterable

from toolbench.record.observed import TARGET_LOG_KINDS, TARGET_LOG_WORDS, TargetLogCounts
from toolbench.record.schema import Counts
from toolbench.servers import loglines, tls_log

MAX_LINE = 8192  # nginx's error lines are under 2 KiB (its buffer): a longer one is not nginx's
# ~2.5 million nginx lines of ~200 bytes: a cell refusing 20,000 requests a second for two minutes
MAX_BYTES = 512 * 1024 * 1024

# The file names toolbench gives each server's log, to the log's kind.
SOURCES = {"error.log": "nginx", "uwsgi.stderr.txt": "uwsgi", "gunicorn.stderr.txt": "gunicorn"}

_NGINX = re.compile(rb"\d{4}/\d\d/\d\d \d\d:\d\d:\d\d \[(emerg|alert|crit|error|warn|notice|info|debug)\] "
                    rb"\d{1,10}#\d{1,20}: (?:\*\d{1,20} )?(.*)")  # `*N `: the connection's number, when one
_NGINX_COUNTED = (b"emerg", b"alert", b"crit", b"error", b"warn")
_GUNICORN = re.compile(rb"\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?: [+-]\d{4})?\] \[\d{1,10}\] "
                       rb"\[(DEBUG|INFO|WARNING|ERROR|CRITICAL)\] (.*)")
_GUNICORN_COUNTED = (b"WARNING", b"ERROR", b"CRITICAL")
# nginx's "(24: Too many open files)", Python's "[Errno 24] Too many open files", uWSGI's own.
_OPEN_FILES = ("open_files", re.compile(rb"Too many open files"))

# Per log, (kind, pattern) tried in order on a counted line's message: the first match is its kind.
NGINX_KINDS: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    ("limit_req", re.compile(rb"^limiting requests, excess: [0-9.]+ by zone \"")),
    ("limit_req_delayed", re.compile(rb"^delaying request, excess: [0-9.]+, by zone \"")),
    ("upstream_timeout", re.compile(rb"^upstream timed out \(110: Connection timed out\)")),
    ("worker_connections", re.compile(rb"^\d+ worker_connections are not enough")),
    ("upstream_refused", re.compile(rb"^connect\(\) to \S+ failed \(111: Connection refused\) while connecting to "
                                    rb"upstream")),
    ("upstream_queue_full", re.compile(rb"^connect\(\) to unix:\S+ failed \(11: Resource temporarily unavailable\) "
                                       rb"while connecting to upstream")),
    ("upstream_reset", re.compile(rb"^(?:recv\(\) failed \(104: Connection reset by peer\) while reading response "
                                  rb"header from upstream|upstream prematurely closed connection)")),
    _OPEN_FILES,
)
UWSGI_KINDS: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    # "Wed Dec  2 11:12:10 2026 - *** uWSGI listen queue of socket "127.0.0.1:39575" (fd: 3) full !!! (5/4) ***",
    # written by its master once a second while the queue is full.
    ("listen_queue_full", re.compile(rb"^(?:[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4} - )?"
                                     rb"\*\*\* uWSGI listen queue of socket \"[^\"]{1,300}\" \(fd: \d+\) full !!! "
                                     rb"\(\d+/\d+\) \*\*\*$")),
    _OPEN_FILES,
)
GUNICORN_KINDS: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    ("worker_timeout", re.compile(rb"^WORKER TIMEOUT \(pid:\d+\)$")),
    _OPEN_FILES,
)


@dataclass(frozen=True)
class Span:
    """One log and where it stood at a cell's start; `end` once the cell stopped."""

    path: Path
    source: str
    start: int
    end: int | None = None


def source_of(path: str | Path) -> str | None:
    """The kind of log a file is, by the name toolbench gave it; None: none it reads."""
    return SOURCES.get(Path(path).name)


def mark(paths: Iterable[str]) -> list[Span]:
    """Where each readable log stands now, at a cell's start (a log not written yet stands at 0)."""
    spans = []
    for name in paths:
        source = source_of(name)
        if source is not None:
            spans.append(Span(Path(name), source, tls_log.size(Path(name)) or 0))
    return spans


def ended(spans: list[Span]) -> list[Span]:
    """The same logs with where each stands at the cell's stop, once it stopped growing: a server
    writes its line as it answers, a moment after the client may have the answer."""
    return [Span(s.path, s.source, s.start, tls_log.settled_size(s.path)) for s in spans]


def read(spans: list[Span]) -> TargetLogCounts | None:
    """The lines the logs gained between their start and end, by kind. None: no log to read, one
    that shrank (it was replaced) or was not there at the end, or a stretch over MAX_BYTES."""
    if not spans:
        return None
    counts: Counter[str] = Counter()
    for span in spans:
        if span.end is None or span.end < span.start or span.end - span.start > MAX_BYTES:
            return None
        try:
            with span.path.open("rb") as log:
                log.seek(span.start)
                counts.update(count_lines(log, span.end - span.start, span.source))
        except OSError:
            return None
    return TargetLogCounts(**{k: counts[k] for k in (*TARGET_LOG_KINDS, "lines_unread")},
                           logs=sorted({s.source for s in spans}))


def count_lines(log: BinaryIO, length: int, source: str) -> Counter[str]:
    """The lines of `length` bytes of a `source` log, by kind ("lines_unread" for those that are
    not lines of it); a line's kind as `kind_of` says."""
    counts: Counter[str] = Counter()
    for line in loglines.lines(log, length, MAX_LINE):
        kind = "lines_unread" if line is None else kind_of(line.rstrip(b"\r\n"), source)
        if kind is not None:
            counts[kind] += 1
    return counts


def kind_of(line: bytes, source: str) -> str | None:
    """The kind of one line of a `source` log: one of TargetLogCounts's kinds, "lines_unread" for a
    line not of its log's format, None for a line that is no error (nginx below warn, gunicorn's
    INFO, a blank line)."""
    if not line.strip():
        return None
    if source == "nginx":
        found = _NGINX.fullmatch(line)
        if found is None:
            return "lines_unread"
        return _first(found.group(2), NGINX_KINDS) if found.group(1) in _NGINX_COUNTED else None
    if source == "gunicorn":
        found = _GUNICORN.fullmatch(line)
        if found is None:  # a traceback's lines follow the entry that logged it
            return "lines_unread"
        return _first(found.group(2), GUNICORN_KINDS) if found.group(1) in _GUNICORN_COUNTED else None
    # uWSGI's lines have no common format: every one written while requests are served is an event.
    return _first(line, UWSGI_KINDS)


def _first(message: bytes, kinds: tuple[tuple[str, re.Pattern[bytes]], ...]) -> str:
    return next((kind for kind, pattern in kinds if pattern.search(message)), "other")


def phrase(counts: TargetLogCounts) -> str:
    """The counts in words, for a note: "1,204 requests refused by nginx's limit_req (503)"."""
    said = [f"{n:,} {TARGET_LOG_WORDS[kind]}" for kind, n in counts.counted().items()]
    return "; ".join(said) if said else "no error line"


def evidence_note(tool: str, counts: Counts, log: TargetLogCounts | None) -> str | None:
    """For a cell whose tool gives no status codes (siege, ab, h2load's summary), what the target's
    own log says of 503s: the tool counted failures it could not tell apart, nginx says why."""
    if log is None or not log.limit_req or counts.status_codes:
        return None
    failed = (f"{tool} counted {counts.requests_failed:,} failed requests" if counts.requests_failed is not None
              else f"{tool} counts no failed requests")
    return (f"{failed} without their status codes; nginx's error log shows {log.limit_req:,} requests refused by "
            "its limit_req (503) during the cell, any of toolbench's probe's included")
