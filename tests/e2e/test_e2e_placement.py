"""Placement end to end: real runs (the bundled nginx-static, the engine, cells of 1 s) with
`placement: split`, explicit lists and `none`. While each cell runs, the kernel is asked where
every nginx process of the run may run, and that must be the target's CPUs (and its cpuset);
each cell's tool had the generator's; the engine sized its workers by them; toolbench's own
threads were on their CPUs during the run and back on theirs after. Then the same over SSH,
on the machines of tests/helpers/netns.py: the target's servers and the tool under `taskset`."""
from __future__ import annotations

import os
import re
from pathlib import Path

import psutil
import pytest

from helpers import netns
from helpers.netns_runs import run_in_ctl
from toolbench.contract.cell import Cell
from toolbench.hosts.placement import PlacementError, affinity_of
from toolbench.record import store
from toolbench.record.machine import Placement
from toolbench.record.schema import RunResult, Status
from toolbench.report.environment import placement_phrase
from toolbench.run import runner
from toolbench.scenario import read as scenario

pytestmark = pytest.mark.integration
MEASURED = (Status.OK, Status.DISTURBED)  # a busy machine may disturb a cell: its figures are kept all the same

SCENARIO = """\
name: placed
target: {{server: nginx-static}}
matrix: {{tool: [engine], concurrency: [4], keepalive: [true, false]}}
stop: {{duration: 1s}}
calibrate: false
placement: {placement}
"""


def cpus() -> list[int]:
    allowed = sorted(os.sched_getaffinity(0))
    if len(allowed) < 2:
        pytest.skip("placement needs two CPUs")
    return allowed


class Watcher:
    """Looks at the kernel while each cell runs: which nginx processes of this run exist (the
    master started in the run's folder, and its workers), and where each may run; and at what
    each finished cell recorded."""

    def __init__(self, reports: Path) -> None:
        self.reports = reports
        self.seen: list[tuple[dict[int, list[int] | None], dict[int, str], set[int]]] = []
        self.own: list[set[int]] = []
        self.results: list[RunResult] = []

    def planned(self, total: int, skipped: int) -> None:
        pass

    def cell_started(self, index: int, cell: Cell) -> None:
        (run,) = [p for p in self.reports.iterdir() if p.is_dir()]
        recorded = {p.pid for p in store.RunDir.open(run).manifest().machine.placement.processes if p.role == "target"}
        masters = [p for p in psutil.process_iter(["name", "cmdline"])
                   if p.info["name"] == "nginx" and str(run) in " ".join(p.info["cmdline"] or [])]
        ours = [p for master in masters for p in (master, *master.children(recursive=True))]  # its workers
        groups = {p.pid: _cpuset(p.pid) for p in ours}
        self.seen.append(({p.pid: affinity_of(p.pid) for p in ours}, groups, recorded))
        self.own.append(os.sched_getaffinity(0))

    def cell_finished(self, index: int, result: RunResult) -> None:
        self.results.append(result)


def _cpuset(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cpuset").read_text().strip()
    except OSError:
        return ""


def run(tmp_path: Path, placement: str) -> tuple[Watcher, Path]:
    reports = tmp_path / "reports"
    reports.mkdir()
    watcher = Watcher(reports)
    before = os.sched_getaffinity(0)
    summary = runner.run(scenario.load(_write(tmp_path, placement)), reports, observer=watcher)
    assert os.sched_getaffinity(0) == before, "toolbench's own affinity is restored after the run"
    assert len(watcher.results) == 2 and all(r.outcome.status in MEASURED for r in watcher.results), [
        (r.outcome.status, r.outcome.error) for r in watcher.results]
    return watcher, summary.run_dir


def _write(tmp_path: Path, placement: str) -> Path:
    path = tmp_path / "placed.yaml"
    path.write_text(SCENARIO.format(placement=placement))
    return path


def workers(run_dir: Path, result: RunResult) -> int:
    said = (run_dir / "raw" / result.identity.cell_id / "stdout.txt").read_text()
    found = re.search(r"(\d+) workers? and \d+ connections", said)
    assert found, said
    return int(found.group(1))


def placement_of(run_dir: Path) -> Placement:
    machine = store.RunDir.open(run_dir).manifest().machine
    assert machine is not None and machine.placement is not None
    return machine.placement


def check_cells(watcher: Watcher, run_dir: Path, target: list[int], generator: list[int], own: list[int]) -> None:
    """Every nginx process of the run, found by its command line while each cell ran, was the
    target's CPUs, was in the record, and each cell's tool had the generator's CPUs."""
    for live, groups, recorded in watcher.seen:
        assert live and set(live) == recorded, (live, recorded)
        assert all(cpus == target for cpus in live.values()), live
    assert all(mine == set(own) for mine in watcher.own), watcher.own
    for result in watcher.results:
        assert result.machine is not None and result.machine.tool_cpus == generator, result.machine
        assert workers(run_dir, result) == len(generator)  # the engine sized itself by the CPUs it had


def test_split_puts_the_target_on_the_first_half_the_tool_and_toolbench_on_the_second(tmp_path: Path) -> None:
    allowed = cpus()
    half = len(allowed) // 2  # no SMT on this project's machine; elsewhere resolve() keeps siblings together
    watcher, run_dir = run(tmp_path, "split")
    placement = placement_of(run_dir)
    target, generator = placement.target_cpus, placement.generator_cpus
    assert placement.asked == "split" and target is not None and generator is not None
    assert sorted(target + generator) == allowed and not set(target) & set(generator)
    assert placement.toolbench_cpus == generator and len(target) >= 1 and len(target) <= half + 1
    check_cells(watcher, run_dir, target, generator, generator)
    if placement.cpuset is not None:  # a cpuset per side: every nginx process was in the target's
        for _, groups, _ in watcher.seen:
            assert all(g.endswith(f"/{Path(placement.cpuset).name}/target") for g in groups.values()), groups
        assert not Path(placement.cpuset).exists(), "the run's cpusets are removed at its end"
    else:
        assert any(note.startswith("affinity only") for note in placement.notes), placement.notes
    roles = {p.role for p in placement.processes}
    assert roles == {"target", "toolbench"}
    assert placement_phrase(placement).endswith("(toolbench with the generator)")


def test_explicit_lists_are_what_each_side_gets_and_nginx_sizes_its_workers_by_the_targets(tmp_path: Path) -> None:
    first, second = cpus()[:2]
    watcher, run_dir = run(tmp_path, f"{{target: {second}, generator: [{first}], toolbench: {second}}}")
    placement = placement_of(run_dir)
    assert placement.asked == f"target {second}, generator {first}, toolbench {second}"
    assert (placement.target_cpus, placement.generator_cpus, placement.toolbench_cpus) == ([second], [first], [second])
    check_cells(watcher, run_dir, [second], [first], [second])
    conf = (run_dir / "targets" / "nginx-static" / "nginx.conf").read_text()
    assert "worker_processes 1;" in conf  # `auto`: one per CPU of the target's, not of the machine's
    assert all(r.server_cost is None or r.server_cost.workers == 1 for r in watcher.results)
    assert placement_phrase(placement) == (f"the target on CPU {second}, the generator on CPU {first} "
                                           "(toolbench with the target)")


def test_none_leaves_every_process_where_the_scheduler_puts_it(tmp_path: Path) -> None:
    allowed = cpus()
    watcher, run_dir = run(tmp_path, "none")
    placement = placement_of(run_dir)
    assert placement.asked == "none" and placement.cpuset is None
    assert (placement.target_cpus, placement.generator_cpus, placement.toolbench_cpus) == (None, None, None)
    check_cells(watcher, run_dir, allowed, allowed, allowed)
    assert placement_phrase(placement) == "unplaced: the target and the generator shared every CPU"


def test_a_cpu_the_machine_does_not_have_fails_the_run_before_it_starts(tmp_path: Path) -> None:
    s = scenario.load(_write(tmp_path, "{target: 4000, generator: 0}"))
    with pytest.raises(PlacementError, match=r"placed.yaml:6: placement.target: CPU 4000 is not on local"):
        runner.run(s, tmp_path / "reports")
    assert not (tmp_path / "reports").exists() or not any((tmp_path / "reports").iterdir())


FAR = """\
name: far-placed
hosts:
  generator: {{address: {gen}, user: {user}, key: "{key}"}}
  target: {{address: {target}, user: {user}, key: "{key}"}}
target: {{server: nginx-static}}
matrix: {{tool: [engine], concurrency: [2], keepalive: [true]}}
stop: {{duration: 1s}}
calibrate: false
probe: {{enabled: false}}
placement: {{target: {target_cpu}, generator: {generator_cpu}}}
"""


def test_over_ssh_the_targets_servers_and_the_tool_run_under_taskset_on_their_cpus(
        testnet: netns.TestNet, tmp_path: Path) -> None:
    """toolbench in `ctl`, the bundled nginx started over SSH in `target`, the engine over SSH
    in `gen1`: each side's processes get its list there (the machines are namespaces of this
    one, so their CPUs are this machine's)."""
    first, second = cpus()[:2]
    gen, target = testnet.machines["gen1"], testnet.machines["target"]
    assert gen.sshd is not None and target.sshd is not None
    path = tmp_path / "far.yaml"
    path.write_text(FAR.format(gen=gen.address, target=target.address, user=gen.sshd.user, key=gen.sshd.client_key,
                               target_cpu=second, generator_cpu=first))
    done, results, _ = run_in_ctl(testnet, path, tmp_path / "reports")
    assert done.returncode in (0, 1), done.stderr.decode()[-3000:]  # 1: a cell disturbed on a busy machine
    (result,) = results
    assert result.outcome.status in MEASURED, result.outcome.error
    run_dir = next(p for p in (tmp_path / "reports").iterdir() if p.is_dir())
    placement = placement_of(run_dir)
    there = f"root@{target.address}:22" if target.sshd.user == "root" else f"{target.sshd.user}@{target.address}:22"
    assert (placement.target_host, placement.target_cpus, placement.generator_cpus) == (there, [second], [first])
    assert placement.toolbench_cpus is None and placement.cpuset is None  # toolbench is on neither machine
    assert any("taskset" in note for note in placement.notes), placement.notes
    served = [p for p in placement.processes if p.role == "target"]
    assert len(served) >= 2 and {p.name for p in served} == {"nginx"}, served  # the master and its worker
    assert all(p.cpus == [second] and p.host == there for p in served), served
    assert workers(run_dir, result) == 1  # the engine there saw the one CPU taskset gave it
    assert "worker_processes 1;" in (run_dir / "targets" / "nginx-static" / "nginx.conf").read_text()
    assert placement_phrase(placement) == (f"the target on CPU {second} of {there}, the generator on CPU {first} "
                                           f"of {placement.generator_host} (toolbench unplaced)")
