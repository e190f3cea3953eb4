"""Two generators on this machine (`address: local`), against the nginx fixture: the path of
toolbench.run.scaleout.fleet that needs no SSH and no root."""
from __future__ import annotations

import json
import signal

import psutil
import pytest

from helpers.survival import Run, assert_nothing_survives, ledger, run_folder, wait_for
from toolbench.record import histogram, store
from toolbench.record.schema import Status
from toolbench.run import runner
from toolbench.run.scaleout import fleet as scaleout
from toolbench.scenario import read as scenario

pytestmark = pytest.mark.integration


def test_two_local_generators_split_the_cell_and_their_merge_adds_up(tmp_path, nginx):
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
name: two-local
target: {{url: "{nginx.base_url}"}}
hosts:
  generators:
    - {{address: local, name: one}}
    - {{address: local, name: two, weight: 3}}
matrix: {{tool: [engine], concurrency: [4], keepalive: [true]}}
stop: {{requests: 800}}
probe: {{enabled: false}}
""")
    summary = runner.run(scenario.load(path), tmp_path / "reports")
    (result,) = store.RunDir.open(summary.run_dir).results()
    assert result.outcome.status is Status.OK, result.outcome.error
    one, two = result.generators
    assert (one.name, one.concurrency, one.requests, one.clock) == ("one", 1, 200, None)
    assert (two.name, two.concurrency, two.requests) == ("two", 3, 600)
    assert [p.measurement.counts.requests_total for p in (one, two)] == [200, 600]
    assert result.measurement.counts.requests_total == 800 == result.measurement.counts.requests_ok
    assert result.measurement.histogram == histogram.encode(
        histogram.merge([one.measurement.histogram, two.measurement.histogram]))
    assert (summary.run_dir / one.path / "stdout.txt").exists() and one.path.endswith("gen-one")
    assert one.cost is not None and one.cost.cpu_user_s is not None
    recorded = store.RunDir.open(summary.run_dir).manifest().generators  # every generator, not only the first
    assert [(g.name, g.host, g.weight, g.clock, g.error) for g in recorded] == [
        ("one", "local", 1.0, None, None), ("two", "local", 3.0, None, None)]
    assert all([t.tool for t in g.tools] == ["engine"] and g.tools[0].version for g in recorded)


def test_ctrl_c_mid_cell_stops_every_generator_and_keeps_what_was_measured(tmp_path, nginx):
    """A real SIGINT to `toolbench run` while both local generators load nginx: every tool
    process it recorded ends, the cell is stored as interrupted with both parts, and their
    output stays on disk."""
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
name: two-local-stopped
target: {{url: "{nginx.base_url}"}}
hosts:
  generators: [{{address: local, name: one}}, {{address: local, name: two}}]
matrix: {{tool: [engine], concurrency: [2], keepalive: [true]}}
stop: {{duration: 60s}}
probe: {{enabled: false}}
""")
    run = Run(tmp_path, "run", str(path), "--reports-dir", str(tmp_path / "r"))
    run_dir = run_folder(tmp_path / "r")

    def both_loading() -> bool:
        """Both tools recorded, and past the common start: the wrapper waiting for it became the tool."""
        tools = [e for e in ledger(run_dir) if e["event"] == "started" and e["role"].startswith("tool")]
        return len(tools) == 2 and all(_began(e["pid"]) for e in tools)

    wait_for("both generators' tools, past their common start", both_loading)
    run.proc.send_signal(signal.SIGINT)
    assert run.wait() == 130, run.stderr
    assert "Traceback" not in run.stderr
    assert_nothing_survives(run_dir, None)
    (result,) = store.RunDir.open(run_dir).results()
    assert result.outcome.status is Status.INTERRUPTED, result.outcome
    assert [(p.name, p.status) for p in result.generators] == [("one", Status.INTERRUPTED),
                                                               ("two", Status.INTERRUPTED)]
    assert result.measurement.counts.requests_total is None  # nothing summed from killed tools
    for part in result.generators:
        assert (run_dir / part.path / "stdout.txt").exists() and (run_dir / part.path / "command.txt").exists()
    assert json.loads((run_dir / store.MANIFEST).read_text())["status"] == "interrupted"
    assert run.stdout.strip().endswith("report.html")


def _began(pid: int) -> bool:
    try:
        return not any(scaleout.GO_FILE in word for word in psutil.Process(pid).cmdline())
    except psutil.Error:
        return False
