"""The evidence beside a claim's verdict (toolbench.report.claims_evidence), from recorded runs:
what either side's cells recorded is shown for both, a value per repetition, "–" where a cell
read nothing; counters read and all zero say so; a run that read none says that instead. The
provoked case (listen overflows against a backlog of 1) is tests/e2e/test_e2e_listen_overflow.py."""
import dataclasses
from pathlib import Path

from toolbench.record import store
from toolbench.record.schema import RunResult
from toolbench.report.claims_evidence import SideCells, said

STORED = Path(__file__).parents[1] / "fixtures" / "stored"


def cells(run: str) -> dict[str, RunResult]:
    return {r.identity.label: r for r in store.RunDir.open(STORED / run).results()}


def test_what_either_side_recorded_is_shown_for_both_a_value_per_repetition():
    quick = cells("workload-quick")
    found = said(SideCells("locust c10", [quick["locust"]]), SideCells("engine c10", [quick["engine"], quick["engine"]]))
    assert found == ("resets sent: locust c10 51 vs engine c10 52/52; "
                     "resets received: locust c10 101 vs engine c10 84/84; "
                     "target log: other: locust c10 3 vs engine c10 0/0")


def test_a_cell_that_read_nothing_shows_a_dash_and_failures_and_statuses_count_too():
    quick, mix = cells("workload-quick"), cells("workload-mix")
    assert said(SideCells("engine", [quick["engine"]]), SideCells("wrk", [quick["wrk"]])).startswith(
        "resets sent: engine 52 vs wrk –; resets received: engine 84 vs wrk –")
    assert said(SideCells("engine", [mix["engine"]]), SideCells("jmeter", [mix["jmeter"]])) == \
        "failed: check: engine 443 vs jmeter 385"


def test_counters_read_and_all_zero_are_evidence_too_and_none_read_is_said():
    mix = cells("workload-mix")
    # The same recorded cells with their failed checks taken away: nothing else happened in them.
    clean = [dataclasses.replace(r, measurement=dataclasses.replace(
        r.measurement, counts=dataclasses.replace(r.measurement.counts, failures=dataclasses.replace(
            r.measurement.counts.failures, check=0)))) for r in (mix["engine"], mix["wrk"])]
    assert said(SideCells("engine", clean[:1]), SideCells("wrk", clean[1:])) == (
        "none on either side: no listen overflow, SYN retransmit or reset, no line in the target's error log, "
        "no failed request, every status 2xx")
    assert said(SideCells("siege", [mix["siege"]]), SideCells("vegeta", [mix["vegeta"]])) == "no counters recorded"
