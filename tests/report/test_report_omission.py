"""The report says, per result and per latency row, whether the tool corrected for
coordinated omission (schema: Measurement.coordinated_omission), and says nothing it does not know."""
from __future__ import annotations

from pathlib import Path

from helpers import report_data
from toolbench.record import store
from toolbench.record.schema import Omission
from toolbench.report import fmt, model, render

STORED_V1 = Path(__file__).parents[1] / "fixtures" / "stored" / "v1-0.1.0"


def sections(path: Path) -> dict[str, object]:
    data = model.build(render.load_views([store.RunDir.open(path)], path))
    return {s.id: s for s in data.sections}


def column(table, label: str) -> list[str]:
    index = [c.label for c in table.columns].index(label)
    return [row.values[index].text for row in table.rows]


def test_one_word_per_row_mixed_when_repetitions_disagree_absent_when_none_says():
    assert fmt.omission([Omission.CORRECTED, Omission.CORRECTED]) == "corrected"
    assert fmt.omission([Omission.NOT_CORRECTED, None]) == "not corrected"
    assert fmt.omission([Omission.CORRECTED, Omission.NOT_CORRECTED]) == "mixed"
    assert fmt.omission([None]) == fmt.ABSENT == fmt.omission([])


def test_the_engine_open_model_reads_corrected_and_ab_not_in_both_tables(tmp_path):
    run = report_data.write_run(tmp_path, "omission-20260110T090000Z", "omission", "2026-01-10T09:00:00.000Z",
                                cells=[report_data.Recorded("ab", "2.3-keepalive", 10, True),
                                       report_data.Recorded("engine", "0.1.0-open", 10, True)],
                                tools={"ab": "2.3", "engine": "0.1.0"})
    found = sections(run)
    results = found["results"].tables[0]
    said = dict(zip(column(results, "tool"), column(results, "coordinated omission")))
    assert said == {"ab 2.3": "not corrected", "engine 0.1.0": "corrected"}
    latency = found["latency"]
    assert dict(zip(column(latency.tables[0], "tool"), column(latency.tables[0], "coordinated omission"))) == \
        {"ab": "not corrected", "engine": "corrected"}
    assert "engine times each request from when it was meant to be sent (coordinated omission corrected)" \
        in latency.intro
    assert "ab times each request from when it was actually sent (not corrected)" in latency.intro
    assert "does not record" not in latency.intro


def test_results_that_do_not_record_it_say_so_and_claim_nothing():
    """A version 1 run stored its closed-model results without the field: shown as absent."""
    found = sections(STORED_V1)
    assert set(column(found["results"].tables[0], "coordinated omission")) == {fmt.ABSENT}
    intro = found["latency"].intro
    assert "the result does not record which (the adapter does not say)" in intro
    assert "corrected" not in intro
