"""Merging the parts of a cell run on several generators (toolbench.record.merge), and splitting a
cell's load over them (toolbench.run.scaleout.fleet.split), on recorded real output."""
from __future__ import annotations

import dataclasses

import pytest

from conftest import recorded
from toolbench.adapters.engine import ADAPTER as ENGINE
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.errors import ScenarioError
from toolbench.record import histogram, invariants, merge
from toolbench.record.schema import SecondSample
from toolbench.run.scaleout import fleet as scaleout
from toolbench.scenario.read import GeneratorSpec, HostSpec, StopSpec
from toolbench.scenario.request import RequestSpec


def parts() -> list:
    return [parse_checked(ENGINE, recorded("engine", case, json="json"))
            for case in ("0.1.0-keepalive", "0.1.0-open")]


def test_counts_and_bytes_are_the_sums_and_the_histogram_the_exact_merge():
    a, b = parts()
    m = merge.measurements([a, b], concurrency=8, url="http://127.0.0.1/")
    assert m.counts.requests_total == a.counts.requests_total + b.counts.requests_total
    assert m.counts.requests_ok == a.counts.requests_ok + b.counts.requests_ok
    assert m.transfer.received_bytes == a.transfer.received_bytes + b.transfer.received_bytes
    assert m.histogram == histogram.encode(histogram.merge([a.histogram, b.histogram]))
    hist = histogram.decode(m.histogram)
    assert m.latency.percentiles.p99_ms == pytest.approx(hist.get_value_at_percentile(99) / 1000, rel=0.01)
    assert m.timing.duration_s == max(a.timing.duration_s, b.timing.duration_s)
    invariants.check(m)


def test_a_figure_one_part_lacks_is_absent_never_summed_from_the_others():
    a, b = parts()
    b = dataclasses.replace(b, histogram=None, transfer=dataclasses.replace(b.transfer, received_bytes=None))
    m = merge.measurements([a, b], concurrency=8, url=None)
    assert m.histogram is None and m.transfer.received_bytes is None
    assert m.latency.percentiles.p50_ms is None  # percentiles of parts cannot be added
    assert m.latency.max_ms == max(a.latency.max_ms, b.latency.max_ms)


def test_series_are_summed_second_by_second():
    one = [SecondSample(0, 10, 0, 1.0, 2.0), SecondSample(1, 20, 1, 3.0, 4.0)]
    two = [SecondSample(0, 30, None, 2.0, 5.0)]
    summed = merge.series([one, two])
    assert [(s.second, s.requests) for s in summed] == [(0, 40), (1, 20)]
    assert summed[0].errors is None and summed[0].latency_mean_ms == pytest.approx((10 * 1.0 + 30 * 2.0) / 40)
    assert merge.series([one, []]) == []


def cell(concurrency: int, requests: int | None = None, rate: float | None = None) -> Cell:
    stop = StopSpec(requests=requests) if requests else StopSpec(duration_s=5)
    return Cell("s", "ab", concurrency, True, 1, RequestSpec(), stop, 30.0, rate_rps=rate)


def gens(*weights: float) -> list[GeneratorSpec]:
    return [GeneratorSpec(f"g{i}", HostSpec(), w) for i, w in enumerate(weights)]


def test_the_load_splits_by_weight_and_adds_up():
    shares = scaleout.split(cell(10, requests=1001, rate=300.0), gens(1, 2, 2))
    assert [s.concurrency for s in shares] == [2, 4, 4]
    assert sum(s.stop.requests for s in shares) == 1001
    assert [s.rate_rps for s in shares] == pytest.approx([60.0, 120.0, 120.0])


def test_a_share_of_nothing_names_the_cell():
    with pytest.raises(ScenarioError, match=r"ab-c1-ka-rep1: concurrency 1 split over 2 generators .* g\d nothing"):
        scaleout.split(cell(1), gens(1, 1))
