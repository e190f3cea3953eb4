"""What a workload's cell sent the target, from the access log the bundled nginx keeps for such
cells (toolbench.servers.nginx.ACCESS_LOG_FORMAT), one line a request, seven tab-separated fields:
`$msec $request_method $request_uri $status $bytes_sent $connection_requests $http_user_agent`,
each value JSON-escaped by nginx (escape=json), so that no client can put a tab or a newline in it.

The log is read from the byte offset it had when the cell started to the one it had when it
stopped (as toolbench.servers.tls_log and target_log read theirs), line by line against a strict
pattern: a line that does not match, is longer than MAX_LINE, or was written more than MAX_SECONDS
after the cell's start, is counted as unread, never interpreted. Counted per method and path (the
query left out), by status and per second from the cell's start.

toolbench's probe sends its requests during the cell too, each naming itself with the User-Agent
PROBE_AGENT (toolbench.run.probe sends it): those lines are counted apart (`probe_requests`), not
as the cell's."""
from __future__ import annotations

import collections
import dataclasses
import json
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from toolbench.record.observed import PathRequests, TargetRequests
from toolbench.servers import loglines, tls_log

# A request line and a User-Agent each fit nginx's 8 KiB header buffers; escaped, a byte may take six.
MAX_LINE = 128 * 1024
MAX_BYTES = 1024 * 1024 * 1024  # ~8 million requests of ~130 bytes
MAX_PATHS = 100  # methods and paths kept apart; the rest are `other_requests`
MAX_SECONDS = 24 * 3600

# The User-Agent toolbench's probe sends, so that a target's log tells its requests from the tool's.
PROBE_AGENT = "toolbench-probe"
_PROBE = PROBE_AGENT.encode("ascii")

_LINE = re.compile(rb"(\d{1,12}\.\d{3})\t([A-Z_-]{1,32})\t([^\t\n]+)\t(\d{3})\t\d{1,20}\t(\d{1,20})\t([^\t\n]*)\n")


@dataclass(frozen=True)
class Window:
    """The log and where it stood at a cell's start (and the Unix time then); `end` once it stopped."""

    path: Path
    start: int
    epoch_s: float
    end: int | None = None


def mark(path: str | Path) -> Window:
    """Where the log stands at a cell's start, once it stopped growing (the probe's baseline
    requests, just before, are not the cell's); a log not written yet stands at 0."""
    log = Path(path)
    return Window(log, tls_log.settled_size(log) or 0, time.time())


def ended(window: Window) -> Window:
    """The same log with where it stands at the cell's stop, once it stopped growing: nginx writes
    a request's line as it answers, a moment after the client may have the answer."""
    return dataclasses.replace(window, end=tls_log.settled_size(window.path))


def read(window: Window) -> TargetRequests | None:
    """The requests logged between the window's start and end. None: no end, a log that shrank
    (it was replaced) or is gone, or a stretch over MAX_BYTES."""
    if window.end is None or window.end < window.start or window.end - window.start > MAX_BYTES:
        return None
    try:
        with window.path.open("rb") as log:
            log.seek(0, 2)
            if log.tell() < window.end:
                return None
            log.seek(window.start)
            return counted(log, window.end - window.start, window.epoch_s)
    except OSError:
        return None


@dataclass
class _Tally:
    by_status: collections.Counter[int] = dataclasses.field(default_factory=collections.Counter)
    per_second: collections.Counter[int] = dataclasses.field(default_factory=collections.Counter)

    def add(self, status: int, second: int) -> None:
        self.by_status[status] += 1
        self.per_second[second] += 1


@dataclass(frozen=True)
class _Request:
    method: str
    path: str
    status: int
    second: int
    probe: bool  # sent by toolbench's probe (PROBE_AGENT)


def counted(log: BinaryIO, length: int, epoch_s: float) -> TargetRequests:
    """The requests in the next `length` bytes of `log`, seconds counted from `epoch_s`."""
    tallies: dict[tuple[str, str], _Tally] = {}
    other = unread = probed = 0

    def count(request: _Request) -> None:
        nonlocal other
        key = (request.method, request.path)
        if key not in tallies and len(tallies) >= MAX_PATHS:
            other += 1
            return
        tallies.setdefault(key, _Tally()).add(request.status, request.second)

    for line in loglines.lines(log, length, MAX_LINE):
        if line is not None and not line.endswith(b"\n"):
            continue  # a last line still being written is not yet a request
        request = _request(line, epoch_s) if line is not None else None
        if request is None:
            unread += 1
        elif request.probe:
            probed += 1
        else:
            count(request)
    paths = [PathRequests(method=m, path=p, count=sum(t.by_status.values()),
                          by_status=dict(sorted(t.by_status.items())), per_second=_series(t.per_second))
             for (m, p), t in sorted(tallies.items())]
    return TargetRequests(paths=paths, requests=sum(p.count for p in paths) + other, other_requests=other,
                          probe_requests=probed, lines_unread=unread, started_epoch_s=round(epoch_s, 3))


def _request(line: bytes, epoch_s: float) -> _Request | None:
    found = _LINE.fullmatch(line)
    if found is None:
        return None
    second = int(float(found.group(1)) - epoch_s) if float(found.group(1)) > epoch_s else 0
    uri = _unescaped(found.group(3))
    if second >= MAX_SECONDS or uri is None:
        return None
    method, path = found.group(2).decode("ascii"), uri.partition("?")[0]
    return _Request(method, path, int(found.group(4)), second, found.group(6) == _PROBE)


def _unescaped(value: bytes) -> str | None:
    """A value as nginx's escape=json wrote it, read back; None: not one it writes."""
    try:  # a client's bytes that are not UTF-8 nginx writes as they came
        text = json.loads('"' + value.decode("utf-8", "replace") + '"')
    except ValueError:
        return None
    return text if isinstance(text, str) else None


def _series(per_second: collections.Counter[int]) -> list[int]:
    """Counts per second from second 0 to the last with a request."""
    last = max(per_second, default=-1)
    return [per_second.get(second, 0) for second in range(last + 1)]
