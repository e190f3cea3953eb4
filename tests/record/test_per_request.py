"""The one per-request aggregator (toolbench.record.histogram.PerRequest)."""
from __future__ import annotations

import numpy as np
import pytest

from toolbench.errors import ParseError
from toolbench.record import histogram
from toolbench.record.numbers import MAX_VALUE


def _arr(*values: int) -> np.ndarray:
    return np.asarray(values, np.int64)


def test_tally_histogram_and_series_come_from_one_pass() -> None:
    agg = histogram.PerRequest("ab")
    agg.add(_arr(100, 100, 102), _arr(3, 5, 7), np.asarray([False, True, False]))
    assert agg.stats_ms() == {"min_ms": 3.0, "max_ms": 7.0, "mean_ms": 5.0, "stdev_ms": pytest.approx((8 / 3) ** 0.5)}
    assert agg.histogram().get_total_count() == 3
    series = agg.series()
    assert [(s.second, s.requests, s.errors, s.latency_mean_ms, s.latency_max_ms) for s in series] == \
        [(0, 2, 1, 4.0, 5.0), (1, 0, 0, None, None), (2, 1, 0, 7.0, 7.0)]


def test_parts_merged_give_the_figures_of_the_whole() -> None:
    whole, a, b = (histogram.PerRequest("jmeter") for _ in range(3))
    seconds, times = _arr(5, 9, 7, 5, 12), _arr(1, 200, 30, 4, 0)
    whole.add(seconds, times)
    a.add(seconds[3:], times[3:])
    b.add(seconds[:3], times[:3])
    a.merge(b)
    assert (a.tally == whole.tally).all() and a.series() == whole.series()
    assert histogram.encode(a.histogram()) == histogram.encode(whole.histogram())


def test_seconds_already_summed_and_bucket_tallies() -> None:
    agg = histogram.PerRequest("engine", unit_ms=0.001)
    agg.add_seconds([0, 2], [3, 1], [1, 1], [2, 0], [3000, 0], [2000, None])
    assert [(s.second, s.requests, s.errors, s.latency_mean_ms, s.latency_max_ms) for s in agg.series(first=0)] == \
        [(0, 3, 1, 1.5, 2.0), (1, 0, 0, None, None), (2, 1, 1, None, None)]
    locust = histogram.PerRequest("locust")
    locust.add_tally({10: 3, 1000: 1})
    assert locust.histogram().get_total_count() == 4 and locust.stats_ms()["max_ms"] == 1000.0


def test_a_run_without_requests_has_no_histogram_and_no_series() -> None:
    agg = histogram.PerRequest("ab")
    agg.add(_arr(), _arr())
    assert agg.histogram() is None and agg.series() == [] and agg.stats_ms() is None


@pytest.mark.parametrize("call", [
    lambda a: a.add(_arr(1), _arr(-1)),
    lambda a: a.add(_arr(-5), _arr(1)),
    lambda a: a.add(_arr(1), _arr(MAX_VALUE + 1)),
    lambda a: a.add(_arr(0, histogram.MAX_SERIES_S + 1), _arr(1, 1)),
    lambda a: a.add_tally({5: -1}),
    lambda a: a.add_tally({-5: 1}),
    lambda a: a.add_tally({5: histogram.MAX_COUNT, 6: 1}),
    lambda a: a.add_seconds([1], [-2]),
])
def test_bad_values_are_a_parse_error_naming_the_tool(call) -> None:
    agg = histogram.PerRequest("locust", "out.json")
    with pytest.raises(ParseError, match=r"^locust: .*out\.json"):
        call(agg)
