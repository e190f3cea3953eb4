"""What one monitor sample reads: the host (/proc), the tool's process tree (psutil and
/proc/<pid>/fd) and the tool's connections to the target (`ss`). Each reader is cheap
and never raises for a process that went away or a file that cannot be read."""
from __future__ import annotations

import os
import re
import select
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import psutil

SS_TIMEOUT_S = 5.0
_SOCKET_LINK = re.compile(r"^socket:\[(\d+)\]$")
_INODE = re.compile(r"\bino:(\d+)")
_CWND = re.compile(r"\bcwnd:(\d+)")
_RTT = re.compile(r"\brtt:([\d.]+)/")
_RCV_SPACE = re.compile(r"\brcv_space:(\d+)")


@dataclass(frozen=True)
class HostSample:
    cpu_pct_per_core: list[float]  # busy share of each core since the previous sample
    load_1m: float
    load_5m: float
    load_15m: float
    memory_used_bytes: int  # total minus available
    tcp_established: int | None  # host-wide, ESTABLISHED and CLOSE_WAIT (tcpCurrEstab)
    tcp_time_wait: int | None  # host-wide
    tcp_in_use: int | None  # host-wide, IPv4 and IPv6, all states but TIME_WAIT
    tcp_orphans: int | None


@dataclass(frozen=True)
class ToolSample:
    """The tool's whole process tree at one moment."""

    processes: int
    cpu_user_s: float  # cumulative, summed over the processes alive now
    cpu_system_s: float
    cpu_pct: float  # of one core, since the previous sample; may exceed 100 on several cores
    rss_bytes: int
    threads: int
    fds: int  # open file descriptors: files, sockets, pipes
    sockets: int  # socket descriptors among them
    socket_inodes: frozenset[int] = field(default_factory=frozenset)


@dataclass(frozen=True)
class TcpSample:
    """The client side of the connections to the target's port (TIME_WAIT aside)."""

    states: dict[str, int]  # by ss state name: ESTAB, SYN-SENT, FIN-WAIT-1, CLOSE-WAIT, ...
    established: int  # the tool's own established connections
    cwnd_mean: float | None  # segments, over the tool's established connections
    rcv_space_mean: float | None  # bytes
    rtt_mean_ms: float | None


@dataclass(frozen=True)
class ServerTcpSample:
    """The server side of its port: sockets by ss state name (LISTEN aside), and its listen queue."""

    states: dict[str, int]
    established: int
    accept_queue: int | None  # connections waiting to be accepted: a listening socket's Recv-Q
    backlog: int | None  # the listen queue's size: its Send-Q


# host -----------------------------------------------------------------------
def host_reader() -> Callable[[], HostSample]:
    """A reader that keeps the previous CPU times, so each sample gives busy % since the last."""
    state = {"cpu": psutil.cpu_times(percpu=True)}

    def read() -> HostSample:
        now = psutil.cpu_times(percpu=True)
        per_core = [_busy_pct(a, b) for a, b in zip(state["cpu"], now)]
        state["cpu"] = now
        load = os.getloadavg()
        memory = psutil.virtual_memory()
        sockstat = _read_sockstat()
        return HostSample(
            cpu_pct_per_core=per_core, load_1m=load[0], load_5m=load[1], load_15m=load[2],
            memory_used_bytes=memory.total - memory.available,
            tcp_established=_read_curr_estab(), tcp_time_wait=sockstat.get("tw"),
            tcp_in_use=sockstat.get("inuse"), tcp_orphans=sockstat.get("orphan"))

    return read


_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def _busy_pct(before: object, after: object) -> float:
    # Guest time is already inside user and nice on Linux: summing every field would count it twice.
    total = sum(getattr(after, f, 0.0) - getattr(before, f, 0.0) for f in _CPU_FIELDS)
    idle = sum(getattr(after, f, 0.0) - getattr(before, f, 0.0) for f in ("idle", "iowait"))
    return round(100.0 * (total - idle) / total, 1) if total > 0 else 0.0


def _read_sockstat() -> dict[str, int]:
    """/proc/net/sockstat counts sockets in O(1), whatever their number; /proc/net/tcp would
    list every one of them, tens of thousands in TIME_WAIT after a run without keep-alive."""
    found: dict[str, int] = {}
    for name, prefix in (("/proc/net/sockstat", "TCP:"), ("/proc/net/sockstat6", "TCP6:")):
        try:
            text = Path(name).read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith(prefix):
                fields = line.split()[1:]
                for key, value in zip(fields[::2], fields[1::2]):
                    found[key] = found.get(key, 0) + int(value)
    return found


def _read_curr_estab() -> int | None:
    try:
        lines = [line.split() for line in Path("/proc/net/snmp").read_text().splitlines() if line.startswith("Tcp:")]
    except OSError:
        return None
    if len(lines) < 2 or "CurrEstab" not in lines[0]:
        return None
    return int(lines[1][lines[0].index("CurrEstab")])


# the tool's process tree ----------------------------------------------------------
class TreeState:
    """What read_tool keeps between samples: psutil handles (they remember each process's
    start time, so a reused pid is not mistaken for the same process) and the tree's CPU."""

    def __init__(self) -> None:
        self.processes: dict[int, psutil.Process] = {}
        self.cpu_s = 0.0


def read_tool(pid: int, state: TreeState, elapsed_s: float) -> ToolSample | None:
    """The tree under `pid`, or None once the tool is gone.

    The tree's CPU is each live process's own time plus that of the children it has reaped:
    a short-lived child (a shell's `date`, a worker that exited) leaves its time in its
    parent's account, so it is not lost between samples, and a child reaped since the last
    sample moves from its own line to its parent's without being counted twice."""
    root = state.processes.get(pid)
    try:
        if root is None:
            root = state.processes[pid] = psutil.Process(pid)
        if root.status() == psutil.STATUS_ZOMBIE:
            return None
        tree = [root] + root.children(recursive=True)
    except (psutil.NoSuchProcess, psutil.AccessDenied):
        return None
    user = system = total = 0.0
    rss = threads = fds = alive = 0
    inodes: set[int] = set()
    seen = set()
    for proc in tree:
        proc = state.processes.setdefault(proc.pid, proc)
        try:
            with proc.oneshot():
                times = proc.cpu_times()
                rss += proc.memory_info().rss
                threads += proc.num_threads()
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        seen.add(proc.pid)
        alive += 1
        user += times.user + times.children_user
        system += times.system + times.children_system
        count, sockets = _fds(proc.pid)
        fds += count
        inodes |= sockets
    for gone in set(state.processes) - seen:
        del state.processes[gone]
    if alive == 0:
        return None
    total = user + system
    delta, state.cpu_s = total - state.cpu_s, total
    return ToolSample(processes=alive, cpu_user_s=round(user, 3), cpu_system_s=round(system, 3),
                      cpu_pct=round(max(0.0, delta) / elapsed_s * 100.0, 1), rss_bytes=rss, threads=threads,
                      fds=fds, sockets=len(inodes), socket_inodes=frozenset(inodes))


def _fds(pid: int) -> tuple[int, set[int]]:
    """Open descriptors and the inodes of the sockets among them (to find its connections)."""
    folder = f"/proc/{pid}/fd"
    try:
        names = os.listdir(folder)
    except OSError:
        return 0, set()
    inodes = set()
    for name in names:
        try:
            match = _SOCKET_LINK.match(os.readlink(f"{folder}/{name}"))
        except OSError:
            continue
        if match:
            inodes.add(int(match.group(1)))
    return len(names), inodes


# the tool's connections ------------------------------------------------------------
def ss_available() -> bool:
    return shutil.which("ss") is not None


def read_tcp(port: int, tool_inodes: frozenset[int] | None) -> tuple[TcpSample | None, float, str | None]:
    """One `ss` call, filtered in the kernel to connections whose peer is the target's port.
    Returns the sample, the CPU seconds `ss` took, and a problem to note."""
    out, cpu_s, problem = run_ss(["ss", "-tinHe", f"( dport = :{port} )"], "the TCP window and RTT are absent")
    return (parse_ss(out, tool_inodes) if out is not None else None), cpu_s, problem


def read_server_tcp(port: int) -> tuple[ServerTcpSample | None, float, str | None]:
    """The server's side of its port: every socket whose local port it is, listening one included."""
    out, cpu_s, problem = run_ss(["ss", "-tanH", f"( sport = :{port} )"],
                                 "the server's connections by state are absent")
    return (parse_ss_server(out) if out is not None else None), cpu_s, problem


def run_ss(argv: list[str], absent: str) -> tuple[str | None, float, str | None]:
    """The output of one `ss` call, the CPU seconds it took, and a problem to note (then
    saying what is `absent` for it)."""
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
    except OSError as exc:
        return None, 0.0, f"ss could not run ({exc.strerror}): {absent}"
    assert proc.stdout is not None
    out = None
    try:
        out = _read_until_eof(proc.stdout.fileno(), SS_TIMEOUT_S)
    finally:
        if out is None:
            proc.kill()
        # Reaped with wait4 for its CPU time: the monitor's own cost includes its `ss` calls.
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        proc.stdout.close()
    cpu_s = usage.ru_utime + usage.ru_stime
    if out is None:
        return None, cpu_s, f"ss gave no answer within {SS_TIMEOUT_S:g}s: {absent}"
    if proc.returncode != 0:
        return None, cpu_s, f"ss exited with code {proc.returncode}: {absent}"
    return out.decode(errors="replace"), cpu_s, None


def _read_until_eof(fd: int, timeout_s: float) -> bytes | None:
    """All of a pipe, or None when it stays open past the deadline. No thread: select."""
    deadline = time.monotonic() + timeout_s
    chunks = []
    while True:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            return None
        chunk = os.read(fd, 65536)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)


def parse_ss(text: str, tool_inodes: frozenset[int] | None) -> TcpSample:
    """Reads `ss -tinHe` output: a line per socket (state first, `ino:N` among the extras),
    then an indented line of TCP info (`cwnd:10 ... rtt:0.03/0.01 ... rcv_space:65483`).
    Without the tool's inodes, every connection to the port counts as the tool's."""
    states: dict[str, int] = {}
    cwnds: list[int] = []
    rtts: list[float] = []
    spaces: list[int] = []
    mine = established = False
    count = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            state = line.split()[0]
            states[state] = states.get(state, 0) + 1
            inode = _INODE.search(line)
            mine = tool_inodes is None or (inode is not None and int(inode.group(1)) in tool_inodes)
            established = state == "ESTAB"
            count += mine and established
            continue
        if not (mine and established):
            continue
        for pattern, into, kind in ((_CWND, cwnds, int), (_RTT, rtts, float), (_RCV_SPACE, spaces, int)):
            match = pattern.search(line)
            if match:
                into.append(kind(match.group(1)))
    return TcpSample(states=states, established=count, cwnd_mean=_mean(cwnds), rcv_space_mean=_mean(spaces),
                     rtt_mean_ms=_mean(rtts))


def _mean(values: list[int] | list[float]) -> float | None:
    return round(sum(values) / len(values), 3) if values else None


def parse_ss_server(text: str) -> ServerTcpSample:
    """Reads `ss -tanH` output: `STATE RECV-Q SEND-Q LOCAL PEER` per socket."""
    states: dict[str, int] = {}
    queue = backlog = None
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 3 or not (fields[1].isdigit() and fields[2].isdigit()):
            continue  # not a socket line: nothing to count
        if fields[0] == "LISTEN":
            queue = (queue or 0) + int(fields[1])
            backlog = max(backlog or 0, int(fields[2]))
            continue
        states[fields[0]] = states.get(fields[0], 0) + 1
    return ServerTcpSample(states=states, established=states.get("ESTAB", 0), accept_queue=queue, backlog=backlog)
