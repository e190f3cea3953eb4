"""The method of a run (toolbench.run.plan's order, toolbench.run.settle, toolbench.run.calibrate,
toolbench.run.bracket): the cells' order is drawn from a recorded seed and reproducible from it,
a resumed run keeps it, each cell records what it inherited, and the calibration brackets the run."""
import json
import socket
from pathlib import Path

import pytest

from helpers.replay import Replay, ReplayHost, ReplayTargets
from toolbench.errors import ScenarioErrors
from toolbench.record import store
from toolbench.record.machine import Calibration, Reference
from toolbench.run import calibrate, plan, runner, settle
from toolbench.scenario import read as scenario

MATRIX = ("name: m\ntarget: {url: 'http://127.0.0.1:9'}\nrequest: {path: /}\n"
          "matrix: {tool: [ab, siege], concurrency: [1, 2, 3], keepalive: [true, false]}\nrepeat: 3\n")


def load(tmp_path: Path, text: str) -> scenario.Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return scenario.load(path)


def ids(cells: list[plan.PlannedCell]) -> list[str]:
    return [p.cell.id for p in cells]


TARGETS = ("name: t\ntargets: {a: {url: 'http://127.0.0.1:9'}, b: {url: 'http://127.0.0.1:10'}, "
           "c: {url: 'http://127.0.0.1:11'}}\nrequest: {path: /}\nmatrix: {tool: [ab], concurrency: [1, 2]}\n"
           "repeat: 4\n")


def test_each_repetition_runs_every_target_in_turn_in_an_order_of_its_own(tmp_path):
    s = load(tmp_path, TARGETS)
    orders = []
    for seed in range(10):
        cells = plan.expand(s, seed)
        assert [p.cell.repetition for p in cells] == [r for r in (1, 2, 3, 4) for _ in range(6)]
        # Each target's cells of a repetition together: one start of it serves them.
        targets = [p.cell.target for p in cells]
        assert targets[::2] == targets[1::2]
        orders += [tuple(targets[i:i + 6:2]) for i in range(0, 24, 6)]
    assert {tuple(sorted(o)) for o in orders} == {("a", "b", "c")}  # every target in every repetition
    assert len(set(orders)) > 1 and len({o[0] for o in orders}) == 3  # no target always first
    assert [p.cell.target for p in plan.expand(s)][::2] == list("abc") * 4  # as written: in their order


def test_a_seed_draws_a_new_order_for_each_repetition_and_the_same_seed_the_same_orders(tmp_path):
    s = load(tmp_path, MATRIX)
    written = ids(plan.expand(s))
    shuffled = ids(plan.expand(s, 7))
    assert shuffled == ids(plan.expand(s, 7))  # reproducible from the recorded seed
    assert shuffled != ids(plan.expand(s, 8))
    per_rep = [[i.rsplit("-rep", 1)[0] for i in shuffled if i.endswith(f"-rep{n}")] for n in (1, 2, 3)]
    assert per_rep[0] != per_rep[1] != per_rep[2]  # each repetition its own order
    assert [sorted(r) for r in per_rep] == [sorted(per_rep[0])] * 3  # ... of the same cells
    # Still interleaved: every cell's repetition n before any cell's repetition n + 1.
    assert [int(i.rsplit("rep", 1)[1]) for i in shuffled] == sorted(int(i.rsplit("rep", 1)[1]) for i in written)


def test_the_method_keys_are_read_and_checked_at_the_boundary(tmp_path):
    s = load(tmp_path, MATRIX + "order: as-written\nseed: 42\nsettle: 2s\nwarm_target: none\ncalibrate: false\n"
                                "disturbed: {foreign_cpu: 12%, steal: 30}\nplacement: none\n")
    m = s.method
    assert (m.order, m.seed, m.settle_max_s, m.target_warmup_s, m.calibrate) == ("as-written", 42, 2.0, 0.0, False)
    assert (m.foreign_cpu_pct, m.steal_pct, s.placement.mode) == (12.0, 30.0, "none")
    assert load(tmp_path, MATRIX + "disturbed: none\n").method.foreign_cpu_pct is None
    assert load(tmp_path, MATRIX).method.target_warmup_s == 0.0  # off unless asked
    assert load(tmp_path, MATRIX + "warm_target: 3s\n").method.target_warmup_s == 3.0
    bad = ("order: random\nseed: -1\nsettle: 2h\ndisturbed: {foreign_cpu: lots}\n"
           "placement: {target: '0-1', generator: '1'}\n")
    with pytest.raises(ScenarioErrors) as caught:
        load(tmp_path, MATRIX + bad)
    said = "\n".join(caught.value.problems)
    for key in ("6: order:", "7: seed:", "8: settle:", "9: disturbed.foreign_cpu:", "10: placement: the target "
                "and the generator share CPUs 1"):
        assert key in said, said


def test_a_run_records_its_seed_and_a_resumed_run_keeps_its_order(tmp_path):
    s = load(tmp_path, "name: r\ntarget: {url: 'http://127.0.0.1:9'}\nmatrix: {tool: [ab], concurrency: [1, 2, 3, 4]}\n"
                       "stop: {requests: 20000}\nprobe: {enabled: false}\nmonitor: {enabled: false}\nwarm_target: none\n"
                       "calibrate: false\n")
    ok = Replay("ab/2.3-keepalive", outputs={"percentiles.csv": ".csv"})
    host = ReplayHost([ok, ok, Replay("ab/2.3-keepalive", interrupt=True)], {"ab": "ab/2.3-version"})
    with pytest.raises(runner.Interrupted) as stopped:
        runner.run(s, tmp_path / "reports", host=host, start_target=ReplayTargets(), system_check=False)
    run_dir = Path(stopped.value.run_dir)
    seed = json.loads((run_dir / store.MANIFEST).read_text())["machine"]["method"]["seed"]
    assert isinstance(seed, int) and [a[2] for a in host.argvs] == [p.cell.id.split("-c")[1].split("-")[0]
                                                                    for p in plan.expand(s, seed)][:3]
    again = ReplayHost([ok, ok], {"ab": "ab/2.3-version"})
    runner.run(s, tmp_path / "reports", host=again, start_target=ReplayTargets(), resume=run_dir, system_check=False)
    assert [a[2] for a in again.argvs] == [p.cell.id.split("-c")[1].split("-")[0] for p in plan.expand(s, seed)][2:]
    results = store.RunDir.open(run_dir).results()
    assert [r.machine.position for r in results if r.machine] == [1, 2, 3, 4]


def test_settle_waits_for_an_open_connection_and_no_longer_than_its_bound():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        assert settle.lingering(port) == 0
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        try:
            assert settle.lingering(port) == 2  # both ends, established
            left = settle.settle(port, 0.3, position=5)
            assert left.position == 5 and left.lingering_at_start == 2 and left.settle_s >= 0.3
            assert left.time_wait_at_start is not None and left.time_wait_at_start >= 0
        finally:
            client.close()
            accepted.close()
        assert settle.settle(port, 5.0, position=6).lingering_at_start == 0  # closed: the wait ends
    assert settle.settle(None, 5.0, position=1).settle_s is None  # no port: no wait, and none claimed


def test_settle_gives_up_on_connections_the_target_holds_and_none_of_which_closes():
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        client = socket.create_connection(("127.0.0.1", port))
        accepted, _ = server.accept()
        try:
            left = settle.settle(port, 30.0, position=2)
        finally:
            client.close(), accepted.close()
    assert left.lingering_at_start == 2 and settle.STUCK_S <= left.settle_s < 10.0  # not the 30 s bound


def test_the_calibration_is_a_median_with_its_spread_and_a_drift_beyond_it_is_said():
    taken = calibrate.reference([0], samples=5)
    assert taken.hashed_mb_per_s > 0 and taken.samples == 5 and taken.spread_pct >= 0 and taken.cpus == [0]
    before = Reference(at="t0", hashed_mb_per_s=1000.0, spread_pct=2.0, samples=9)
    same = Calibration(before, Reference(at="t1", hashed_mb_per_s=1015.0, spread_pct=1.0, samples=9))
    slower = Calibration(before, Reference(at="t1", hashed_mb_per_s=900.0, spread_pct=1.0, samples=9))
    assert same.drift_pct == pytest.approx(1.5) and not same.drifted
    assert slower.drift_pct == pytest.approx(-10.0) and slower.drifted
    assert Calibration(before, None).drift_pct is None and not Calibration(before, None).drifted


def test_a_target_asked_to_warm_is_loaded_unmeasured_before_its_first_cell(tmp_path):
    s = load(tmp_path, "name: w\ntarget: {url: 'http://127.0.0.1:9'}\nmatrix: {tool: [ab], concurrency: [4]}\n"
                       "stop: {duration: 1s}\nprobe: {enabled: false}\nmonitor: {enabled: false}\nwarm_target: 1s\n"
                       "calibrate: false\n")
    ok = Replay("ab/2.3-keepalive", outputs={"percentiles.csv": ".csv"})
    host = ReplayHost([ok, ok], {"ab": "ab/2.3-version"})
    summary = runner.run(s, tmp_path / "reports", host=host, start_target=ReplayTargets(), system_check=False)
    assert len(host.argvs) == 2  # the warm-up, then the cell
    assert (summary.run_dir / "targets" / "url" / "warmup" / "stdout.txt").is_file()
    (result,) = store.RunDir.open(summary.run_dir).results()
    assert result.warmup is None  # the target's warm-up is not the cell's: the cell has none of its own
    manifest = json.loads((summary.run_dir / store.MANIFEST).read_text())
    assert manifest["machine"]["method"]["target_warmup_s"] == 1.0
