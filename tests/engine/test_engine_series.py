"""The engine sums its workers' seconds without numpy (engine/result.py): the same
series as the one per-request aggregator (histogram.PerRequest) makes of them."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from toolbench.engine.recorder import Moments, Second, WorkerResult
from toolbench.engine.result import _series
from toolbench.record import histogram

_SECOND = st.builds(Second, second=st.integers(0, 30), responses=st.integers(0, 10**6), failed=st.integers(0, 1000),
                    errors=st.integers(0, 1000), sum_us=st.integers(0, 10**12),
                    max_us=st.one_of(st.none(), st.integers(0, 10**9)))


def _worker(index: int, series: list[Second]) -> WorkerResult:
    return WorkerResult(index=index, hist="", uhist=None, moments=Moments(), umoments=None, codes={}, failures={},
                        received_bytes=0, sent_bytes=0, connects=0, connect_sum_ns=0, connect_max_ns=0,
                        ttfb_sum_ns=0, ttfb_count=0, window_start_ns=0, window_end_ns=0, series=series)


@settings(deadline=None)  # the first example imports numpy (for PerRequest): no timing here
@given(st.lists(st.lists(_SECOND, max_size=8), max_size=4))
def test_the_workers_seconds_sum_as_the_per_request_aggregator_sums_them(workers: list[list[Second]]) -> None:
    results = [_worker(i, series) for i, series in enumerate(workers)]
    tally = histogram.PerRequest("engine", unit_ms=0.001)
    for r in results:
        tally.add_seconds([s.second for s in r.series], [s.responses + s.failed for s in r.series],
                          [s.errors for s in r.series], [s.responses for s in r.series],
                          [s.sum_us for s in r.series], [s.max_us for s in r.series])
    assert _series(results) == tally.series(first=0)
