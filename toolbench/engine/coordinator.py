"""The parent process: starts the workers, gives them one start time, shows
progress, enforces the hard deadline, handles Ctrl-C, and collects the results."""
from __future__ import annotations

import multiprocessing
import os
import resource
import signal
import threading
import time
from dataclasses import dataclass, field
from multiprocessing.connection import Connection, wait
from typing import Any, Callable

from toolbench.engine import worker
from toolbench.engine.client import clock
from toolbench.engine.options import EngineError, EngineOptions, Target, parse_url, request_bytes, split, validate
from toolbench.engine.recorder import WorkerResult
from toolbench.engine.tls import client_context

STARTUP_TIMEOUT_S = 30.0  # imports and connection set-up in every worker
START_DELAY_NS = 50_000_000  # between the start message and the common start time
KILL_GRACE_S = 5.0  # past the workers' own stop, before the parent kills them
# Descriptors a worker holds beside its connections: stdio, its pipe, the event loop's and
# the epoll set's, the files Python and uvloop keep open.
RESERVED_FDS = 64

Progress = Callable[[float, int, int], None]  # elapsed seconds, requests, errors


@dataclass
class Collected:
    """The raw material of one run, before it becomes a RunResult."""

    options: EngineOptions
    target: Target
    workers: int
    results: list[WorkerResult] = field(default_factory=list)
    error: str | None = None
    unreachable: bool = False
    interrupted: bool = False
    started_at: float | None = None  # time.time() at the start of the measured window
    wall_s: float = 0.0
    cpu_user_s: float = 0.0
    cpu_system_s: float = 0.0


def run(opts: EngineOptions, progress: Progress | None = None) -> Collected:
    """Runs the load. Ctrl-C stops it early and still returns what was measured;
    a second Ctrl-C abandons the results."""
    validate(opts)
    target = parse_url(opts.url)
    if target.tls:
        client_context(opts)  # a CA file that cannot be read: one line here, not one per worker
    plans = _plans(opts, target)
    raise_fd_limit(max(plan.slots for plan in plans) + RESERVED_FDS, opts.connections)
    out = Collected(options=opts, target=target, workers=len(plans))
    usage0, wall0 = _cpu(), time.monotonic()
    # Ctrl-C is held back while the workers fork: one landing between a fork and the worker's
    # own SIG_IGN killed that worker half-made, and its siblings, holding stdout open, waited
    # for a start that never came (the caller hung). Released inside the handler below.
    held = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        pool = _Pool(plans)
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, held)
        raise
    try:
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, held)
            _drive(pool, out, progress)
        except KeyboardInterrupt:
            out.interrupted = True
            pool.broadcast(("stop",))
            _collect(pool, out, time.monotonic() + KILL_GRACE_S, None)
    except KeyboardInterrupt:
        out.error = "interrupted twice: results abandoned"
    finally:
        pool.close()
    usage1 = _cpu()
    out.wall_s = time.monotonic() - wall0
    out.cpu_user_s, out.cpu_system_s = usage1[0] - usage0[0], usage1[1] - usage0[1]
    return out


def raise_fd_limit(needed: int, connections: int) -> None:
    """Raises this process's soft RLIMIT_NOFILE (the workers inherit it) up to the hard
    limit when a worker needs more descriptors than the soft limit allows; an EngineError
    when even the hard limit is too low."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return
    if hard != resource.RLIM_INFINITY and hard < needed:
        raise EngineError(f"{connections} connections need {needed} file descriptors in a worker, but the hard "
                          f"limit (ulimit -Hn) is {hard}: raise it, or use fewer connections or more workers (-w)")
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard if hard != resource.RLIM_INFINITY else needed, hard))
    except (ValueError, OSError) as exc:
        raise EngineError(f"cannot raise the file descriptor limit from {soft} to {needed}: {exc}") from None


def _plans(opts: EngineOptions, target: Target) -> list[worker.WorkerPlan]:
    count = opts.worker_count()
    if opts.requests is not None:
        count = min(count, opts.requests)
    slots = split(opts.connections, count)
    budgets = split(opts.requests, count) if opts.requests is not None else [None] * count
    request = request_bytes(opts, target)
    firsts = [sum(slots[:i]) for i in range(count)]
    return [worker.WorkerPlan(index=i, options=opts, target=target, request=request, slots=slots[i],
                              first_slot=firsts[i], total_slots=opts.connections, budget=budgets[i],
                              parent_pid=os.getpid(), workers=count)
            for i in range(count)]


def _drive(pool: "_Pool", out: Collected, progress: Progress | None) -> None:
    opts = out.options
    readies = pool.gather("ready", time.monotonic() + STARTUP_TIMEOUT_S + opts.connect_timeout)
    if sum(opened for opened, _ in readies) == 0:
        pool.broadcast(("abort",))
        out.unreachable = True
        out.error = next((e for _, e in readies if e), "no connection could be opened")
        _collect(pool, out, time.monotonic() + KILL_GRACE_S, None)
        return
    t0 = clock() + START_DELAY_NS
    out.started_at = time.time() + START_DELAY_NS / 1e9 + opts.warmup_s
    pool.broadcast(("start", t0))
    deadline = None
    if opts.duration_s is not None:
        deadline = (time.monotonic() + START_DELAY_NS / 1e9 + opts.warmup_s + opts.duration_s
                    + opts.timeout_s + worker.SELF_STOP_GRACE_S + KILL_GRACE_S)
    _collect(pool, out, deadline, progress)


def _collect(pool: "_Pool", out: Collected, deadline: float | None, progress: Progress | None) -> None:
    """Reads ticks and results until every worker has ended or the deadline passes."""
    totals: dict[int, tuple[int, int, int]] = {}  # worker -> (seconds, requests, errors)
    while pool.pending:
        remaining = None if deadline is None else deadline - time.monotonic()
        if remaining is not None and remaining <= 0:
            out.error = out.error or (f"{len(pool.pending)} worker(s) did not stop in time and were "
                                      "killed; their results are lost")
            return
        for index, message in pool.receive(min(remaining, 1.0) if remaining is not None else 1.0):
            kind = message[0]
            if kind == "tick":
                sample = message[2]
                seconds, requests, errors = totals.get(index, (0, 0, 0))
                totals[index] = (seconds + 1, requests + sample.responses + sample.failed,
                                 errors + sample.errors)
                if progress is not None:
                    elapsed = min(t[0] for t in totals.values()) if len(totals) == len(pool.procs) else 0
                    progress(float(elapsed), sum(t[1] for t in totals.values()),
                             sum(t[2] for t in totals.values()))
            elif kind == "result":
                if message[1] is not None:
                    out.results.append(message[1])
                    out.error = out.error or message[1].note
            elif kind == "error":
                out.error = out.error or message[1]


class _Pool:
    """The worker processes and their pipes. Fork when this process has no other
    thread (cheap: nothing to import again), spawn otherwise (fork is unsafe then)."""

    def __init__(self, plans: list[worker.WorkerPlan]) -> None:
        method = "fork" if threading.active_count() == 1 and hasattr(os, "fork") else "spawn"
        ctx: Any = multiprocessing.get_context(method)
        self.procs: list[Any] = []
        self.pipes: list[Connection] = []
        self.pending: set[int] = set()
        for plan in plans:
            mine, theirs = ctx.Pipe()
            inherited = tuple(self.pipes) + (mine,) if method == "fork" else ()
            proc = ctx.Process(target=worker.main, args=(plan, theirs, inherited), daemon=True,
                               name=f"toolbench-engine-{plan.index}")
            proc.start()
            theirs.close()
            self.procs.append(proc)
            self.pipes.append(mine)
            self.pending.add(plan.index)

    def broadcast(self, message: tuple[Any, ...]) -> None:
        for index in list(self.pending):
            try:
                self.pipes[index].send(message)
            except OSError:
                self.pending.discard(index)

    def gather(self, kind: str, deadline: float) -> list[Any]:
        """One `kind` message from every worker, as a list of its fields."""
        got: dict[int, Any] = {}
        while len(got) < len(self.procs):
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise EngineError(f"the workers did not start within {STARTUP_TIMEOUT_S:g}s")
            for index, message in self.receive(min(remaining, 1.0)):
                if message[0] == "error":
                    raise EngineError(message[1])
                if message[0] == kind:
                    got[index] = message[1:]
            if not self.pending:
                raise EngineError("the workers exited before they were ready")
        return [got[i] for i in sorted(got)]

    def receive(self, timeout: float) -> list[tuple[int, tuple[Any, ...]]]:
        """Messages that arrived within `timeout`; a worker whose pipe closed is done."""
        ready = wait([self.pipes[i] for i in self.pending], timeout)
        messages: list[tuple[int, tuple[Any, ...]]] = []
        for pipe in ready:
            assert isinstance(pipe, Connection)
            index = self.pipes.index(pipe)
            try:
                message = pipe.recv()
            except (EOFError, OSError):
                self.pending.discard(index)
                code = self.procs[index].exitcode
                messages.append((index, ("error", f"worker {index} exited unexpectedly (code {code})")))
                continue
            if message[0] in ("result", "error"):
                self.pending.discard(index)
            messages.append((index, message))
        return messages

    def close(self) -> None:
        """Joins the workers, killing any that is still running (by its own PID)."""
        for proc in self.procs:
            proc.join(timeout=0.5 if proc.is_alive() else None)
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=5.0)
        for pipe in self.pipes:
            pipe.close()


def _cpu() -> tuple[float, float]:
    me, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + children.ru_utime, me.ru_stime + children.ru_stime
