"""The report's workload sections (issue 32) on runs a real `toolbench run` stored
(tests/fixtures/stored/workload.md): per request, fidelity to the workload, and the "can it express
your workload" table. The cases where the target's log disagrees are copies of those stored records
with the logged counts edited: stored data, not mocks."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any, Callable

from toolbench.record import store
from toolbench.record.schema import RunResult
from toolbench.report import fmt, model, render
from toolbench.report.view import Section, Table
from toolbench.report.workload_source import stored_workload

STORED = Path(__file__).parents[1] / "fixtures" / "stored"
MIX = STORED / "workload-mix"
QUICK = STORED / "workload-quick"
V2 = STORED / "v2-0.2.0"  # a run of one request: none of these sections


def sections(path: Path) -> dict[str, Section]:
    _, data = render.render_with_data([path], path.parent / f"{path.name}.html")
    return {s.id: s for s in data.sections}


def column(table: Table, label: str) -> list[str]:
    index = [c.label for c in table.columns].index(label)
    return [row.values[index].text for row in table.rows]


def rows_by_tool(table: Table) -> dict[str, Any]:
    return {row.values[0].text: row for row in table.rows}


def cell(table: Table, tool: str, label: str) -> str:
    index = [c.label for c in table.columns].index(label)
    return rows_by_tool(table)[tool].values[index].text


def results(path: Path) -> dict[str, RunResult]:
    return {r.identity.label: r for r in store.RunDir.open(path).results()}


def edited_copy(tmp_path: Path, source: Path, tool: str, edit: Callable[[dict[str, Any]], None]) -> Path:
    """A copy of a stored run whose `tool` cell's target_requests `edit` changed."""
    copy = tmp_path / source.name
    shutil.copytree(source, copy)
    lines = []
    for line in (copy / "results.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record["identity"]["tool"] == tool:
            edit(record["target_requests"])
        lines.append(json.dumps(record))
    (copy / "results.jsonl").write_text("\n".join(lines) + "\n")
    return copy


def test_per_request_shows_the_stored_figures_of_each_name_side_by_side(tmp_path: Path) -> None:
    copy = tmp_path / "mix"
    shutil.copytree(MIX, copy)
    found = sections(copy)
    tables = {t.caption.split(":")[0]: t for t in found["per-request"].tables}
    assert list(tables) == ["login", "items", "page"]  # the workload's order
    stored = results(copy)
    for name, table in tables.items():
        assert set(column(table, "tool")) == {"engine", "jmeter", "locust", "wrk"}  # the cells that ran
        for tool, r in stored.items():
            if not r.measurement.by_request:
                continue
            f = next(f for f in r.measurement.by_request if f.name == name)
            assert cell(table, tool, "requests") == fmt.number(f.counts.requests_total)
            assert cell(table, tool, "ok") == fmt.number(f.counts.requests_ok)
            assert cell(table, tool, "check") == fmt.number(f.counts.failures.check)
    page = tables["page"]
    engine = next(f for f in stored["engine"].measurement.by_request if f.name == "page")
    assert cell(page, "engine", "check") == fmt.number(engine.counts.failures.check) == "443"  # every page failed it
    assert cell(page, "engine", "p99 ms") == fmt.number(engine.latency.percentiles.p99_ms, 0.001) == "5.63"
    assert cell(page, "engine", "req/s") == fmt.number(engine.rates.rps)


def test_a_figure_a_tool_does_not_give_is_absent_with_the_reason_not_0(tmp_path: Path) -> None:
    copy = tmp_path / "mix"
    shutil.copytree(MIX, copy)
    tables = {t.caption.split(":")[0]: t for t in sections(copy)["per-request"].tables}
    login = tables["login"]
    # wrk counts per name but times only in its one histogram: no latency per name
    assert [cell(login, "wrk", c) for c in ("p50 ms", "p90 ms", "p99 ms")] == [fmt.ABSENT] * 3
    assert "no latency per name" in rows_by_tool(login)["wrk"].note
    assert cell(login, "wrk", "requests") == "96"
    # jmeter does not tell a failed check apart for a name none failed: absent, not 0
    assert results(copy)["jmeter"].measurement.by_request[1].counts.failures.check is None
    assert cell(login, "jmeter", "check") == fmt.ABSENT
    assert cell(login, "engine", "check") == "0"


def test_a_cell_without_figures_per_name_says_so(tmp_path: Path) -> None:
    copy = tmp_path / "mix"
    shutil.copytree(MIX, copy)
    lines = [json.loads(line) for line in (copy / "results.jsonl").read_text().splitlines()]
    for record in lines:
        if record["identity"]["tool"] == "wrk":
            record["measurement"]["by_request"] = []
            record["notes"] = ["no figures per request name: wrk gave none in this test's copy"]
    (copy / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    login = sections(copy)["per-request"].tables[0]
    assert cell(login, "wrk", "requests") == fmt.ABSENT and cell(login, "wrk", "check") == fmt.ABSENT
    assert rows_by_tool(login)["wrk"].note == "no figures per request name: wrk gave none in this test's copy"


def test_fidelity_holds_for_the_stored_runs_and_says_so_per_tool(tmp_path: Path) -> None:
    copy = tmp_path / "mix"
    shutil.copytree(MIX, copy)
    fidelity = sections(copy)["fidelity"]
    names, cells = fidelity.tables
    assert column(cells, "mix within") == ["yes"] * 4 and column(cells, "counts within") == ["yes"] * 4
    assert column(cells, "logged") == ["635", "728", "758", "622"]  # the target's log, as stored
    engine_page = next(row for row in names.rows if row.values[0].text == "engine" and row.values[2].text == "page")
    assert [v.text for v in engine_page.values[3:6]] == ["62.5", "60.9", "-1.6"]  # 443 of 728 logged
    said = [p for p in fidelity.points if p.startswith("engine (engine-c4-ka-rep1)")]
    assert len(said) == 1 and "the mix within tolerance" in said[0] and "failed checks: page 443" in said[0]
    assert any(p.startswith("Planned unsupported: siege: siege cannot express checks") for p in fidelity.points)
    assert any(p.startswith("Approximated by jmeter: think time") for p in fidelity.points)
    assert not fidelity.figures  # no stages asked: no stage chart


def test_the_mix_verdict_flips_when_the_logged_shares_are_off(tmp_path: Path) -> None:
    def fewer_pages(logged: dict[str, Any]) -> None:
        page = next(p for p in logged["paths"] if p["path"] == "/page")
        page["count"], page["by_status"], page["per_second"] = 300, {"200": 300}, [60, 60, 60, 60, 60]
        logged["requests"] = sum(p["count"] for p in logged["paths"]) + logged["other_requests"]

    copy = edited_copy(tmp_path, MIX, "engine", fewer_pages)
    fidelity = sections(copy)["fidelity"]
    names, cells = fidelity.tables
    assert cell(cells, "engine", "mix within") == "no" and cell(cells, "engine", "counts within") == "no"
    assert cell(cells, "wrk", "mix within") == "yes"  # the others untouched
    page = next(row for row in names.rows if row.values[0].text == "engine" and row.values[2].text == "page")
    assert page.bad and page.values[6].text == "no" and page.values[10].text == "+143"  # 443 counted, 300 logged
    said = next(p for p in fidelity.points if p.startswith("engine ("))
    assert "the mix off (furthest: page" in said and "beyond the 4 in flight" in said


def test_stages_are_charted_and_judged_from_the_per_second_series(tmp_path: Path) -> None:
    copy = tmp_path / "quick"
    shutil.copytree(QUICK, copy)
    fidelity = sections(copy)["fidelity"]
    assert [f.title for f in fidelity.figures] == ["Stages: locust, locust-c10-ka-rep1",
                                                   "Stages: engine, engine-c10-ka-rep1"]
    assert all(f.svg.startswith("<svg") and "ramped up, held, ramped down" in f.caption.lower()
               for f in fidelity.figures)
    assert column(fidelity.tables[1], "stages followed") == ["yes", "yes"]
    assert column(fidelity.tables[1], "pace within") == ["yes", "yes"]

    def flat(logged: dict[str, Any]) -> None:  # the same rate from the first second to the last: no ramp
        for p in logged["paths"]:
            p["per_second"] = [p["count"] // 7] * 6 + [p["count"] - 6 * (p["count"] // 7)]

    flattened = edited_copy(tmp_path / "flat", QUICK, "locust", flat)
    fidelity = sections(flattened)["fidelity"]
    assert cell(fidelity.tables[1], "locust", "stages followed") == "no"
    assert cell(fidelity.tables[1], "engine", "stages followed") == "yes"
    assert "did not ramp up in stage 1" in fidelity.figures[0].caption.lower()


def test_the_choice_section_says_what_each_tool_can_express_of_the_stored_workload(tmp_path: Path) -> None:
    copy = tmp_path / "mix"
    shutil.copytree(MIX, copy)
    choice = sections(copy)["choice"]
    fit = next(t for t in choice.tables if t.caption == "Can it express your workload")
    assert [c.label for c in fit.columns] == ["tool", "mix", "think", "checks", "per request"]
    assert [v.text for v in rows_by_tool(fit)["vegeta"].values] == [
        "vegeta", "approximated", "unsupported", "unsupported", "honoured"]
    assert [v.text for v in rows_by_tool(fit)["engine"].values[1:]] == ["honoured"] * 4
    assert "siege's -d waits" in rows_by_tool(fit)["siege"].note
    assert "siege, vegeta cannot express some of it" in choice.intro


def test_the_table_shows_what_the_run_recorded_not_what_the_adapters_say_today(tmp_path: Path) -> None:
    """A run records what each adapter declared when it was planned (manifest tools[].workload): its
    report shows that, whatever a later toolbench's adapters would say; a run from before shows the
    adapters' present declaration and says so."""
    copy = tmp_path / "mix"
    shutil.copytree(MIX, copy)
    before = rows_by_tool(next(t for t in sections(copy)["choice"].tables if t.caption == "Can it express your workload"))
    assert before["engine"].note.startswith("the run did not record it")
    manifest = json.loads((copy / "manifest.json").read_text())
    for tool in manifest["tools"]:
        if tool["tool"] == "engine":
            tool["workload"] = {"mix": {"level": "honoured", "how": ""}, "think": {"level": "approximated", "how": "as recorded"},
                                "checks": {"level": "unsupported", "how": "recorded reason"},
                                "per_request": {"level": "honoured", "how": ""}}
    (copy / "manifest.json").write_text(json.dumps(manifest))
    fit = rows_by_tool(next(t for t in sections(copy)["choice"].tables if t.caption == "Can it express your workload"))
    assert [v.text for v in fit["engine"].values] == ["engine", "honoured", "approximated", "unsupported", "honoured"]
    assert "recorded reason" in fit["engine"].note and "did not record" not in fit["engine"].note
    assert fit["vegeta"].note.startswith("the run did not record it")  # no record for it: the adapter's


def test_the_table_stands_alone_where_there_is_no_choice_section(tmp_path: Path) -> None:
    copy = tmp_path / "mix"
    shutil.copytree(MIX, copy)
    kept = [line for line in (copy / "results.jsonl").read_text().splitlines()
            if json.loads(line)["identity"]["tool"] in ("engine", "siege")]
    (copy / "results.jsonl").write_text("\n".join(kept) + "\n")
    found = sections(copy)
    assert "choice" not in found
    assert [v.text for v in found["workload-fit"].tables[0].rows[0].values] == [
        "engine", "honoured", "honoured", "honoured", "honoured"]


def test_the_stored_profile_is_applied_and_a_run_of_one_request_has_none_of_it(tmp_path: Path) -> None:
    manifest = store.RunDir.open(QUICK).manifest()
    quick = stored_workload(manifest.scenario.text, manifest.scenario.profile)
    whole = stored_workload(manifest.scenario.text, None)
    assert quick is not None and whole is not None
    assert [s.duration_s for s in quick.stages] == [2.0, 4.0, 1.0]  # --profile quick
    assert [s.duration_s for s in whole.stages] == [4.0, 8.0, 2.0]
    assert stored_workload("name: x\nworkload: [", None) is None  # a text that does not read
    copy = tmp_path / "v2"
    shutil.copytree(V2, copy)
    data = model.build(render.load_views([store.RunDir.open(copy)], copy))
    ids = {s.id for s in data.sections}
    assert not ids & {"per-request", "fidelity", "workload-fit"}


def test_a_stored_workload_reads_its_shape_without_its_files() -> None:
    """The run folder keeps the scenario's text, not its data and body files: the report reads the
    shape with the scenario's own reader, which then opens no file and checks no variable."""
    text = """name: x
workload:
  order: mix
  data: {file: data/nowhere.csv, per: iteration, at_end: stop}
  requests:
    - {name: login, method: POST, path: /login, body_file: bodies/nowhere.json, weight: 3,
       checks: {status: [200, 201]}}
    - {name: item, path: "/item/${id}", weight: 1, headers: {Authorization: "Bearer ${token}"}}
"""
    shape = stored_workload(text, None)
    assert shape is not None and shape.order == "mix" and shape.data is not None
    assert (shape.data.given, shape.data.columns, shape.data.per, shape.data.at_end) == (
        "data/nowhere.csv", (), "iteration", "stop")
    login, item = shape.requests
    assert (login.method, login.weight, login.body_file, login.body) == ("POST", 3.0, "bodies/nowhere.json", None)
    assert login.checks is not None and login.checks.status == (200, 201)
    assert (item.path, item.weight) == ("/item/${id}", 1.0)
    # Still checked as the run checked it; only the data's columns are unknown (${id}, ${token}).
    assert stored_workload(text.replace("weight: 3", "weight: -3"), None) is None


def test_users_stopped_together_at_the_end_are_not_a_ramp_down(tmp_path: Path) -> None:
    """A ramp down of 3 s or more must fall as asked, not hold and then stop at once: the falling
    last second alone is a cliff (JMeter's Thread Group stops its users so), not a ramp."""
    def shaped(series: list[int]) -> Callable[[dict[str, Any]], None]:
        def edit(logged: dict[str, Any]) -> None:
            for p in logged["paths"]:  # each path its share of the series, the counts kept
                share = [v * p["count"] // sum(series) for v in series]
                share[series.index(max(series))] += p["count"] - sum(share)
                p["per_second"] = share
        return edit

    copy = edited_copy(tmp_path / "a", QUICK, "engine", shaped([15, 100, 190, 195, 200, 195, 195, 195, 195, 190, 5]))
    copy = edited_copy(tmp_path / "b", copy, "locust", shaped([60, 150, 185, 180, 190, 185, 165, 120, 70, 25]))
    manifest = json.loads((copy / "manifest.json").read_text())
    text = manifest["scenario"]["text"]
    assert text.count("{duration: 1s, users: 0}") == 1  # the quick profile's ramp down
    manifest["scenario"]["text"] = text.replace("{duration: 1s, users: 0}", "{duration: 4s, users: 0}")
    (copy / "manifest.json").write_text(json.dumps(manifest))
    captions = {f.title: f.caption.lower() for f in sections(copy)["fidelity"].figures}
    assert "did not ramp down in stage 3" in captions["Stages: engine, engine-c10-ka-rep1"]
    assert "held, ramped down" in captions["Stages: locust, locust-c10-ka-rep1"]
