"""The report of a run whose cells differ by protocol: a real run of ab and h2load against the
bundled nginx in clear and over TLS (1 s a cell), reported. Cells of two protocols are never
compared as alike, the tables name the protocol, and a "TLS handshakes" section says, per cell
and per tool, what the handshakes were; a run without TLS has no such section."""
from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from toolbench.record import store
from toolbench.record.schema import Status, TlsHandshakes
from toolbench.report import groups, handshakes, model, render
from toolbench.report.context import Context, RunView
from toolbench.run import runner
from toolbench.scenario import read as scenario

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(any(shutil.which(t) is None for t in ("ab", "h2load", "nginx")),
                                 reason="ab, h2load or nginx is not installed (scripts/install.sh installs them)")]

SCENARIO = """\
name: tls-report
target: {server: nginx-static}
matrix:
  tool: [ab, h2load]
  concurrency: [2]
  keepalive: [true]
  protocol: [http1, https]
stop: {duration: 1s}
repeat: 1
cooldown: 0s
order: as-written
placement: none
calibrate: false
probe: {interval: 250ms, baseline: 3}
disturbed: none
"""


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("tls-report")
    path = folder / "s.yaml"
    path.write_text(SCENARIO)
    summary = runner.run(scenario.load(path), folder / "reports", system_check=False)
    return summary.run_dir


def _view(run_dir: Path, keep=lambda r: True) -> RunView:
    run = store.RunDir.open(run_dir)
    return RunView(name=run_dir.name, label="", href=".", manifest=run.manifest(),
                   results=[r for r in run.results() if keep(r)], path=run_dir)


def test_the_run_records_tls_cells_handshakes_and_none_for_cells_in_clear(run_dir: Path) -> None:
    results = {r.identity.cell_id: r for r in store.RunDir.open(run_dir).results()}
    assert set(results) == {"ab-c2-ka-rep1", "ab-c2-ka-https-rep1", "h2load-c2-ka-rep1", "h2load-c2-ka-https-rep1"}
    for cell_id, r in results.items():
        assert r.outcome.status is Status.OK, (cell_id, r.outcome.error)
        if r.identity.protocol == "http1":
            assert r.tls is None, cell_id
            continue
        t = r.tls
        assert t is not None and t.connections >= 1 and t.tls_version == "TLSv1.3", cell_id
        assert t.handshakes_full + t.handshakes_resumed == t.connections == t.http1_connections
        assert r.server_cost is not None and r.server_cost.cpu_us_per_request is not None  # kept beside
    (target,) = store.RunDir.open(run_dir).manifest().targets
    assert target.tls_version == "TLSv1.3" and target.tls_cipher


def test_the_report_has_a_tls_section_with_a_sentence_per_tool(run_dir: Path, tmp_path: Path) -> None:
    data = model.build([_view(run_dir)])
    (section,) = [s for s in data.sections if s.id == "tls"]
    (table,) = section.tables
    assert [c.label for c in table.columns][:5] == ["cell", "tool", "protocol", "status", "TLS connections"]
    assert [row.values[0].links[0].text for row in table.rows] == ["ab-c2-ka-https-rep1", "h2load-c2-ka-https-rep1"]
    assert {row.values[2].text for row in table.rows} == {"HTTP/1.1 over TLS"}
    # Neither ab nor h2load resumes a session: each connection they opened paid a full handshake,
    # unless they never reconnected (a slot's first connection has no session to resume).
    assert [p.split(" ")[0] for p in section.points] == ["ab", "h2load"]
    assert all(" paid a full handshake per connection (" in p or " kept its connections open (" in p
               for p in section.points), section.points
    assert "nginx-static served TLSv1.3 with TLS_" in section.intro
    html = render.render_run(run_dir, tmp_path / "report.html").read_text()
    assert 'id="tls"' in html and "TLS handshakes" in html and section.points[0] in html


def test_a_run_without_tls_cells_has_no_tls_section(run_dir: Path) -> None:
    data = model.build([_view(run_dir, keep=lambda r: r.identity.protocol == "http1")])
    assert "tls" not in [s.id for s in data.sections]
    (results,) = [s for s in data.sections if s.id == "results"]
    assert "protocol" not in [c.label for c in results.tables[0].columns]  # one protocol: not a column


def test_like_for_like_comparisons_and_series_keep_protocols_apart(run_dir: Path) -> None:
    ctx = Context.of([_view(run_dir)])
    assert sorted((p.key.tool, p.key.protocol) for p in ctx.points) == [
        ("ab", "http1"), ("ab", "https"), ("h2load", "http1"), ("h2load", "https")]
    assert {p.key.name for p in ctx.points} >= {"ab (HTTP/1.1 in clear)", "h2load (HTTP/1.1 over TLS)"}
    comps = ctx.comparisons
    assert sorted(c.protocol for c in comps) == ["http1", "https"]
    for comp in comps:
        assert sorted(c.tool for c in comp.cells) == ["ab", "h2load"]
        assert {c.point.key.protocol for c in comp.cells} == {comp.protocol}
    assert {c.where for c in comps} == {"concurrency 2, keep-alive on, HTTP/1.1 in clear",
                                        "concurrency 2, keep-alive on, HTTP/1.1 over TLS"}
    data = model.build([_view(run_dir)])
    (results,) = [s for s in data.sections if s.id == "results"]
    columns = [c.label for c in results.tables[0].columns]
    assert "protocol" in columns
    shown = {row.values[columns.index("protocol")].text for row in results.tables[0].rows}
    assert shown == {"HTTP/1.1 in clear", "HTTP/1.1 over TLS"}


def test_two_runs_compare_a_cell_only_with_the_same_protocol(run_dir: Path) -> None:
    clear = dataclasses.replace(_view(run_dir, keep=lambda r: r.identity.protocol == "http1"), label="clear")
    tls = dataclasses.replace(_view(run_dir, keep=lambda r: r.identity.protocol == "https"), label="tls")
    ctx = Context.of([clear, tls])
    from toolbench.report import compare

    matched = compare.matched(ctx, compare.cell_key)
    assert matched and all(len(runs) == 1 for runs in matched.values())  # nothing shared: never alike
    assert not [c for c in ctx.comparisons if {x.point.key.run for x in c.cells} == {"clear", "tls"}]


def test_the_sentence_says_what_share_a_tool_resumed(run_dir: Path) -> None:
    results = [r for r in store.RunDir.open(run_dir).results() if r.tls is not None]
    resumed = [dataclasses.replace(r, tls=TlsHandshakes(connections=40, handshakes_full=4, handshakes_resumed=36,
                                                        http1_connections=40))
               if r.identity.tool == "ab" else r for r in results]
    said = handshakes.sentences(resumed)
    # At c2 a cell's first two connections cannot resume: 36 of the 38 that could did.
    assert said[0] == "ab resumed 95 % of its sessions when it reconnected (36 of 40 TLS connections, 1 cell)."
    assert said[1].startswith(("h2load paid a full handshake per connection", "h2load kept its connections open"))


def test_a_tool_that_never_reconnected_is_not_said_to_pay_a_handshake_per_connection(run_dir: Path) -> None:
    results = [r for r in store.RunDir.open(run_dir).results() if r.tls is not None]
    kept = [dataclasses.replace(r, tls=TlsHandshakes(connections=2, handshakes_full=2, handshakes_resumed=0,
                                                     http1_connections=2)) for r in results]
    said = handshakes.sentences(kept)
    assert said[0] == "ab kept its connections open (2 TLS connections, 1 cell): whether it resumes sessions did not show."
    reconnected = [dataclasses.replace(r, tls=TlsHandshakes(connections=3, handshakes_full=3, handshakes_resumed=0,
                                                            http1_connections=3)) for r in results]
    assert handshakes.sentences(reconnected)[0].startswith("ab paid a full handshake per connection (3 TLS")
    assert groups.protocol_name("h2") == "HTTP/2 over TLS"
