"""SIGTERM and SIGHUP stop a run exactly as Ctrl-C does: the first of them raises
KeyboardInterrupt in the main thread, which stops the tool's process tree and the target,
stores the cell in flight as interrupted and renders what was measured. Any later signal
is only acknowledged, so that the stopping itself is never cut short."""
from __future__ import annotations

import os
import signal
import threading
from types import FrameType, TracebackType

STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopOnSignals:
    def __init__(self) -> None:
        self.received: signal.Signals | None = None
        self._saved: dict[signal.Signals, object] = {}

    def __enter__(self) -> "StopOnSignals":
        if threading.current_thread() is threading.main_thread():
            for sig in STOPPING:
                self._saved[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for sig, handler in self._saved.items():
            signal.signal(sig, handler)  # type: ignore[arg-type]

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        got = signal.Signals(signum)
        if self.received is not None:
            # os.write, not print: a handler may run in the middle of another write to stderr.
            os.write(2, f"toolbench: {got.name}: already stopping (pid {os.getpid()})\n".encode())
            return
        self.received = got
        raise KeyboardInterrupt(got.name)


def exit_code(name: str | None) -> int:
    """128 + the signal's number, as a shell reports a process the signal ended: 130 for
    Ctrl-C (SIGINT), 143 for SIGTERM, 129 for SIGHUP."""
    try:
        return 128 + int(signal.Signals[name]) if name else 128 + int(signal.SIGINT)
    except KeyError:
        return 128 + int(signal.SIGINT)
