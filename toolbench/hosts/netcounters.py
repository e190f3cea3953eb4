"""The kernel's network counters of a machine, read at a cell's start and end (toolbench.run.serving.CellWatch):
listen-queue overflows and drops, SYN retransmissions, resets sent and received (deltas over the
cell), and the sockets in TIME_WAIT at its end. Read from /proc on this machine, or with `cat`
through the Host interface on another. The counters are the network namespace's, every
process's: whatever else the machine did during the cell is in them too.

Which counter is which (Linux's names; `netstat -s` prints the same):
- listen_overflows: TcpExt ListenOverflows, a SYN or a handshake's last ACK that found the
  accept queue full (the SYN is dropped: the client retransmits it 1 s, then 3 s, ... later);
- listen_drops: TcpExt ListenDrops, every connection dropped at a listening socket, overflows
  included;
- syn_retransmits: TcpExt TCPSynRetrans, SYNs (and SYN-ACKs) this machine sent again;
- resets_sent: Tcp OutRsts, segments sent with RST;
- resets_received: Tcp EstabResets, "connection resets received" in `netstat -s`. Linux keeps no
  count of RST segments received; EstabResets counts connections that went from ESTABLISHED or
  CLOSE_WAIT straight to CLOSED, which a received RST does, and so does this machine's own abort
  of such a connection (also in OutRsts). The TcpExt TCPAbortOn* counters are not taken: they
  count resets this machine sent, not received ones;
- time_wait_at_end: /proc/net/sockstat's `tw` (what `ss -s` shows as timewait), IPv4 and IPv6
  alike, counted by the kernel in O(1) where /proc/net/tcp would list every socket.

The accept queue's peak is not a counter: the server's monitor samples its listening socket
(`listen_queue()`, toolbench.servers.cost.ServerMonitor)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from toolbench.contract.host import Host
from toolbench.errors import HostError
from toolbench.hosts.monitor_read import parse_ss_server, run_ss
from toolbench.record.observed import NetworkCounters

MAX_BYTES = 1 << 20  # /proc/net/netstat and snmp are a few KiB; anything far beyond is not theirs
READ_TIMEOUT_S = 10.0
NETSTAT_FILES = ("/proc/net/netstat", "/proc/net/snmp")
SOCKSTAT = "/proc/net/sockstat"

_HEADER = re.compile(r"([A-Za-z][A-Za-z0-9]*): ([A-Za-z][A-Za-z0-9_]*(?: [A-Za-z][A-Za-z0-9_]*)*)")
_VALUES = re.compile(r"([A-Za-z][A-Za-z0-9]*): (-?[0-9]{1,20}(?: -?[0-9]{1,20})*)")
_SOCKSTAT_TCP = re.compile(r"TCP:((?: [a-z]+ [0-9]{1,20})+)")
# (field, group, counter): where each delta is read
COUNTERS = (("listen_overflows", "TcpExt", "ListenOverflows"), ("listen_drops", "TcpExt", "ListenDrops"),
            ("syn_retransmits", "TcpExt", "TCPSynRetrans"), ("resets_sent", "Tcp", "OutRsts"),
            ("resets_received", "Tcp", "EstabResets"))


class CountersUnreadable(HostError):
    """A counters file that is not what the kernel writes: refused whole, never read in part."""


@dataclass(frozen=True)
class Snapshot:
    """The counters at one moment; a counter this kernel does not keep is None."""

    counters: dict[str, int | None]  # by the field names of COUNTERS
    time_wait: int | None


def parse_pairs(text: str) -> dict[str, dict[str, int]]:
    """/proc/net/netstat and /proc/net/snmp (either, or both one after the other): each group a
    line of names then a line of values, both opened by `Group:`, as many values as names.
    Anything else (a line out of its pair, a group twice, a value that is not a whole number) is
    a CountersUnreadable."""
    if len(text) > MAX_BYTES:
        raise CountersUnreadable(f"the network counters are {len(text)} bytes, more than /proc writes")
    lines = text.splitlines()
    if len(lines) % 2:
        raise CountersUnreadable("the network counters end with a line of names without its values")
    groups: dict[str, dict[str, int]] = {}
    for number in range(0, len(lines), 2):
        names, values = _HEADER.fullmatch(lines[number]), _VALUES.fullmatch(lines[number + 1])
        if names is None or values is None or names.group(1) != values.group(1):
            raise CountersUnreadable(f"line {number + 1 if names is None else number + 2} of the network counters "
                                     "is not a pair of names and values")
        group, keys, counts = names.group(1), names.group(2).split(), values.group(2).split()
        if group in groups or len(keys) != len(counts) or len(set(keys)) != len(keys):
            raise CountersUnreadable(f"the network counters' group {group} is given twice or its names and "
                                     "values differ in number")
        groups[group] = {key: int(count) for key, count in zip(keys, counts)}
    return groups


def parse_time_wait(text: str) -> int | None:
    """The sockets in TIME_WAIT from /proc/net/sockstat's `TCP:` line (`tw N`); None without it."""
    if len(text) > MAX_BYTES:
        raise CountersUnreadable(f"{SOCKSTAT} is {len(text)} bytes, more than /proc writes")
    for line in text.splitlines():
        found = _SOCKSTAT_TCP.fullmatch(line.rstrip())
        if found:
            words = found.group(1).split()
            fields = dict(zip(words[::2], words[1::2]))
            return int(fields["tw"]) if "tw" in fields else None
    return None


def snapshot(counters_text: str, sockstat_text: str | None) -> Snapshot:
    groups = parse_pairs(counters_text)
    found: dict[str, int | None] = {}
    for name, group, counter in COUNTERS:
        value = groups.get(group, {}).get(counter)
        found[name] = value if value is not None and value >= 0 else None  # they count up from 0
    return Snapshot(found, parse_time_wait(sockstat_text) if sockstat_text is not None else None)


def read_here() -> Snapshot:
    """This machine's counters, each file read bounded."""
    texts = [_bounded(Path(name)) for name in NETSTAT_FILES]
    try:
        sockstat: str | None = _bounded(Path(SOCKSTAT))
    except OSError:
        sockstat = None
    return snapshot("".join(texts), sockstat)


def read_on(host: Host) -> Snapshot:
    """Another machine's counters, by `cat` there (through the Host interface)."""
    counters = host.capture(["cat", *NETSTAT_FILES], timeout_s=READ_TIMEOUT_S)
    if counters.exit_code != 0:
        raise CountersUnreadable(f"{host.label}: cat {' '.join(NETSTAT_FILES)} exited with code "
                                 f"{counters.exit_code}")
    sockstat = host.capture(["cat", SOCKSTAT], timeout_s=READ_TIMEOUT_S)
    return snapshot(counters.stdout, sockstat.stdout if sockstat.exit_code == 0 else None)


def _bounded(path: Path) -> str:
    with open(path, "rb") as fh:
        data = fh.read(MAX_BYTES + 1)
    return data.decode("ascii", errors="replace")


def delta(machine: str, start: Snapshot, end: Snapshot, accept_queue_peak: int | None = None) -> NetworkCounters:
    """What the cell added to each counter. A counter that went back (its namespace gone and
    made anew, or a wrap) gives no delta: absent, not 0."""
    figures: dict[str, int | None] = {}
    for name, _, _ in COUNTERS:
        before, after = start.counters.get(name), end.counters.get(name)
        figures[name] = after - before if before is not None and after is not None and after >= before else None
    return NetworkCounters(machine=machine, time_wait_at_end=end.time_wait, accept_queue_peak=accept_queue_peak,
                           **figures)


def listen_queue(port: int) -> tuple[int | None, float]:
    """The connections waiting in the accept queue of the sockets listening on `port` on this
    machine (their Recv-Q, `ss -ltn`: listening sockets only, cheap however many connections
    there are), and the CPU seconds `ss` took. None: ss could not tell."""
    out, cpu_s, _ = run_ss(["ss", "-ltnH", f"( sport = :{port} )"], "the accept queue is absent")
    return (parse_ss_server(out).accept_queue if out is not None else None), cpu_s


Reader = Callable[[], Snapshot]


class MachineCounters:
    """One machine's counters over a cell: read at start() and at stop(). A read that fails
    costs this figure (absent, its reason kept in `problem`), never the cell."""

    def __init__(self, machine: str, read: Reader) -> None:
        self.machine = machine
        self._read = read
        self._start: Snapshot | None = None
        self._end: Snapshot | None = None
        self.problem: str | None = None

    def start(self) -> None:
        self._start = self._try()

    def stop(self) -> None:
        if self._start is not None and self._end is None:
            self._end = self._try()

    def result(self, accept_queue_peak: int | None = None) -> NetworkCounters | None:
        if self._start is None or self._end is None:
            return None
        return delta(self.machine, self._start, self._end, accept_queue_peak)

    def _try(self) -> Snapshot | None:
        try:
            return self._read()
        except (OSError, HostError, UnicodeError) as exc:
            self.problem = f"the {self.machine} machine's network counters are absent: {exc}"
            return None
