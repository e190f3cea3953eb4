"""Keep-alive off on the C connection path (_churn.c), with churn.py's interface.

The C core does what churn.Churn.send and .ready do, and calls back here only where
churn.py leaves its inline path: the open model's next request, the end of the budget,
a failure. The pure-Python path stays: it runs where the extension was not built (no
compiler at install) or when TOOLBENCH_ENGINE_CHURN=python asks for it (its tests)."""
from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

from toolbench.engine.churn import Churn

if TYPE_CHECKING:
    from toolbench.engine.load import Load, Slot

PATH_ENV = "TOOLBENCH_ENGINE_CHURN"  # "python": the pure-Python path even where C is built


def native_core() -> Any | None:
    """The C core's type, or None where it is not built or not wanted."""
    if os.environ.get(PATH_ENV) == "python":
        return None
    try:
        return importlib.import_module("toolbench.engine._churn").Core
    except ImportError:
        return None


def churn_path() -> str:
    """Which keep-alive-off path a run takes here: "C" or "Python"."""
    return "C" if native_core() is not None else "Python"


def make_churn(load: Load, slots: int) -> Churn | NativeChurn:
    core = native_core()
    return NativeChurn(load, slots, core) if core is not None else Churn(load)


class NativeChurn:
    """One worker's keep-alive-off connections; a slot's handle is its index in the core."""

    def __init__(self, load: Load, slots: int, core_type: Any) -> None:
        self.load = load
        self.slots: list[Slot] = []
        self.pending: set[int] = set()  # refused at once, counted on the loop's next turn
        self.core = core_type(address=load.target.address, port=load.target.port, request=load.request,
                              slots=slots, head=load.head, closed=not load.open, load=load, rec=load.rec,
                              done=self._done, failed=self._failed, failed_soon=self._failed_soon)
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
