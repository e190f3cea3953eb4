"""Commands on a remote machine over one SSH channel: the quoted command line, the
output streamed into local files as it arrives, and the remote process group that a
timeout or Ctrl-C kills. Used by toolbench.hosts.ssh.SSHHost."""
from __future__ import annotations

import contextlib
import re
import select
import shlex
import time
from pathlib import PurePath
from typing import IO, Callable, Mapping, Sequence

import paramiko

from toolbench.contract.host import Completed
from toolbench.errors import HostError

# Run inside a fresh session (setsid, see _WATCHED), so the shell's pid is the process
# group of the tool and of everything it starts. The group id is the first line on stdout; the
# tool then replaces the shell under the same pid. A missing program is told apart
# from a tool that exits 127 by the group id never being printed.
_LAUNCH = 'command -v "$1" >/dev/null 2>&1 || { echo "$1: not found" >&2; exit 127; }; echo "$$"; exec "$@"'
# The lifeline over SSH: _LAUNCH ($0) runs in a session of its own with /dev/null as its
# input, while a watcher reads the channel's input, which toolbench never closes: it ends
# only when the channel does, toolbench killed with -9 included, and then the watcher kills
# the group. When the tool ends first, the watcher is stopped (its `cat` ends with the
# channel, harmlessly). A background job of a shell without job control does not lead a
# process group, so setsid makes the session without forking: $! is the group's id.
_WATCHED = ('exec 3<&0 </dev/null; setsid sh -c "$0" sh "$@" & pg=$!; '
            '{ cat >/dev/null; kill -KILL "-$pg"; } <&3 >/dev/null 2>&1 & w=$!; exec 3<&-; '
            'wait "$pg"; rc=$?; kill "$w" 2>/dev/null; exit "$rc"')
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_START_TIMEOUT_S = 30.0
# After the tool exits: how long its last output may take to arrive.
_DRAIN_GRACE_S = 5.0
_CHUNK = 65536
_POLL_S = 0.02


def launch_line(argv: Sequence[str], cwd: str | PurePath | None, env: Mapping[str, str] | None,
                prlimit: Sequence[str], taskset: Sequence[str] = ()) -> str:
    """The remote shell's command line. Every value in it is quoted. `taskset` (its words, e.g.
    `taskset -c 0-1`) goes first, so the watcher, the tool and all it forks share its CPUs."""
    if not argv:
        raise HostError("no command to run")
    lines = []
    if cwd is not None:
        lines.append(f"cd -- {shlex.quote(str(cwd))} || exit 126")
    words = ["exec", *taskset]
    if prlimit:
        words += ["prlimit", *prlimit, "--"]
    if env:
        bad = [name for name in env if not _ENV_NAME.fullmatch(name)]
        if bad:
            raise HostError(f"environment variable name {bad[0]!r} cannot be passed to a remote shell")
        words += ["env", *(f"{name}={value}" for name, value in env.items())]
    words += ["sh", "-c", _WATCHED, _LAUNCH, *argv]
    lines.append(" ".join(shlex.quote(word) if i else word for i, word in enumerate(words)))
    return "\n".join(lines)


class Streams:
    """Moves a channel's stdout and stderr into local sinks as they arrive."""

    def __init__(self, channel: paramiko.Channel, out: IO[bytes], err: IO[bytes]) -> None:
        self.channel = channel
        self.out = out
        self.err = err

    def drain(self) -> None:
        channel = self.channel
        while channel.recv_ready():
            self._write(self.out, channel.recv(_CHUNK))
        while channel.recv_stderr_ready():
            self._write(self.err, channel.recv_stderr(_CHUNK))

    def wait_readable(self, seconds: float) -> None:
        # The channel's descriptor wakes on data but not on the exit status, which
        # comes alone at the end: a short poll keeps a command's end from waiting.
        with contextlib.suppress(OSError, ValueError):
            select.select([self.channel], [], [], max(0.0, min(_POLL_S, seconds)))

    def pump_until(self, done: Callable[[], bool], deadline: float) -> bool:
        """Drains until done() or the deadline; True when done."""
        while True:
            self.drain()
            if done():
                self.drain()
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.wait_readable(left)

    def finish(self, grace_s: float = _DRAIN_GRACE_S) -> None:
        """Takes whatever output is still on its way, up to the channel's end of file."""
        channel = self.channel
        self.pump_until(lambda: channel.eof_received or channel.closed, time.monotonic() + grace_s)
        channel.close()

    @staticmethod
    def _write(sink: IO[bytes], data: bytes) -> None:
        sink.write(data)
        sink.flush()  # so that whoever tails the file sees the tool live


class _FirstLine:
    """The sink for stdout until the group id has arrived: keeps the first line, passes the rest on."""

    def __init__(self, sink: IO[bytes]) -> None:
        self.sink = sink
        self.head = b""
        self.line: bytes | None = None

    def write(self, data: bytes) -> int:
        if self.line is not None:
            return self.sink.write(data)
        self.head += data
        if b"\n" in self.head:
            self.line, rest = self.head.split(b"\n", 1)
            if rest:
                self.sink.write(rest)
        return len(data)

    def flush(self) -> None:
        self.sink.flush()


class _Tee:
    """Keeps the start of stderr, for the message when the command cannot start."""

    def __init__(self, sink: IO[bytes]) -> None:
        self.sink = sink
        self.head = b""

    def write(self, data: bytes) -> int:
        if len(self.head) < 4096:
            self.head += data[:4096]
        return self.sink.write(data)

    def flush(self) -> None:
        self.sink.flush()


class RemoteProcess:
    """A tool started on the remote machine. `pid` is its remote process id, which is
    also the id of its process group; `kill_group` kills that group remotely."""

    def __init__(self, label: str, program: str, channel: paramiko.Channel, out: IO[bytes],
                 err: IO[bytes], kill_group: Callable[[int], None], close_after: bool = False) -> None:
        self._label = label
        self._files = (out, err) if close_after else ()
        self._program = program
        self._kill_group = kill_group
        first, tee = _FirstLine(out), _Tee(err)
        self._streams = Streams(channel, first, tee)  # type: ignore[arg-type]
        self.started = time.monotonic()
        try:
            got = self._streams.pump_until(lambda: first.line is not None or channel.exit_status_ready(),
                                           self.started + _START_TIMEOUT_S)
        except BaseException:
            channel.close()
            raise
        if first.line is None or not first.line.strip().isdigit():
            self._streams.finish(grace_s=1.0)
            raise self._start_error(got, channel, tee.head)
        self.pid = int(first.line)
        self._streams = Streams(channel, out, err)
        self.started = time.monotonic()

    def _start_error(self, got: bool, channel: paramiko.Channel, stderr_head: bytes) -> HostError:
        if not got:
            return HostError(f"{self._label}: {self._program}: did not start within {_START_TIMEOUT_S:g}s")
        if channel.exit_status_ready() and channel.recv_exit_status() == 127:
            return HostError(f"{self._label}: {self._program}: not found")
        lines = stderr_head.decode(errors="replace").strip().splitlines()
        why = lines[-1] if lines else f"exit status {channel.recv_exit_status()}"
        return HostError(f"{self._label}: cannot start {self._program}: {why}")

    @property
    def returncode(self) -> int | None:
        """Its exit status once it has exited (as Popen's), else None; -1 for a lost connection."""
        channel = self._streams.channel
        if channel.exit_status_ready():
            return channel.recv_exit_status()
        return -1 if channel.closed else None

    def poll(self) -> int | None:
        """As Popen.poll(): moves its output along and says whether it has exited."""
        if not self._streams.channel.closed:
            self._streams.drain()
        return self.returncode

    def pump_until(self, done: Callable[[], bool], timeout_s: float) -> bool:
        """Moves its output into the local files until done() (e.g. a line there says it is
        ready), it exits, or timeout_s pass; True when done()."""
        channel = self._streams.channel
        self._streams.pump_until(lambda: done() or channel.exit_status_ready() or channel.closed,
                                 time.monotonic() + timeout_s)
        return done()

    def kill(self) -> None:
        """Its remote group killed, from any thread: the channel then ends and wait() returns."""
        self._kill_group(self.pid)

    def wait(self, timeout_s: float) -> Completed:
        """Waits up to timeout_s from the start, then kills the remote group. Whatever the
        tool left running in its group is killed too, so it cannot load the next cell."""
        try:
            return self._wait(timeout_s)
        finally:
            for fh in self._files:
                fh.close()

    def _wait(self, timeout_s: float) -> Completed:
        channel = self._streams.channel
        timed_out = interrupted = False
        try:
            exited = self._streams.pump_until(lambda: channel.exit_status_ready() or channel.closed,
                                              self.started + timeout_s)
            timed_out = not exited
        except KeyboardInterrupt:
            interrupted = True
        wall = time.monotonic() - self.started
        self._kill_group(self.pid)
        lost = channel.closed and not channel.exit_status_ready()
        self._streams.finish()
        if lost and not (timed_out or interrupted):
            raise HostError(f"{self._label}: the connection was lost while {self._program} ran")
        code = None if (timed_out or interrupted or lost) else channel.recv_exit_status()
        # The kernel's CPU and memory account stays on the remote machine: absent, not 0.
        return Completed(code, timed_out, wall, interrupted)
