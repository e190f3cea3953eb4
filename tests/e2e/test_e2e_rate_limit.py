"""A run against the bundled nginx-uwsgi with a `limit_req` (study 000's target, at 10 r/s): the
engine, which gives every status code, has its 503s in the failures table's "503" column; siege and
h2load, which give none (siege counts a 503 as a failed transaction, h2load counts it as a 5xx),
get the count from nginx's own error log, said in a note on the cell and marked in the column. Every
cell's `target_log` counts the limit_req rejections nginx logged while it ran, and the manifest
records what the target is made of (nginx, uWSGI, Flask, Werkzeug, Python)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from toolbench.record import store
from toolbench.record.schema import RunResult, Status
from toolbench.report import model, render
from toolbench.report.context import RunView
from toolbench.run import runner
from toolbench.scenario import read as scenario

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(any(shutil.which(t) is None for t in ("siege", "h2load", "nginx")),
                                 reason="siege, h2load or nginx is not installed (scripts/install.sh installs them)")]

# The probe is off so that every line nginx logged during a cell is the tool's.
SCENARIO = """\
name: rate-limit
target: {server: nginx-uwsgi, workers: 1, processes: 1, limit_req: {rate: 10r/s}}
matrix:
  tool: [engine, siege, h2load]
  concurrency: [10]
  keepalive: [false]
stop: {requests: 200}
timeout: 60s
repeat: 1
cooldown: 0s
order: as-written
placement: none
calibrate: false
probe: {enabled: false}
disturbed: none
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("rate-limit")
    path = folder / "s.yaml"
    path.write_text(SCENARIO)
    return runner.run(scenario.load(path), folder / "reports", system_check=False).run_dir


def _results(run_dir: Path) -> dict[str, RunResult]:
    return {r.identity.tool: r for r in store.RunDir.open(run_dir).results()}


def test_each_cell_counts_the_limit_req_rejections_nginx_logged(run_dir: Path) -> None:
    results = _results(run_dir)
    assert set(results) == {"engine", "siege", "h2load"}
    for tool, r in results.items():
        assert r.outcome.status is Status.OK, (tool, r.outcome.error)
        logged = r.target_log
        assert logged is not None and logged.logs == ["nginx", "uwsgi"], tool
        assert logged.limit_req > 0 and logged.lines_unread == 0, (tool, logged)
    # The engine gives each status: every 503 it counted is one line of nginx's, and no more.
    engine = results["engine"]
    assert engine.measurement.counts.status_codes.get(503) == engine.target_log.limit_req  # type: ignore[union-attr]
    assert not any("limit_req" in n for n in engine.notes)
    # siege and h2load give no status codes: the note puts nginx's count beside their failures.
    for tool in ("siege", "h2load"):
        r = results[tool]
        assert not r.measurement.counts.status_codes and r.measurement.counts.requests_failed
        (note,) = [n for n in r.notes if "limit_req" in n]
        assert r.target_log is not None
        assert note.startswith(f"{tool} counted {r.measurement.counts.requests_failed:,} failed requests without "
                               "their status codes; nginx's error log shows "
                               f"{r.target_log.limit_req:,} requests refused by its limit_req (503)"), note


def test_the_manifest_names_the_targets_components(run_dir: Path) -> None:
    (target,) = store.RunDir.open(run_dir).manifest().targets
    assert [c.name for c in target.components] == ["nginx", "uWSGI", "Flask", "Werkzeug", "Python"]
    assert all(c.version[0].isdigit() for c in target.components), target.components


def test_the_report_says_503_and_shows_the_targets_log(run_dir: Path, tmp_path: Path) -> None:
    run = store.RunDir.open(run_dir)
    view = RunView(name=run_dir.name, label="", href=".", manifest=run.manifest(), results=run.results(), path=run_dir)
    data = model.build([view])
    sections = {s.id: s for s in data.sections}
    errors = sections["errors"]
    cells = errors.tables[-1]
    labels = [c.label for c in cells.columns]
    assert "503" in labels
    column = labels.index("503")
    by_cell = {row.values[0].text: row.values[column] for row in cells.rows}
    results = _results(run_dir)
    engine = by_cell[results["engine"].identity.cell_id]
    assert engine.text == f"{results['engine'].measurement.counts.status_codes[503]:,}" and engine.flag == ""
    for tool in ("siege", "h2load"):
        shown = by_cell[results[tool].identity.cell_id]
        assert shown.flag == "nginx's log" and shown.derived, shown
    assert any(p.startswith("siege gives no status codes") for p in errors.points), errors.points
    answered = f"{results['engine'].measurement.counts.status_codes[503]:,} requests were answered 503 Service"
    assert any(p.startswith(answered + " Unavailable (1 cell, by the tools' status codes)") for p in errors.points)
    logged = sections["target-log"]
    (sentence,) = logged.points
    total = sum(r.target_log.limit_req for r in results.values())  # type: ignore[union-attr]
    assert sentence == f"nginx-uwsgi, over 3 cells: {total:,} requests refused by nginx's limit_req (503).", sentence
    env = dict((row.values[0].text, row.values[1].text) for row in sections["environment"].tables[0].rows)
    assert env["target components"].startswith("nginx ") and "uWSGI 2." in env["target components"]
    html = render.render_run(run_dir, tmp_path / "report.html").read_text()
    assert 'id="target-log"' in html and sentence.replace("'", "&#39;") in html
