"""Held callbacks on the keep-alive C core (engine/_churn_keepalive_conn.c, ka_ready): in the
closed model run by time, a callback waits in the core's own epoll set for more responses until
the loop's next timer, instead of handing the loop back after every batch. It hands it back at
once when the worker's pipe turns readable (the parent's stop) or Python was called back, and
never holds where Python sends the next request (a request count, the open model).

The core is driven here by hand, with no event loop: each test calls ready() itself. Bounds are
one-sided where the machine's speed could move them (a busy machine delays the server)."""
from __future__ import annotations

import asyncio
import multiprocessing
import os
import threading
import time
from typing import Any, Iterator

import pytest

from helpers.engine_servers import cut_short, delayed, serve
from toolbench.engine.client import clock
from toolbench.engine.options import EngineOptions, parse_url, request_bytes
from toolbench.engine.recorder import Recorder
from toolbench.engine.worker import _Timers

churn = pytest.importorskip("toolbench.engine._churn", reason="the engine's C path is not built here")

DELAY_S = 0.02  # the server's time per response: a connection completes one request per DELAY_S


class _Load:
    """What the core reads of the load in a counted run: whether it stopped, and the budget."""

    def __init__(self, budget: int) -> None:
        self.stopped = False
        self.budget = budget


class Driven:
    """A KeepAlive core of 2 slots against `url`, its callbacks recorded."""

    def __init__(self, url: str, counted: bool) -> None:
        target = parse_url(url + "/")
        request = request_bytes(EngineOptions(url=url + "/", connections=2), target)
        self.rec = Recorder(open_model=False)
        self.calls: list[tuple[str, int, Any]] = []
        self.core = churn.KeepAlive(
            address=target.address, port=target.port, request=request, slots=2,
            head=False, closed=True, counted=counted, load=_Load(10**6), rec=self.rec,
            done=lambda i, now: self.calls.append(("done", i, now)),
            failed=lambda i, kind: self.calls.append(("failed", i, kind)),
            failed_soon=lambda i, kind: self.calls.append(("failed_soon", i, kind)),
            opened=lambda i, err: self.calls.append(("opened", i, err)))

    def start(self) -> None:
        """Opens both connections (ready() until both said so) and sends a request on each."""
        for i in range(2):
            assert self.core.open(i) is None
        deadline = time.monotonic() + 10
        while sum(1 for c in self.calls if c[0] == "opened") < 2 and time.monotonic() < deadline:
            self.core.ready()
        assert [c for c in self.calls if c[0] == "opened"] == [("opened", 0, 0), ("opened", 1, 0)]
        self.calls.clear()
        self.core.window_starts()
        for i in range(2):
            self.core.send(i, clock())

    def ready_when_readable(self) -> None:
        """ready() once the set has a socket ready, as the loop calls it."""
        import select

        poller = select.epoll()
        try:
            poller.register(self.core.fileno(), select.EPOLLIN)
            assert poller.poll(10), "no response in 10 s"
        finally:
            poller.close()
        self.core.ready()

    def responses(self) -> int:
        return len(self.rec.lat)

    def held(self, for_ns: int, wake_fd: int = -1) -> int:
        """ready() under a hold of `for_ns` from now; returns the hold's end."""
        until = clock() + for_ns
        self.core.hold(until, wake_fd)
        self.ready_when_readable()
        return until


class _Held:
    """A load that records what the worker's timers tell it."""

    def __init__(self) -> None:
        self.held: list[tuple[int, int]] = []

    def hold(self, until_ns: int, wake_fd: int) -> None:
        self.held.append((until_ns, wake_fd))


def test_the_worker_tells_the_load_when_its_first_timer_is_due() -> None:
    loop = asyncio.new_event_loop()
    mine, theirs = multiprocessing.Pipe()
    load = _Held()
    timers = _Timers(loop, None, load, mine, window=0)  # type: ignore[arg-type]  # the plan: for ticks only
    fired: list[str] = []
    try:
        now, late = clock(), clock() + 60_000_000_000
        timers.at(late, lambda: fired.append("late"))
        assert load.held[-1] == (late, mine.fileno())
        timers.at(now + 50_000_000, lambda: fired.append("early"))
        assert load.held[-1][0] == now + 50_000_000  # the earlier one
        loop.run_until_complete(asyncio.sleep(0.1))
        assert fired == ["early"] and load.held[-1][0] == late  # then the one left
        timers.every(0.01, lambda: fired.append("sweep"))
        assert now < load.held[-1][0] < late
        timers.cancel()
        assert load.held[-1] == (0, mine.fileno())  # none left: nothing to hold for
    finally:
        loop.close()
        mine.close()
        theirs.close()


@pytest.fixture
def server_url() -> Iterator[str]:
    with serve(delayed(DELAY_S)) as (url, _):
        yield url


@pytest.mark.integration
def test_a_held_callback_reads_on_until_the_timer(server_url: str) -> None:
    d = Driven(server_url, counted=False)
    d.start()
    until = d.held(400_000_000)
    # It returned at the timer, not after its first batch: each connection completed requests
    # one after another meanwhile (20 ms each, so about 40 in all on a quiet machine).
    assert clock() >= until
    assert d.responses() >= 4, d.responses()
    assert d.calls == []  # the core sent each next request itself
    d.core.stop()


@pytest.mark.integration
def test_without_a_timer_each_callback_hands_the_loop_back(server_url: str) -> None:
    d = Driven(server_url, counted=False)
    d.start()
    d.ready_when_readable()
    assert 1 <= d.responses() <= 2  # one batch: what was ready when it was called
    d.core.hold(clock() - 1, -1)  # a timer already due holds nothing either
    d.ready_when_readable()
    assert d.responses() <= 4
    d.core.stop()


@pytest.mark.integration
def test_the_pipe_ends_a_hold_at_once(server_url: str) -> None:
    d = Driven(server_url, counted=False)
    d.start()
    r, w = os.pipe()
    writer = threading.Timer(0.3, os.write, (w, b"x"))
    try:
        writer.start()
        until = d.held(20_000_000_000, r)
        assert clock() < until  # 20 s: what ended the hold was the pipe
        assert d.responses() >= 1
    finally:
        writer.cancel()
        writer.join()
        d.core.stop()
        os.close(r)
        os.close(w)


@pytest.mark.integration
def test_a_request_count_is_never_held(server_url: str) -> None:
    # Counted: the core takes each next request from the load's budget, and a hold does not apply.
    d = Driven(server_url, counted=True)
    d.start()
    until = d.held(20_000_000_000)
    assert clock() < until and 1 <= d.responses() <= 2
    d.core.stop()


@pytest.mark.integration
def test_a_failure_hands_the_loop_back() -> None:
    # Each response is cut short and its connection closed: the core calls Python back (its
    # failed() ends the request, and may give the loop work), so the hold ends then, not at 20 s.
    with serve(cut_short) as (url, _):
        d = Driven(url, counted=False)
        d.start()
        until = d.held(20_000_000_000)
        assert clock() < until
        assert ("failed", 0, "closed") in d.calls or ("failed", 1, "closed") in d.calls, d.calls
        d.core.stop()


@pytest.mark.integration
def test_hold_rejects_what_it_cannot_use() -> None:
    with serve(delayed(DELAY_S)) as (url, _):
        d = Driven(url, counted=False)
        with pytest.raises(ValueError):
            d.core.hold(-1, -1)
        with pytest.raises(ValueError):
            d.core.hold(0, -2)
        with pytest.raises(OSError):
            d.core.hold(0, 10**6)  # not a descriptor
        d.core.stop()
        d.core.hold(0, -1)  # stopped: nothing to hold
