import json

import pytest

from helpers.results import full_result
from toolbench.errors import SchemaError
from toolbench.record import histogram
from toolbench.record.schema import SCHEMA_VERSION, Fidelity, Measurement, RunResult


def test_round_trip_through_json_keeps_every_field():
    result = full_result()
    again = RunResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again == result
    assert again.measurement.counts.status_codes == {200: 9, 404: 1}  # int keys survive JSON's string keys
    assert again.to_dict()["schema_version"] == SCHEMA_VERSION


def test_absent_metrics_stay_absent_and_are_never_zero():
    result = full_result()
    assert result.measurement.latency.min_ms is None
    assert result.fidelity_of("latency.min_ms") is Fidelity.ABSENT
    assert result.fidelity_of("latency.mean_ms") is Fidelity.REPORTED
    assert result.fidelity_of("counts.requests_failed") is Fidelity.DERIVED
    assert RunResult.from_dict(result.to_dict()).measurement.latency.percentiles.p50_ms is None


def test_unknown_fields_and_versions_are_rejected():
    data = full_result().to_dict()
    data["measurement"]["counts"]["bogus"] = 1
    with pytest.raises(SchemaError, match=r"RunResult.measurement.counts: unknown fields \['bogus'\]"):
        RunResult.from_dict(data)
    data = full_result().to_dict()
    data["schema_version"] = 99
    with pytest.raises(SchemaError, match="schema_version 99 is not one this toolbench reads"):
        RunResult.from_dict(data)
    data = full_result().to_dict()
    data["outcome"]["status"] = "great"
    with pytest.raises(SchemaError, match="RunResult.outcome.status"):
        RunResult.from_dict(data)


def test_fidelity_names_must_be_metrics():
    with pytest.raises(SchemaError, match="unknown metric names"):
        Measurement(tool="x", fidelity={"latency.p42": Fidelity.REPORTED})
    with pytest.raises(SchemaError):
        full_result().fidelity_of("nope")


def test_histograms_of_parts_merge_exactly_into_the_whole():
    a = [0.1, 0.25, 1.0, 7.5, 120.0]
    b = [0.3, 2.0, 2.0, 900.0]
    merged = histogram.merge([histogram.encode(histogram.from_ms(a)), histogram.encode(histogram.from_ms(b))])
    whole = histogram.from_ms(a + b)
    assert merged.get_total_count() == 9
    assert histogram.percentiles_ms(merged) == histogram.percentiles_ms(whole)
    assert merged.get_max_value() == whole.get_max_value()


def test_a_damaged_histogram_is_a_schema_error():
    with pytest.raises(SchemaError, match="not an HDR histogram"):
        histogram.decode("not-base64!")
