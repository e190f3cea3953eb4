"""The runner's logic over recorded tool runs (tests/helpers/replay.py): no tool, no server, no
process is started, so these run in milliseconds."""
import dataclasses
import json
from pathlib import Path

import pytest

from helpers.replay import Replay, ReplayHost, ReplayTargets
from toolbench.errors import Interrupted
from toolbench.record import store
from toolbench.record.manifest import RunStatus, TargetRecord
from toolbench.record.schema import Status
from toolbench.run import runner
from toolbench.scenario import read as scenario
from toolbench.scenario.targets import TargetSpec

VERSIONS = {"ab": "ab/2.3-version", "siege": "siege/4.0.7-version"}
AB_OK = Replay("ab/2.3-keepalive", outputs={"percentiles.csv": ".csv"})
AB_REFUSED = Replay("ab/2.3-refused", exit_code=111)
# The runner's logic in a known order, with no process of its own: no shuffle, no target warm-up.
QUIET = "probe: {enabled: false}\nmonitor: {enabled: false}\norder: as-written\nwarm_target: none\n"


def load(tmp_path: Path, body: str) -> scenario.Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(body + QUIET)
    return scenario.load(path)


def run(s: scenario.Scenario, tmp_path: Path, replays: list[Replay], targets: ReplayTargets | None = None,
        resume: Path | None = None) -> tuple[store.RunDir, ReplayHost]:
    host = ReplayHost(replays, VERSIONS)
    summary = runner.run(s, tmp_path / "reports", host=host, start_target=targets or ReplayTargets(), resume=resume)
    return store.RunDir.open(summary.run_dir), host


def two_targets(s: scenario.Scenario, restart: str = "once") -> scenario.Scenario:
    specs = {name: TargetSpec(kind="url", name=name, url="http://127.0.0.1:9", restart=restart)
             for name in ("fast", "slow")}
    return dataclasses.replace(s, targets=specs, matrix=dataclasses.replace(s.matrix, target=("fast", "slow")))


ONE = ("name: one\ntarget: {url: 'http://127.0.0.1:9'}\nmatrix: {tool: [ab], concurrency: [4, 8]}\n"
       "stop: {requests: 20000}\n")


def test_recorded_runs_become_results_with_their_status(tmp_path):
    run_dir, host = run(load(tmp_path, ONE), tmp_path, [AB_OK, AB_REFUSED])
    ok, refused = run_dir.results()
    assert (ok.identity.cell_id, ok.outcome.status) == ("ab-c4-ka-rep1", Status.OK)
    assert ok.measurement.counts.requests_ok == 20000 and ok.identity.target_label == "url"
    assert ok.identity.url == "http://127.0.0.1:9/" and ok.identity.tool_version == "2.3"
    assert refused.outcome.status is Status.FAILED and "refused" in refused.outcome.error.lower()
    assert [argv[:3] for argv in host.argvs] == [["/replay/ab", "-c", "4"], ["/replay/ab", "-c", "8"]]
    assert ok.server_cost is None  # no process of its own was started: nothing to sample, and none invented


def test_a_tool_that_hangs_is_run_again(tmp_path):
    text = ("name: h\ntarget: {url: 'http://127.0.0.1:9'}\nmatrix: {tool: [siege], concurrency: [10]}\n"
            "stop: {duration: 1s}\n")
    run_dir, host = run(load(tmp_path, text), tmp_path, [Replay("siege/4.0.7-benchmark", hang=True),
                                                          Replay("siege/4.0.7-benchmark")])
    (result,) = run_dir.results()
    assert result.outcome.status is Status.OK and len(host.argvs) == 2
    assert any("killed (attempt 1 of 3" in note for note in result.notes)
    assert (run_dir.path / "raw" / "siege-c10-ka-rep1" / "hung-1" / "stdout.txt").exists()


def test_an_interrupted_cell_ends_the_run_and_resume_runs_it_again(tmp_path):
    s = load(tmp_path, ONE)
    with pytest.raises(Interrupted) as stopped:
        run(s, tmp_path, [AB_OK, Replay("ab/2.3-keepalive", interrupt=True)])
    run_dir = store.RunDir.open(Path(stopped.value.run_dir))
    assert [r.outcome.status for r in run_dir.results()] == [Status.OK, Status.INTERRUPTED]
    assert run_dir.manifest().status is RunStatus.INTERRUPTED
    resumed, host = run(s, tmp_path, [AB_OK], resume=run_dir.path)
    assert [argv[2] for argv in host.argvs] == ["8"]  # only the interrupted cell runs again
    assert resumed.finished_cells() == {"ab-c4-ka-rep1", "ab-c8-ka-rep1"}
    assert resumed.manifest().status is RunStatus.COMPLETE


def test_each_target_starts_once_for_its_cells_sized_for_their_highest_concurrency(tmp_path):
    targets = ReplayTargets()
    run_dir, _ = run(two_targets(load(tmp_path, ONE)), tmp_path, [AB_OK] * 4, targets)
    assert targets.events == [("start", "fast", 8), ("stop", "fast", 8), ("start", "slow", 8), ("stop", "slow", 8)]
    ids = [(r.identity.cell_id, r.identity.target_label) for r in run_dir.results()]
    assert ids == [("fast-ab-c4-ka-rep1", "fast"), ("fast-ab-c8-ka-rep1", "fast"),
                   ("slow-ab-c4-ka-rep1", "slow"), ("slow-ab-c8-ka-rep1", "slow")]
    recorded = {t.name: t for t in run_dir.manifest().targets}
    assert recorded["slow"] == TargetRecord(name="slow", kind="url", label="slow", restart="once",
                                            url="http://127.0.0.1:9", version="slow 1.0")


def test_compared_targets_start_for_each_repetition_in_turn_each_in_a_folder_of_its_own(tmp_path):
    targets = ReplayTargets()
    run_dir, _ = run(two_targets(load(tmp_path, ONE + "repeat: 2\n")), tmp_path, [AB_OK] * 8, targets)
    assert [e[:2] for e in targets.events] == [("start", "fast"), ("stop", "fast"), ("start", "slow"),
                                               ("stop", "slow")] * 2
    assert [r.identity.cell_id for r in run_dir.results()][2:5] == [
        "slow-ab-c4-ka-rep1", "slow-ab-c8-ka-rep1", "fast-ab-c4-ka-rep2"]
    for name in ("fast", "slow"):
        assert sorted(p.name for p in (run_dir.path / "targets" / name).iterdir()) == ["rep1", "rep2"]


def test_a_target_restarted_per_cell_starts_for_each_cell(tmp_path):
    targets = ReplayTargets()
    run(two_targets(load(tmp_path, ONE), restart="per-cell"), tmp_path, [AB_OK] * 4, targets)
    assert [e for e in targets.events if e[0] == "start"] == [
        ("start", "fast", 4), ("start", "fast", 8), ("start", "slow", 4), ("start", "slow", 8)]


def test_a_target_that_does_not_start_fails_its_cells_and_the_others_run(tmp_path):
    targets = ReplayTargets(fail={"fast": "exited with code 3 before it was ready"})
    text = ONE.replace("concurrency: [4, 8]", "concurrency: [4], rate: [null, 50]")
    run_dir, host = run(two_targets(load(tmp_path, text)), tmp_path, [AB_OK], targets)
    by_id = {r.identity.cell_id: r for r in run_dir.results()}
    failed = by_id["fast-ab-c4-ka-rep1"]
    assert failed.outcome.status is Status.FAILED
    assert failed.outcome.error == "the target did not start: fast: exited with code 3 before it was ready"
    assert by_id["fast-ab-c4-ka-rate50-rep1"].outcome.status is Status.UNSUPPORTED  # its own reason stays
    assert by_id["slow-ab-c4-ka-rep1"].outcome.status is Status.OK and len(host.argvs) == 1
    manifest = run_dir.manifest()
    assert manifest.status is RunStatus.COMPLETE
    recorded = {t.name: t for t in manifest.targets}
    assert "exited with code 3" in (recorded["fast"].error or "") and recorded["slow"].version


def test_the_manifest_names_each_target_in_json(tmp_path):
    run_dir, _ = run(load(tmp_path, ONE), tmp_path, [AB_OK, AB_OK])
    stored = json.loads((run_dir.path / store.MANIFEST).read_text())
    assert [t["name"] for t in stored["targets"]] == ["url"]


def test_a_bundled_target_out_of_reach_of_the_generator_is_refused_in_one_line(tmp_path):
    from toolbench.errors import ScenarioError
    text = ONE.replace("{url: 'http://127.0.0.1:9'}", "{server: nginx-static}")
    text += "hosts: {generator: {address: 10.0.0.7, user: bench}, target: {address: 127.0.0.1}}\n"
    with pytest.raises(ScenarioError, match=r"targets\.nginx-static\.server: the bundled nginx-static listens on "
                                            r"127\.0\.0\.1, out of reach of a generator at 10\.0\.0\.7"):
        run(load(tmp_path, text), tmp_path, [])
    assert not (tmp_path / "reports").exists()
