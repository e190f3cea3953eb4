"""What toolbench derives from per-request data, and what it refuses to make up."""
from conftest import recorded
from toolbench.adapters import ab
from toolbench.record import histogram
from toolbench.record.derive import complete
from toolbench.record.schema import Fidelity, Latency, Measurement, Percentiles


def test_whole_millisecond_quantiles_below_the_step_are_absent_when_the_rest_is_finer():
    # ab -e gives p50..p99 to the microsecond; its -g file only whole milliseconds.
    m = Measurement(tool="ab", latency=Latency(percentiles=Percentiles(p50_ms=0.12), resolution_ms=0.001),
                    histogram=histogram.encode(histogram.from_ms([0.0] * 999 + [3.0])),
                    histogram_resolution_ms=1.0)
    done = complete(m)
    assert done.latency.percentiles.p50_ms == 0.12  # the tool's own figure is kept
    assert done.latency.percentiles.p999_ms is None  # not 0.001, an artefact of the HDR floor
    assert "latency.percentiles.p999_ms" not in done.fidelity
    assert any("p999 is below the 1 ms step" in note for note in done.notes)
    assert done.latency.max_ms == 3.0 and done.fidelity["latency.max_ms"] is Fidelity.DERIVED


def test_quantiles_of_a_whole_millisecond_tool_are_cut_to_its_step():
    m = Measurement(tool="x", latency=Latency(resolution_ms=1.0),
                    histogram=histogram.encode(histogram.from_ms([0.0] * 900 + [2.0] * 100)),
                    histogram_resolution_ms=1.0)
    done = complete(m)
    assert done.latency.percentiles.p50_ms == 0.0  # shown as "<1", as the tool itself would print 0
    assert done.latency.percentiles.p99_ms == 2.0  # not HDR's 2.001
    # A mean of whole milliseconds is finer than the step (HDR keeps 3 significant digits).
    assert abs(done.latency.mean_ms - 0.2) < 0.002


def test_ab_p999_from_its_gnuplot_file():
    m = complete(ab.parse(recorded("ab", "2.3-nokeepalive", csv="csv", tsv="tsv")))
    assert m.latency.percentiles.p999_ms == 8.0
    assert m.fidelity["latency.percentiles.p999_ms"] is Fidelity.DERIVED
