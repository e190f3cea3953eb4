"""One worker process: its own uvloop loop driving its share of the connections.

Protocol with the parent over a Pipe: the worker opens its connections and sends
("ready", opened, error); the parent answers ("start", t0_ns) or ("abort",); the
worker sends ("tick", index, Second) once a second and ("result", WorkerResult)
or ("error", text) at the end. ("stop",) or the pipe closing ends it early."""
from __future__ import annotations

import asyncio
import gc
import os
import signal
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any, Callable

from toolbench.engine.client import clock
from toolbench.engine.load import Load
from toolbench.engine.options import EngineOptions, Target
from toolbench.engine.recorder import Recorder, WorkerResult
from toolbench.engine.workload_load import WorkloadLoad
from toolbench.record import histogram

# After its last second a worker stops itself even if the parent never says so.
SELF_STOP_GRACE_S = 5.0


@dataclass(frozen=True)
class WorkerPlan:
    index: int
    options: EngineOptions
    target: Target
    request: bytes
    slots: int
    first_slot: int
    total_slots: int
    budget: int | None  # this worker's share of -n
    parent_pid: int
    workers: int = 1  # how many workers there are (a workload numbers its users across them)


def main(plan: WorkerPlan, pipe: Connection, inherited: tuple[Connection, ...] = ()) -> None:
    """Process entry point. Never raises: a failure goes to the parent as one line."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})  # held back by the parent while it forked
    for end in inherited:  # the parent's ends, inherited through fork: close them so EOF works
        end.close()
    import uvloop

    # The hot path allocates no cycles: collect rarely, and never scan what set-up made.
    gc.freeze()
    gc.set_threshold(50_000, 20, 100)
    loop = uvloop.new_event_loop()
    asyncio.set_event_loop(loop)
    message: tuple[Any, ...]
    try:
        message = ("result", loop.run_until_complete(_run(plan, pipe)))
    except Exception as exc:
        message = ("error", f"worker {plan.index}: {type(exc).__name__}: {exc}")
    try:
        pipe.send(message)
    except (OSError, ValueError):
        pass  # the parent is gone; nothing left to tell


async def _run(plan: WorkerPlan, pipe: Connection) -> WorkerResult | None:
    loop = asyncio.get_running_loop()
    opts = plan.options
    rec = Recorder(opts.open_model, judging=opts.workload is not None)
    load: Load | WorkloadLoad
    if opts.workload is not None:  # several requests: the Python path (workload_load.py), never the C one
        load = WorkloadLoad(loop, opts, plan.target, rec, plan.slots, plan.index, plan.workers)
    else:
        load = Load(loop, opts, plan.target, plan.request, rec, plan.slots, plan.first_slot, plan.total_slots)
    loop.set_exception_handler(lambda _, context: load.crash(_describe(context)))
    opened, error = await load.prepare()
    pipe.send(("ready", opened, error))
    message = await _receive(loop, pipe)
    if message[0] != "start":
        load.stop()
        return None
    t0: int = message[1]
    window = t0 + int(opts.warmup_s * 1e9)
    loop.add_reader(pipe.fileno(), _on_pipe, pipe, load)
    timers = _Timers(loop, plan, load, pipe, window)
    if opts.warmup_s > 0:
        def warmed_up() -> None:
            load.window_starts(plan.budget)
            timers.start_ticks()
        timers.at(window, warmed_up)
    else:
        load.window_starts(plan.budget)
        timers.start_ticks()
    timers.at(t0, lambda: load.start(t0))
    timers.every(min(0.25, opts.timeout_s / 4), load.sweep)
    if opts.duration_s is not None:
        timers.at(window + int(opts.duration_s * 1e9), load.stop)
        timers.at(window + int((opts.duration_s + opts.timeout_s + SELF_STOP_GRACE_S) * 1e9), load.stop)
    await load.finished
    # A timed run ends at its stop; a counted one with its last answer.
    end = load.stopped_at if opts.duration_s is not None else max(load.last_done_ns, window)
    timers.cancel()
    loop.remove_reader(pipe.fileno())
    await asyncio.sleep(0)  # lets the aborted connections report their last counts
    rec.flush(timers.seconds)
    return _result(plan, load, rec, window, end)


class _Timers:
    """Timers at absolute clock() times; the per-second tick that feeds the series. The load
    is told when the first is due: until then the C keep-alive core may hold the loop."""

    def __init__(self, loop: asyncio.AbstractEventLoop, plan: WorkerPlan, load: "Load | WorkloadLoad",
                 pipe: Connection, window: int) -> None:
        self.loop, self.plan, self.load, self.pipe, self.window = loop, plan, load, pipe, window
        self.handles: list[asyncio.TimerHandle] = []
        self.seconds = 0  # seconds flushed so far
        self.due: dict[int, int] = {}  # the pending timers' times, by serial number
        self.serial = 0

    def at(self, when_ns: int, callback: Callable[[], Any]) -> None:
        self.handles.append(self._later(when_ns, callback))

    def every(self, interval_s: float, callback: Callable[[], Any]) -> None:
        def run() -> None:
            callback()
            self.handles.append(self._later(clock() + int(interval_s * 1e9), run))
        self.handles.append(self._later(clock() + int(interval_s * 1e9), run))

    def _later(self, when_ns: int, callback: Callable[[], Any]) -> asyncio.TimerHandle:
        self.serial += 1
        key = self.serial
        self.due[key] = when_ns

        def run() -> None:
            del self.due[key]
            callback()
            self._hold()
        handle = self.loop.call_later(max(0.0, (when_ns - clock()) / 1e9), run)
        self._hold()
        return handle

    def _hold(self) -> None:
        # The pipe wakes a held core: the parent's stop is not kept waiting for a timer.
        self.load.hold(min(self.due.values(), default=0), self.pipe.fileno())

    def start_ticks(self) -> None:
        self.at(self.window + 1_000_000_000, lambda: self.tick(1))

    def tick(self, second: int) -> None:
        """Second `second` has ended (counting from 1): flush it, tell the parent."""
        duration = self.plan.options.duration_s
        if self.load.stopped or (duration is not None and second >= duration):
            return  # the stop flushes the last (maybe partial) second itself
        if os.getppid() != self.plan.parent_pid:
            self.load.stop()  # orphaned: the parent died without closing the pipe
            return
        sample = self.load.rec.flush(self.seconds)
        self.seconds += 1
        try:
            self.pipe.send(("tick", self.plan.index, sample))
        except OSError:
            self.load.stop()
            return
        self.at(self.window + (second + 1) * 1_000_000_000, lambda: self.tick(second + 1))

    def cancel(self) -> None:
        for handle in self.handles:
            handle.cancel()
        self.due.clear()
        self._hold()


def _on_pipe(pipe: Connection, load: "Load | WorkloadLoad") -> None:
    try:
        message = pipe.recv()
    except (EOFError, OSError):
        message = ("stop",)  # the parent went away: stop rather than load on for nobody
    if message[0] == "stop":
        load.stop()


async def _receive(loop: asyncio.AbstractEventLoop, pipe: Connection) -> tuple[Any, ...]:
    got: asyncio.Future[tuple[Any, ...]] = loop.create_future()

    def readable() -> None:
        try:
            message = pipe.recv()
        except (EOFError, OSError):
            message = ("abort",)
        if not got.done():
            got.set_result(message)

    loop.add_reader(pipe.fileno(), readable)
    try:
        return await got
    finally:
        loop.remove_reader(pipe.fileno())


def _result(plan: WorkerPlan, load: "Load | WorkloadLoad", rec: Recorder, window: int, end: int) -> WorkerResult:
    rx, gap, silent = load.totals()
    hist, uhist = rec.histograms()
    schedule = None
    workload: dict[str, Any] = {}
    if isinstance(load, WorkloadLoad):
        sent = load.sent_bytes  # its requests differ: counted as they go
        workload = dict(judged=rec.judged, by_request=load.by_request(), users_peak=load.users_peak)
    else:
        sent = load.issued() * len(plan.request)
        if plan.options.open_model:
            schedule = rec.schedule(load.slots, window, end, plan.options.duration_s)
    return WorkerResult(
        index=plan.index,
        hist=histogram.encode(hist),
        uhist=histogram.encode(uhist) if uhist is not None else None,
        moments=rec.moments,
        umoments=rec.umoments,
        codes=rec.codes_by_status(),
        failures=dict(rec.failures),
        received_bytes=rec.received_bytes + rx,
        sent_bytes=sent,
        connects=rec.connects,
        connect_sum_ns=rec.connect_sum_ns,
        connect_max_ns=rec.connect_max_ns,
        ttfb_sum_ns=rec.moments.sum_us * 1000 - rec.gap_ns - gap,
        ttfb_count=rec.moments.count,  # every response has a first byte
        window_start_ns=window,
        window_end_ns=max(end, window),
        series=list(rec.series),
        note=f"worker {plan.index}: {load.crashed}" if load.crashed else None,
        silent_conns=rec.silent_conns + silent,
        linger_ns=rec.linger_ns,
        lingered=rec.lingered,
        tls_handshakes=rec.tls_handshakes,
        tls_resumed=rec.tls_resumed,
        schedule=schedule,
        **workload,
    )


def _describe(context: dict[str, Any]) -> str:
    exc = context.get("exception")
    if exc is not None:
        return f"{type(exc).__name__}: {exc}"
    return str(context.get("message", "unknown error in the event loop"))
