"""Repetition statistics and peaks, over real RunResults: real ab runs, and recorded ab output."""
import dataclasses
import math
import statistics

import pytest

from conftest import need, recorded
from toolbench.adapters import ab as ab_adapter
from toolbench.record import derive, histogram, stats
from toolbench.record.schema import Identity, Measurement, Outcome, Rates, RunResult, Status
from toolbench.run import runner
from toolbench.scenario import read as scenario

REPEATED = """\
name: rep
target: {server: nginx-static}
matrix: {tool: [ab], concurrency: [2, 8], keepalive: [true]}
stop: {requests: 3000}
repeat: 3
probe: {enabled: false}
monitor: {interval: 1s}
"""


@pytest.fixture(scope="module")
def repeated(tmp_path_factory):
    need("ab")
    folder = tmp_path_factory.mktemp("rep")
    (folder / "s.yaml").write_text(REPEATED)
    summary = runner.run(scenario.load(folder / "s.yaml"), folder / "reports")
    from toolbench.record import store

    return store.RunDir.open(summary.run_dir).results()


@pytest.mark.integration
def test_repetitions_are_interleaved_and_summarized_per_cell(repeated):
    # Interleaved: every cell's repetition 1, in the run's shuffled order, then every repetition 2 ...
    assert [r.identity.repetition for r in repeated] == [1, 1, 2, 2, 3, 3]
    assert all({r.identity.concurrency for r in repeated if r.identity.repetition == n} == {2, 8} for n in (1, 2, 3))
    cells = stats.cell_stats(repeated)
    assert [c.key.label for c in cells] == ["ab c2 ka", "ab c8 ka"]
    for cell in cells:
        mine = [r for r in repeated if r.identity.concurrency == cell.key.concurrency]
        rps = [r.measurement.rates.rps for r in mine]
        t = cell.throughput_rps
        assert cell.runs == cell.ok == 3 and t.n == 3 and t.repetitions == [1, 2, 3]
        assert t.median == statistics.median(rps) and t.min == min(rps) and t.max == max(rps)
        assert t.q1 <= t.median <= t.q3 and t.iqr == pytest.approx(t.q3 - t.q1)
        half = 4.303 * statistics.stdev(rps) / math.sqrt(3)
        assert t.ci95_low == pytest.approx(statistics.fmean(rps) - half)
        assert t.ci95_high == pytest.approx(statistics.fmean(rps) + half)
        assert set(cell.latency_ms) >= {"mean_ms", "p50_ms", "p99_ms"}
        assert cell.latency_ms["p50_ms"].values == [r.measurement.latency.percentiles.p50_ms for r in mine]
        assert cell.requests_total == 9000 and cell.requests_failed == 0 and cell.error_rate == 0


@pytest.mark.integration
def test_the_histograms_of_the_repetitions_merge_exactly(repeated):
    cell = stats.cell_stats(repeated)[0]
    mine = [r for r in repeated if r.identity.concurrency == 2]
    parts = [histogram.decode(r.measurement.histogram) for r in mine]
    assert cell.merged.count == sum(h.get_total_count() for h in parts) == 9000
    assert cell.merged.repetitions == [1, 2, 3]
    assert cell.merged.max_ms == max(h.get_max_value() for h in parts) / 1000.0
    assert cell.merged.min_ms == min(h.get_min_value() for h in parts) / 1000.0
    # Exact: the same as recording every request of the three runs into one histogram.
    every = histogram.new()
    for h in parts:
        for item in h.get_recorded_iterator():
            every.record_value(item.value_iterated_to, item.count_at_value_iterated_to)
    assert cell.merged.percentiles == histogram.percentiles_ms(every)


@pytest.mark.integration
def test_a_disturbed_repetition_is_flagged_not_dropped(repeated):
    mine = [r for r in repeated if r.identity.concurrency == 8]
    base = mine[0].measurement.rates.rps  # real runs vary by tens of percent here: set the rates, keep the rest
    reps = [dataclasses.replace(r, measurement=dataclasses.replace(r.measurement, rates=Rates(rps=base * factor)))
            for r, factor in zip(mine, (1.0, 0.1, 1.02))]
    cell = stats.cell_stats(reps)[0]
    assert cell.throughput_rps.outliers == [2] and cell.throughput_rps.n == 3
    assert cell.throughput_rps.min == base * 0.1 and cell.throughput_rps.median == base


@pytest.mark.integration
def test_the_peak_is_the_best_median_over_the_sweep(repeated):
    (peak,) = stats.peaks(repeated)
    medians = {c.key.concurrency: c.throughput_rps.median for c in stats.cell_stats(repeated)}
    assert peak.tool == "ab" and peak.keepalive is True
    assert peak.best_rps == max(medians.values())
    assert medians[peak.best_concurrency] == peak.best_rps
    assert [p.concurrency for p in peak.points] == [2, 8]
    assert peak.errors_from_concurrency is None


def _parsed(case: str, concurrency: int, rep: int = 1, **files: str) -> RunResult:
    m = derive.complete(ab_adapter.parse(recorded("ab", case, **files)))
    status, error = derive.cell_status(m, 0, timed_out=False, interrupted=False, timeout_s=0, stderr="")
    identity = Identity(scenario="s", cell_id=f"ab-c{concurrency}-{case}", tool="ab", concurrency=concurrency,
                        keepalive=False, repetition=rep)
    return RunResult(identity, Outcome(status, error=error), m)


def test_errors_begin_where_the_failed_requests_start():
    ok = _parsed("2.3-nokeepalive", 10)
    failing = _parsed("2.3-404", 50)
    assert ok.measurement.counts.requests_failed == 0 and failing.measurement.counts.requests_failed > 0
    (peak,) = stats.peaks([ok, failing])
    assert peak.errors_from_concurrency == 50
    assert [p.error_rate > 0 for p in peak.points] == [False, True]


def test_unsupported_and_missing_cells_are_left_out():
    ok = _parsed("2.3-nokeepalive", 10)
    skipped = RunResult(dataclasses.replace(ok.identity, concurrency=20), Outcome(Status.UNSUPPORTED, error="x"))
    assert [c.key.concurrency for c in stats.cell_stats([ok, skipped])] == [10]
    assert stats.cell_stats([skipped]) == []


def test_spread_of_known_values():
    s = stats.spread([10.0, 12.0, 11.0, 30.0, 11.0])
    assert (s.median, s.min, s.max, s.q1, s.q3, s.iqr) == (11.0, 10.0, 30.0, 11.0, 12.0, 1.0)
    assert s.outliers == [4]  # |30 - 11| / MAD 1 x 0.6745 = 12.8 > 3.5
    assert s.ci95_low == pytest.approx(14.8 - 2.776 * statistics.stdev([10, 12, 11, 30, 11]) / math.sqrt(5))
    single = stats.spread([5.0])
    assert single.stdev is None and single.ci95_low is None and single.iqr == 0 and single.outliers == []
    assert stats.spread([]) is None
    assert stats.spread([7.0, 7.0, 7.0, 9.0]).outliers == [4]  # MAD 0: off the median is flagged


def test_t_critical_values():
    assert stats.t_critical_95(2) == 4.303
    assert stats.t_critical_95(30) == 2.042
    assert stats.t_critical_95(40) == pytest.approx(2.021, abs=0.001)
    assert stats.t_critical_95(120) == pytest.approx(1.980, abs=0.001)
    with pytest.raises(ValueError):
        stats.t_critical_95(0)


def test_a_variant_is_its_own_series():
    from toolbench.record import stats as st
    from toolbench.record.schema import Counts, Identity, Outcome, Rates, RunResult, Status

    def result(variant, rps):
        ident = Identity(scenario="s", cell_id=f"{variant or 'locust'}-c10", tool="locust", variant=variant,
                         concurrency=10, keepalive=True)
        return RunResult(ident, Outcome(Status.OK), Measurement(ident.tool, counts=Counts(requests_total=100,
                         requests_ok=100), rates=Rates(rps=rps)))

    found = {p.tool: p.best_rps for p in st.peaks([result(None, 5000.0), result("locust-2p", 9000.0)])}
    assert found == {"locust": 5000.0, "locust-2p": 9000.0}
