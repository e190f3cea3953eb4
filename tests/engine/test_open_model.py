"""The open model's account of its schedule: the sends due in its window (the rate × the
window), those sent, those late and never sent, in balance with the requests that ended,
and said when it could not keep up. Nothing here asserts a timing a busy machine may miss:
only what the engine's own account guarantees."""
from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from helpers.engine_servers import delayed, serve
from toolbench.engine import coordinator
from toolbench.engine.coordinator import Collected
from toolbench.engine.load import Slot
from toolbench.engine.options import EngineOptions
from toolbench.engine.recorder import LATE_NS, Recorder, Schedule
from toolbench.engine.result import run_result
from toolbench.engine.summary import BACKLOG_NOTE, render
from toolbench.record.schema import RunResult, Status
from toolbench.servers.process import RunningTarget


def run(url: str, **kw: Any) -> tuple[Collected, RunResult]:
    collected = coordinator.run(EngineOptions(url=url + "/", **kw))
    return collected, run_result(collected)


def schedules(collected: Collected) -> list[Schedule]:
    found = [r.schedule for r in collected.results]
    assert found and all(s is not None for s in found)
    return [s for s in found if s is not None]


def backlog_note(result: RunResult) -> str | None:
    return next((n for n in result.measurement.notes if n.startswith(f"{BACKLOG_NOTE}: ")), None)


@pytest.mark.parametrize("workers", [1, 2])
def test_the_sends_due_are_the_rate_times_the_window_and_balance_with_what_ended(
        nginx: RunningTarget, workers: int) -> None:
    rate, conns, duration = 2000.0, 20, 2.0
    collected, result = run(nginx.base_url, connections=conns, duration_s=duration, rate_rps=rate, workers=workers)
    assert result.outcome.status is Status.OK
    per_worker = rate / conns  # each connection's share of the rate
    sent_rps = 0.0
    for r, s, slots in zip(collected.results, schedules(collected), [conns // workers] * workers):
        window_s = s.window_ns / 1e9
        # The window ends at the nominal end, or LATE_NS before a stop that came sooner.
        assert duration - LATE_NS / 1e9 - 0.005 <= window_s <= duration
        # Each connection's sends are due at a fixed interval: the window holds its share, give or take one.
        assert abs(s.intended - per_worker * slots * window_s) <= slots
        assert 0 <= s.sent <= s.intended and s.never_sent == s.intended - s.sent
        # Every request that ended in the window was sent: due in it, or after its end and before the
        # stop; the sends of the window not ended are in flight at the stop, one per connection at most.
        tail_s = (r.window_end_ns - r.window_start_ns) / 1e9 - window_s
        ended = sum(r.codes.values()) + sum(r.failures.values())
        assert s.sent - slots <= ended <= s.sent + per_worker * slots * tail_s + slots
        sent_rps += s.sent / window_s
    # The rate the result gives is the rate sent, by that account.
    assert result.measurement.rates.rps == pytest.approx(sent_rps)
    # The run says so exactly when its account has a late or missing send; "could not keep up"
    # only when a send was never made or the rate fell short by more than 0.5 %.
    late = any(s.late or s.never_sent for s in schedules(collected))
    assert (backlog_note(result) is not None) == late
    asked = result.identity.rate_rps or 0.0
    short = any(s.never_sent for s in schedules(collected)) or \
        (1 - (result.measurement.rates.rps or 0.0) / asked) * 100 > 0.5
    assert ("could not keep up" in render(result)) == (late and short)


def test_one_connection_far_below_the_rate_says_it_could_not_keep_up() -> None:
    # 20 ms a response on one connection carries at most 50 requests/s: 500/s is ten times that.
    with serve(delayed(0.02)) as (url, _):
        collected, result = run(url, connections=1, workers=1, duration_s=1.5, rate_rps=500.0)
    assert result.outcome.status is Status.OK
    (s,) = schedules(collected)
    window_s = s.window_ns / 1e9
    assert abs(s.intended - 500.0 * window_s) <= 1
    assert s.sent <= window_s / 0.02 + 1 and s.never_sent == s.intended - s.sent > s.intended / 2
    # Every send after the first waited for the one before: each is late; none is due after the window.
    assert s.sent - 1 <= s.late <= s.sent and s.worst_late_ns > LATE_NS
    ended = result.measurement.counts.requests_total or 0
    assert s.sent - 1 <= ended <= s.sent  # one may be in flight at the stop
    assert result.measurement.rates.rps == pytest.approx(s.sent / window_s)
    note = backlog_note(result)
    assert note is not None
    assert note.startswith(f"{BACKLOG_NOTE}: could not keep up: {s.late:,} sends late, "
                           f"worst {s.worst_late_ns / 1e6:,.1f} ms, {s.never_sent:,} never sent, of {s.intended:,} due")
    assert "1 connection, at the mean latency from the actual send, carries about" in note
    assert "the connections were the limit (more, -c, would send more" in note
    shown = render(result)
    assert f"  could not keep up: {s.late:,} sends late, worst {s.worst_late_ns / 1e6:,.1f} ms" in shown
    assert f"    sent {result.measurement.rates.rps:,.0f}/s of the 500/s asked" in shown


def test_a_run_stopped_by_a_count_owes_nothing_past_it(nginx: RunningTarget) -> None:
    collected, result = run(nginx.base_url, connections=4, workers=1, requests=300, rate_rps=1000.0)
    (s,) = schedules(collected)
    assert s.window_ns == 0 and s.intended == s.sent == 300 and s.never_sent == 0
    assert result.measurement.counts.requests_total == 300
    # No window of its own: the rate is the requests over the run's duration.
    assert result.measurement.rates.rps == pytest.approx(300 / result.measurement.timing.duration_s)


def test_a_closed_model_run_has_no_schedule(nginx: RunningTarget) -> None:
    collected, result = run(nginx.base_url, connections=2, workers=1, requests=50)
    assert [r.schedule for r in collected.results] == [None]
    assert backlog_note(result) is None


def _slot(interval: int, origin: int, sent: int) -> Slot:
    slot = Slot(SimpleNamespace(churn=None), interval, 0)  # type: ignore[arg-type]
    slot.origin, slot.sent = origin, sent
    return slot


@pytest.mark.parametrize(("start", "end", "sent", "due"), [
    (1000, 1050, 99, (5, 5)),  # due at 1000, 1010, ... 1040: the start counts, the end does not
    (1001, 1051, 99, (5, 5)),  # 1010 ... 1050
    (900, 1030, 99, (3, 3)),  # nothing was due before the first send
    (1000, 1050, 2, (5, 2)),  # two went out: three never did
    (1020, 1050, 2, (3, 0)),  # the two sent were due before the window
    (1020, 1050, 4, (3, 2)),
    (1050, 1050, 9, (0, 0)),
])
def test_a_slots_sends_due_in_a_window_and_those_sent(start: int, end: int, sent: int, due: tuple[int, int]) -> None:
    assert _slot(10, 1000, sent).due(start, end) == due


def test_a_slot_that_never_began_owes_nothing() -> None:
    assert _slot(10, 0, 0).due(0, 10**9) == (0, 0)
    assert _slot(0, 1000, 0).due(0, 10**9) == (0, 0)  # closed model: no interval


def test_draining_a_little_at_a_time_gives_the_same_second_as_at_once() -> None:
    values = [1_000_000 + 7919 * i % 3_000_000 for i in range(5000)]
    once, bits = Recorder(True), Recorder(True)
    for rec in (once, bits):
        rec.fail("timeout")
    for i, v in enumerate(values):
        for rec in (once, bits):
            rec.lat.append(v)
            assert rec.ulat is not None
            rec.ulat.append(v // 2)
        if i % 777 == 0:
            bits.drain()
    assert bits.flush(0) == once.flush(0)
    assert bits.histograms()[0].get_total_count() == once.histograms()[0].get_total_count() == len(values)
    assert bits.moments == once.moments and bits.umoments == once.umoments
    assert bits.flush(1) == once.flush(1)  # the next second starts from nothing
    assert once.series[1].responses == 0 and once.series[1].max_us is None
