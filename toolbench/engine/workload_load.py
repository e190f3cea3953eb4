"""One worker's share of a workload (engine.workload), on the engine's Python asyncio path: each
virtual user a coroutine with its own keep-alive connection (or one per request without
keep-alive), sending the requests in order or as a seeded weighted mix, with its data row, its
extracted values and its think time. Closed model: users, or users ramped by stages. Open model:
arrivals at the rate (or the stages' ramped rate), each a new user that runs one iteration (one
request of a mix, or the whole sequence) on a free connection of its worker's share of -c.

Users and arrivals are numbered across the workers: user (or arrival) j belongs to worker
j mod workers, so that every worker ramps alike and data rows are not shared. Every response is
recorded twice, into the run's Recorder and into its request name's, so that the names' figures
add up to the run's exactly. A duck-typed stand-in for load.Load, driven by worker.py alike."""
from __future__ import annotations

import asyncio
import random
from dataclasses import dataclass, field

from toolbench.engine.client import UNLIMITED, clock
from toolbench.engine.load import _connect_error, _connect_kind
from toolbench.engine.options import EngineOptions, Target
from toolbench.engine.recorder import DRAIN_AT, PENDING_MAX, Recorder, RequestPart
from toolbench.engine.tls import client_context, count_handshake
from toolbench.engine.workload import Request, WorkloadSpec
from toolbench.engine.workload_conn import Failed, Response, WorkloadConn
from toolbench.engine.workload_http import OK, judge, request_bytes
from toolbench.engine.workload_stages import arrival_s, users_at
from toolbench.record import histogram

RAMP_STEP_S = 0.02  # how often the closed model's stages are brought to their level


@dataclass
class User:
    index: int  # across the workers
    rng: random.Random
    values: dict[str, str] = field(default_factory=dict)
    conn: WorkloadConn | None = None


class WorkloadLoad:
    def __init__(self, loop: asyncio.AbstractEventLoop, opts: EngineOptions, target: Target, rec: Recorder,
                 slots: int, index: int, workers: int) -> None:
        assert opts.workload is not None
        self.loop, self.opts, self.target, self.rec = loop, opts, target, rec
        self.spec: WorkloadSpec = opts.workload
        self.slots, self.index, self.workers = slots, index, workers
        self.names = {r.name: Recorder(opts.open_model, judging=True) for r in self.spec.requests}
        self.weights = [r.weight for r in self.spec.requests]
        self.timeout_s = opts.timeout_s
        self.tls = client_context(opts) if target.tls else None
        self.tls_args = {"ssl": self.tls, "server_hostname": target.hostname} if self.tls is not None else {}
        self.budget = UNLIMITED
        self.finished: asyncio.Future[None] = loop.create_future()
        self.stopped = self.started = False
        self.stopped_at = self.last_done_ns = 0
        self.crashed: str | None = None
        self.sent_bytes = 0
        self.rx = [0]  # bytes received by every connection, since the window began
        self.conns: set[WorkloadConn] = set()
        self.users: dict[int, asyncio.Task[None]] = {}  # closed model: running users by index
        self.halting: set[int] = set()  # closed model: users told to end after their request
        self.visits: set[asyncio.Task[None]] = set()  # open model: arrivals in progress
        self.idle: list[WorkloadConn] = []  # open model: connections free for the next arrival
        self.free = asyncio.Semaphore(max(1, slots))
        self.driver: asyncio.Task[None] | None = None  # the ramp or the arrivals
        self.iterations = 0  # this worker's, for data rows per iteration
        self.users_peak = 0
        self.visiting = 0  # open model: arrivals holding a connection now
        self.rows_out = False  # the data rows are out (at_end: stop): no user may start

    # ---- what worker.py drives ----

    async def prepare(self) -> tuple[int, str | None]:
        """One probe connection: users connect when they start (stages start them over time)."""
        try:
            _, conn = await asyncio.wait_for(self.loop.create_connection(
                lambda: WorkloadConn(self.loop, [0]), self.target.address, self.target.port, **self.tls_args),
                self.opts.connect_timeout)
        except (OSError, asyncio.TimeoutError) as exc:
            return 0, _connect_error(exc, self.target, self.opts.connect_timeout)
        conn.abort()
        return 1, None

    def start(self, t0_ns: int) -> None:
        self.started = True
        self.t0 = t0_ns
        if self.opts.open_model:
            self.driver = self.loop.create_task(self._guard(self._arrivals()))
        elif self.spec.stages:
            self.driver = self.loop.create_task(self._guard(self._ramp()))
        else:
            for j in range(self.index, self.opts.connections, self.workers):
                self._start_user(j)
            self._maybe_done()

    def window_starts(self, budget: int | None) -> None:
        self.rec.reset()
        for rec in self.names.values():
            rec.reset()
        self.rx[0] = self.sent_bytes = 0
        if budget is not None:
            self.budget = budget

    def hold(self, until_ns: int, wake_fd: int) -> None:
        """Nothing holds the loop: every request runs in Python (Load.hold)."""

    def sweep(self) -> None:
        """Timeouts are per request here (asyncio.wait_for): nothing to sweep."""

    def crash(self, message: str) -> None:
        if self.crashed is None:
            self.crashed = message
        self.stop()

    def stop(self) -> None:
        """Ends the run now: requests in flight are dropped uncounted, as Load.stop does."""
        if self.stopped:
            return
        self.stopped = True
        self.stopped_at = clock()
        self.budget = 0
        for task in [*self.users.values(), *self.visits, *([self.driver] if self.driver else [])]:
            task.cancel()
        for conn in list(self.conns):
            conn.abort()
        if not self.finished.done():
            self.finished.set_result(None)

    def totals(self) -> tuple[int, int, int]:
        """Bytes received; no TTFB gap or silent connections kept here (recorded per response)."""
        return self.rx[0], 0, 0

    def by_request(self) -> list[RequestPart]:
        parts = []
        for name, rec in self.names.items():
            rec.drain()
            hist, _ = rec.histograms()
            parts.append(RequestPart(name=name, hist=histogram.encode(hist), moments=rec.moments,
                                     codes=rec.codes_by_status(), failures=dict(rec.failures),
                                     judged=dict(rec.judged or {})))
        return parts

    # ---- closed model ----

    async def _ramp(self) -> None:
        """Brings the running users to the stages' level every RAMP_STEP_S until the last stage
        ends (its level then holds until the stop)."""
        total = sum(s.duration_s for s in self.spec.stages)
        while True:
            elapsed = (clock() - self.t0) / 1e9
            wanted = set(range(self.index, users_at(self.spec.stages, elapsed), self.workers))
            for j in wanted - set(self.users):
                self._start_user(j)
            self.halting = (set(self.users) - wanted)
            if elapsed >= total:
                self.driver = None
                self._maybe_done()
                return
            await asyncio.sleep(RAMP_STEP_S)

    def _start_user(self, j: int) -> None:
        self.users[j] = self.loop.create_task(self._guard(self._user(j)))
        self.users_peak = max(self.users_peak, len(self.users))

    async def _user(self, j: int) -> None:
        user = User(j, random.Random(f"{self.spec.seed}:{j}"))
        try:
            if not self._take_row(user, per_user=True):
                return
            first = True
            while not self._halted(j):
                if not self._take_row(user, per_user=False):
                    return
                for req in self._iteration(user):
                    if not first:
                        await self._think(user)
                    first = False
                    if self._halted(j):
                        return
                    await self._one(user, req, None)
        finally:
            self._close(user)
            if self.users.get(j) is asyncio.current_task():
                del self.users[j]
            self.halting.discard(j)
            self._maybe_done()

    def _halted(self, j: int) -> bool:
        return self.stopped or self.budget <= 0 or j in self.halting

    def _maybe_done(self) -> None:
        """Every user has ended (a request count spent, the data rows out) and none may start: stop."""
        if self.started and not self.users and not self.visits and self.driver is None:
            self.stop()

    # ---- open model ----

    async def _arrivals(self) -> None:
        n = self.index
        while self.budget > 0 and not self.rows_out:
            due = arrival_s(n, self.spec.stages, self.opts.rate_rps)
            if due is None:
                break
            intended = self.t0 + int(due * 1e9)
            wait = (intended - clock()) / 1e9
            if wait > 0:
                await asyncio.sleep(wait)
            task = self.loop.create_task(self._guard(self._visit(n, intended)))
            self.visits.add(task)
            n += self.workers
        self.driver = None
        self._maybe_done()

    async def _visit(self, n: int, intended: int) -> None:
        """One arrival: a new user that runs one iteration on a free connection of this worker's."""
        user = User(n, random.Random(f"{self.spec.seed}:{n}"))
        try:
            async with self.free:
                self.visiting += 1
                self.users_peak = max(self.users_peak, self.visiting)
                user.conn = self.idle.pop() if self.idle else None
                try:
                    await self._iterate_once(user, intended)
                finally:
                    self.visiting -= 1
        finally:
            self._close(user)
            self.visits.discard(asyncio.current_task())  # type: ignore[arg-type]
            self._maybe_done()

    async def _iterate_once(self, user: User, intended: int) -> None:
        if not self._take_row(user, per_user=True) or not self._take_row(user, per_user=False):
            self.rows_out = True
            return
        for i, req in enumerate(self._iteration(user)):
            if i:
                await self._think(user)
                intended = clock()
            if self.budget <= 0 or self.stopped:
                return
            await self._one(user, req, intended)
        if user.conn is not None and user.conn.usable:
            self.idle.append(user.conn)  # for the next arrival
            user.conn = None

    # ---- one user's steps ----

    def _iteration(self, user: User) -> tuple[Request, ...]:
        if self.spec.order == "sequence":
            return self.spec.requests
        return (user.rng.choices(self.spec.requests, self.weights)[0],)

    def _take_row(self, user: User, per_user: bool) -> bool:
        """Fills the user's values from its data row (per user: once, by its index; per iteration:
        each time, by this worker's count of iterations). False: the rows are out (at_end: stop)."""
        data = self.spec.data
        if data is None or (data.per == "user") != per_user:
            return True
        if per_user:
            k = user.index
        else:
            k = self.index + self.iterations * self.workers
            self.iterations += 1
        if k >= len(data.rows) and data.at_end == "stop":
            return False
        user.values.update(zip(data.columns, data.rows[k % len(data.rows)]))
        return True

    async def _think(self, user: User) -> None:
        think = self.spec.think
        if think is not None:
            low, high = think
            await asyncio.sleep(low if low == high else user.rng.uniform(low, high))

    async def _one(self, user: User, req: Request, intended: int | None) -> None:
        """Sends one request and records how it ended; `intended`: the open model's due time."""
        self.budget -= 1
        data = request_bytes(req, user.values, self.target.host, self.opts.keepalive)
        started = clock()
        try:
            if user.conn is None or not user.conn.usable:
                self._close(user)
                user.conn = await self._connect()
            self.sent_bytes += len(data)
            response = await asyncio.wait_for(user.conn.send(data, req.keeps_body, req.method == "HEAD"),
                                              self.timeout_s)
        except Failed as failed:
            self._failed(user, req.name, failed.kind)
            return
        except asyncio.TimeoutError:
            self._failed(user, req.name, "timeout")
            return
        verdict, taken = judge(req, response.status, response.body, response.body_bytes)
        user.values.update(taken)
        self._record(req.name, response, verdict, started if intended is None else min(intended, started), started)
        if not (self.opts.keepalive and response.keepalive):
            self._close(user)

    async def _connect(self) -> WorkloadConn:
        started = clock()
        try:
            _, conn = await asyncio.wait_for(self.loop.create_connection(
                lambda: WorkloadConn(self.loop, self.rx), self.target.address, self.target.port, **self.tls_args),
                self.opts.connect_timeout)
        except (OSError, asyncio.TimeoutError) as exc:
            raise Failed(_connect_kind(exc)) from None
        self.rec.connected(clock() - started)
        if self.tls is not None:
            count_handshake(self.rec, conn.transport)
        self.conns.add(conn)
        return conn

    def _close(self, user: User) -> None:
        if user.conn is not None:
            if user.conn.waiter is not None:
                user.conn.abort()  # a request in flight: its answer will never be read
            else:
                _close(user.conn)
            self.conns.discard(user.conn)
            user.conn = None

    def _failed(self, user: User, name: str, kind: str) -> None:
        self._close(user)
        if self.stopped:
            return
        self.rec.fail(kind)
        self.names[name].fail(kind)
        self.last_done_ns = clock()

    def _record(self, name: str, r: Response, verdict: str, origin: int, started: int) -> None:
        """One response, into the run's recorder and its name's: latency from `origin` (the start,
        connect included, or the open model's due time), and from the start where uncorrected."""
        if self.stopped:
            return
        latency = r.done_ns - origin
        gap = latency - (r.first_ns - r.sent_ns)  # latency not spent waiting for the first byte
        for rec in (self.rec, self.names[name]):
            rec.lat.append(latency)
            if rec.ulat is not None:
                rec.ulat.append(r.done_ns - started)
            if r.status != 200 and 0 <= r.status < len(rec.codes):
                rec.codes[r.status] += 1
            if verdict != OK and rec.judged is not None:
                rec.judged[verdict] += 1
            rec.gap_ns += gap
            if len(rec.lat) >= DRAIN_AT and rec is not self.rec:
                rec.drain()
                if len(rec.pending) > PENDING_MAX:
                    rec.histograms()
        self.last_done_ns = r.done_ns

    async def _guard(self, work: "asyncio.Future[None] | object") -> None:
        """Runs a user, an arrival or the driver: a bug ends the run with a message, never a hang."""
        try:
            await work  # type: ignore[misc]
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            self.crash(f"workload: {type(exc).__name__}: {exc}")


def _close(conn: WorkloadConn) -> None:
    if conn.transport is not None:
        conn.transport.close()
