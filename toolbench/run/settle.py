"""The settle before a cell: what it inherits from the cell before it, measured and bounded.

A cell starts once the scenario's `cooldown` has passed and no connection to or from the target's
port is still open in any state but TIME_WAIT (an established one the previous tool left, one
still closing: FIN_WAIT, CLOSE_WAIT, LAST_ACK), waiting at most `settle` (MethodSpec.settle_max_s),
and no longer than a second in which none of them closed: closing connections go in milliseconds
once their tool has exited, and those a target holds on to (one that never answers keeps every
connection it accepted) would otherwise cost every cell the whole bound.
TIME_WAIT is not waited for: on loopback the kernel reuses such ports (net.ipv4.tcp_tw_reuse), and
bench/bench_repeat.py measured no effect of 13,000 of them on the next cell (docs/measurement.md);
waiting out its 60 s would triple a run. The count at the cell's start is recorded all the same.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

_POLL_S = 0.05
STUCK_S = 1.0  # a wait in which no lingering connection closed ends here
# /proc/net/tcp's state column, in hex: the states a finished cell's connection may linger in
# besides TIME_WAIT (06) and LISTEN (0A).
_LINGERING = {"01": "ESTABLISHED", "02": "SYN_SENT", "03": "SYN_RECV", "04": "FIN_WAIT1", "05": "FIN_WAIT2",
              "07": "CLOSE", "08": "CLOSE_WAIT", "09": "LAST_ACK", "0B": "CLOSING"}
_TABLES = (Path("/proc/net/tcp"), Path("/proc/net/tcp6"))


@dataclass(frozen=True)
class Inherited:
    """What a cell found when it started: handed to the cell's record (observed.CellMachine)."""

    position: int  # 1-based, in the order the run's cells ran
    settle_s: float | None = None  # waited for the previous cell's connections; None: no wait was made
    time_wait_at_start: int | None = None  # host-wide; None: not readable
    lingering_at_start: int | None = None  # connections of the port still open when the wait gave up


def time_wait() -> int | None:
    """Sockets in TIME_WAIT on this machine (the kernel's count, /proc/net/sockstat)."""
    try:
        text = Path("/proc/net/sockstat").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0] == "TCP:" and "tw" in fields:
            value = fields[fields.index("tw") + 1]
            return int(value) if value.isdigit() else None
    return None


def lingering(port: int) -> int:
    """Connections to or from `port` on this machine in a state other than TIME_WAIT or LISTEN."""
    wanted = f"{port:04X}"
    count = 0
    for table in _TABLES:
        try:
            lines = table.read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if len(fields) < 4 or fields[3] not in _LINGERING:
                continue
            if fields[1].rsplit(":", 1)[-1] == wanted or fields[2].rsplit(":", 1)[-1] == wanted:
                count += 1
    return count


def settle(port: int | None, max_s: float, position: int) -> Inherited:
    """Waits until the port's connections are gone (at most `max_s`), and says what was left."""
    if port is None or max_s <= 0:
        return Inherited(position, None, time_wait())
    started = changed = time.monotonic()
    left = lingering(port)
    while left and time.monotonic() - started < max_s and time.monotonic() - changed < STUCK_S:
        time.sleep(_POLL_S)
        now = lingering(port)
        if now < left:
            changed = time.monotonic()
        left = now
    return Inherited(position, round(time.monotonic() - started, 3), time_wait(), left)
