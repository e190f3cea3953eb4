"""A workload's figures per request name (Measurement.by_request) and the `check` failure class:
stored and read back exactly, absent from records that lack them, and held to adding up to the
cell's counts."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from toolbench.errors import ParseError, SchemaError
from toolbench.export import rows
from toolbench.record import failures, invariants, store
from toolbench.record.manifest import Manifest, RunStatus, ScenarioRecord
from toolbench.record.schema import (Counts, Failures, Identity, Latency, Measurement, Outcome, Percentiles, Rates,
                                     RequestFigures, RunResult, Status)


def figures(name: str, ok: int, failed: int, check: int | None = None) -> RequestFigures:
    return RequestFigures(name, Counts(requests_total=ok + failed, requests_ok=ok, requests_failed=failed,
                                       failures=Failures(check=check)),
                          Latency(min_ms=1.0, mean_ms=2.0, max_ms=9.0, percentiles=Percentiles(p50_ms=2.0, p99_ms=8.0)),
                          Rates(rps=(ok + failed) / 2.0))


def measured(by_request: list[RequestFigures], total: int = 30, ok: int = 27, failed: int = 3) -> Measurement:
    return Measurement("locust", counts=Counts(requests_total=total, requests_ok=ok, requests_failed=failed,
                                               failures=Failures(check=3)), by_request=by_request)


NAMES = [figures("login", 10, 0), figures("search", 17, 3, check=3)]


def result(m: Measurement) -> RunResult:
    return RunResult(Identity(scenario="s", cell_id="locust-c2-ka-rep1", tool="locust", concurrency=2),
                     Outcome(Status.OK), m)


def test_figures_per_request_name_round_trip_through_json_and_the_run_folder(tmp_path: Path) -> None:
    stored = result(measured(NAMES))
    assert RunResult.from_dict(json.loads(json.dumps(stored.to_dict()))) == stored
    (tmp_path / "run" / store.RAW).mkdir(parents=True)
    run = store.RunDir(tmp_path / "run")
    run.write_manifest(Manifest(ScenarioRecord("s"), status=RunStatus.RUNNING))
    run.append(stored)
    (again,) = store.RunDir.open(tmp_path / "run").results()
    assert again.measurement.by_request == NAMES and again.measurement.counts.failures.check == 3


def test_a_record_without_them_reads_as_none_given_and_unchecked() -> None:
    data = result(Measurement("ab", counts=Counts(requests_total=5, requests_ok=5, requests_failed=0))).to_dict()
    del data["measurement"]["by_request"]
    del data["measurement"]["counts"]["failures"]["check"]
    again = RunResult.from_dict(data)
    assert again.measurement.by_request == [] and again.measurement.counts.failures.check is None


def test_a_malformed_stored_entry_is_refused_with_its_path() -> None:
    data = result(measured(NAMES)).to_dict()
    data["measurement"]["by_request"][1]["counts"]["bogus"] = 1
    with pytest.raises(SchemaError, match=r"RunResult\.measurement\.by_request\[1\]\.counts: unknown fields"):
        RunResult.from_dict(data)


def test_names_that_add_up_to_the_cell_pass() -> None:
    m = measured(NAMES)
    assert invariants.check(m) is m


@pytest.mark.parametrize("names, message", [
    ([figures("login", 10, 0), figures("search", 16, 3)],
     r"by_request: the request names' requests_total add up to 29, not the cell's 30"),
    ([figures("login", 10, 0), dataclasses.replace(figures("search", 17, 3), counts=Counts(
        requests_total=20, requests_ok=18, requests_failed=3))],
     r"by_request\[1\]\.counts\.requests_failed: requests_ok 18 \+ requests_failed 3 is not requests_total 20"),
    ([figures("login", 10, 0), figures("login", 17, 3)], r"by_request\[1\]\.name: 'login' is not a name, or a name "
                                                         "given twice"),
    ([figures("login", 10, 0), RequestFigures("search")], r"by_request\[1\]\.counts\.requests_total: absent"),
    ([figures("login", 10, 0), dataclasses.replace(figures("search", 17, 3), latency=Latency(min_ms=5.0, max_ms=1.0))],
     r"by_request\[1\]\.latency\.max_ms: 1 is below min_ms, 5"),
    ([figures("login", 10, 0), dataclasses.replace(figures("search", 17, 3), rates=Rates(rps=float("nan")))],
     r"by_request\[1\]\.rates\.rps"),
])
def test_names_that_do_not_hold_or_add_up_are_a_parse_error(names: list[RequestFigures], message: str) -> None:
    with pytest.raises(ParseError, match=message):
        invariants.check(measured(names))


def test_the_ok_and_failed_counts_add_up_too_where_the_cell_gives_only_one_of_them() -> None:
    names = [figures("login", 10, 0), figures("search", 17, 3)]
    with pytest.raises(ParseError, match=r"requests_ok add up to 27, not the cell's 26"):
        invariants.check(Measurement("locust", counts=Counts(requests_total=30, requests_ok=26), by_request=names))
    with pytest.raises(ParseError, match=r"requests_failed add up to 3, not the cell's 4"):
        invariants.check(Measurement("locust", counts=Counts(requests_total=30, requests_failed=4), by_request=names))


def test_check_is_a_failure_class_everywhere_classes_are_listed() -> None:
    from toolbench.report import failed_requests

    assert "check" in failures.CLASSES and failures.tally([], ())["check"] == 0
    assert "check" in {name for name, _ in failed_requests.CLASSES}
    row = rows.flatten(result(measured(NAMES)))
    assert row["counts.failures.check"] == 3 and rows.dtype("counts.failures.check") == "Int64"
    assert not any(column.startswith("by_request") for column in row)  # per-name figures stay in the record
