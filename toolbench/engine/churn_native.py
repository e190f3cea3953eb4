"""The engine's connections on the C path (_churn.c), with churn.py's interface: keep-alive
off (NativeChurn) and on (NativeKeepAlive).

The C cores do what churn.Churn.send and .ready do (keep-alive off) and what client.Conn
does per request (on), and call back here only where the Python paths leave their inline
path: the open model's next request, the end of the budget, a failure. The pure-Python paths
stay: they run where the extension was not built (no compiler at install) or when
TOOLBENCH_ENGINE_CHURN=python asks for them (their tests), keep-alive on and off alike."""
from __future__ import annotations

import asyncio
import importlib
import os
from typing import TYPE_CHECKING, Any

from toolbench.engine.churn import Churn
from toolbench.engine.tls import TlsChurn

if TYPE_CHECKING:
    from toolbench.engine.load import Load, Slot

PATH_ENV = "TOOLBENCH_ENGINE_CHURN"  # "python": the pure-Python paths even where C is built
HOLD_ENV = "TOOLBENCH_ENGINE_HOLD"  # "0": the keep-alive core never holds the loop (bench_engine.py's engine-nh)


def _native(name: str) -> Any | None:
    if os.environ.get(PATH_ENV) == "python":
        return None
    try:
        module = importlib.import_module("toolbench.engine._churn")
    except ImportError:
        return None
    return getattr(module, name, None)  # None: an older build, without that core


def native_core() -> Any | None:
    """The keep-alive-off C core's type, or None where it is not built or not wanted."""
    return _native("Core")


def native_keepalive() -> Any | None:
    """The keep-alive C core's type, or None where it is not built or not wanted."""
    return _native("KeepAlive")


def churn_path() -> str:
    """Which keep-alive-off path a run takes here: "C" or "Python"."""
    return "C" if native_core() is not None else "Python"


def keepalive_path() -> str:
    """Which keep-alive path a run takes here: "C" or "Python" (client.py's Conn)."""
    return "C" if native_keepalive() is not None else "Python"


def make_churn(load: Load, slots: int) -> Churn | NativeChurn | None:
    """The worker's connection path: keep-alive off, C or churn.py; on, C or None (client.py).
    https runs in Python whatever is built (the C path is plain HTTP): tls.TlsChurn, or None."""
    if load.tls is not None:
        return None if load.keepalive else TlsChurn(load, load.tls, load.tls_resume)
    if load.keepalive:
        keepalive = native_keepalive()
        return NativeKeepAlive(load, slots, keepalive) if keepalive is not None else None
    core = native_core()
    return NativeChurn(load, slots, core) if core is not None else Churn(load)


class NativeChurn:
    """One worker's keep-alive-off connections; a slot's handle is its index in the core."""

    def __init__(self, load: Load, slots: int, core_type: Any, **more: Any) -> None:
        self.load = load
        self.slots: list[Slot] = []
        self.pending: set[int] = set()  # refused at once, counted on the loop's next turn
        self.core = core_type(address=load.target.address, port=load.target.port, request=load.request,
                              slots=slots, head=load.head, closed=not load.open, load=load, rec=load.rec,
                              done=self._done, failed=self._failed, failed_soon=self._failed_soon, **more)
        self.send = self.core.send  # send(handle, scheduled_ns): no Python frame between
        load.loop.add_reader(self.core.fileno(), self.core.ready)

    def fresh(self, slot: Slot) -> int:
        self.slots.append(slot)
        return len(self.slots) - 1

    def idle(self, handle: int) -> bool:
        return not self.core.busy(handle) and handle not in self.pending

    def _done(self, handle: int, now: int) -> None:
        self.slots[handle].done(None, now)

    def _failed(self, handle: int, kind: str) -> None:
        self.slots[handle].failed(kind)

    def _failed_soon(self, handle: int, kind: str) -> None:
        self.pending.add(handle)
        self.load.loop.call_soon(self._failed_at_once, handle, kind)

    def _failed_at_once(self, handle: int, kind: str) -> None:
        self.pending.discard(handle)
        if not self.load.stopped:
            self._failed(handle, kind)

    def window_starts(self) -> int:
        return int(self.core.window_starts())

    def sweep(self, limit: int, connect_limit: int) -> None:
        self.core.sweep(limit, connect_limit)

    def stop(self) -> None:
        fd = self.core.fileno()
        if fd >= 0:
            self.load.loop.remove_reader(fd)
        self.core.stop()


class NativeKeepAlive(NativeChurn):
    """One worker's keep-alive connections (_churn_keepalive.c): opened before the clock
    starts, reused while the server keeps them, reopened when it closes one."""

    def __init__(self, load: Load, slots: int, core_type: Any) -> None:
        self.errors: dict[int, str] = {}  # by slot: why its connection could not be opened before the start
        self.opening = 0
        self.prepared: asyncio.Future[None] | None = None
        self.holds = os.environ.get(HOLD_ENV) != "0"
        super().__init__(load, slots, core_type, counted=load.counted, opened=self._opened,
                         coalesce_ns=load.coalesce_ns)

    async def prepare(self) -> tuple[int, str | None]:
        """Opens every slot's connection before the clock starts, as Load.prepare does on the
        Python path. Returns how many opened and the first slot's error."""
        loop = self.load.loop
        self.prepared = loop.create_future()
        for handle in range(len(self.slots)):
            err = self.core.open(handle)
            if err:
                self._opened(handle, err, pending=False)
            else:
                self.opening += 1
        if self.opening:
            timer = loop.call_later(self.load.connect_timeout_s, self._abandon)
            try:
                await self.prepared
            finally:
                timer.cancel()
        first = min(self.errors, default=None)
        return len(self.slots) - len(self.errors), (self.errors[first] if first is not None else None)

    def _opened(self, handle: int, err: int, pending: bool = True) -> None:
        if err:
            self.errors[handle] = _connect_error(self.load, OSError(err, os.strerror(err)))
        if pending:
            self.opening -= 1
            if not self.opening:
                self._prepared()

    def _abandon(self) -> None:
        """The connect timeout: the connections still opening count as failed to open."""
        for handle in self.core.abandon():
            self.errors[handle] = _connect_error(self.load, asyncio.TimeoutError())
        self.opening = 0
        self._prepared()

    def _prepared(self) -> None:
        if self.prepared is not None and not self.prepared.done():
            self.prepared.set_result(None)

    def hold(self, until_ns: int, wake_fd: int) -> None:
        """Until `until_ns` (the loop's next timer; 0: none), a callback may wait in the core for
        more responses instead of handing the loop back after each batch: in the closed model
        run by time, nothing else needs Python between two timers. `wake_fd` readable (the
        worker's pipe) hands it back at once."""
        if self.holds:
            self.core.hold(until_ns, wake_fd)

    def stop(self) -> None:
        """Drops the requests in flight uncounted, and hands the recorder and the load what
        the core kept: the bytes received, the time-to-first-byte gap, the silent connections,
        the wait between responses and next requests (coalesced reads), the requests it sent by
        itself (Load.issued() counts them), the last response's end."""
        fd = self.core.fileno()
        if fd < 0:
            return
        self.load.loop.remove_reader(fd)
        rx, gap, silent, sent_alone, last_done, linger, lingered = self.core.stop()
        load, rec = self.load, self.load.rec
        rec.received_bytes += rx
        rec.gap_ns += gap
        rec.silent_conns += silent
        rec.linger_ns += linger
        rec.lingered += lingered
        load.final_budget -= sent_alone
        load.last_done_ns = max(load.last_done_ns, last_done)
        self._prepared()


def _connect_error(load: Load, exc: BaseException) -> str:
    """The same line as the Python path's (load._connect_error)."""
    from toolbench.engine.load import _connect_error  # load imports this module

    return _connect_error(exc, load.target, load.connect_timeout_s)
