"""Placement: a scenario's `placement:` resolved against a host's CPUs (split, explicit, SMT
siblings kept together, errors), the pin a local process starts with, `taskset` over SSH,
cpusets on this machine, and toolbench's own threads pinned and restored."""
from __future__ import annotations

import os
import subprocess
import threading
import time
from pathlib import Path
from typing import Callable

import pytest

from helpers.sshd_server import Sshd
from toolbench.errors import HostError
from toolbench.hosts import cpuset
from toolbench.hosts.local import LocalHost
from toolbench.hosts.placement import (HostCpus, Pin, PlacementError, affinity_of, cores_of, halves, local_processes,
                                       own_cpus, parse_cpus, parse_remote, pinned_self, read_local, read_remote,
                                       remote_processes, resolve)
from toolbench.hosts.ssh import SSHHost
from toolbench.record.machine import PlacedProcess
from toolbench.scenario.method import PlacementSpec

# This project's machine (a 2-vCPU VM), as /sys/devices/system/cpu/cpu*/topology/thread_siblings_list reads.
HERE_SIBLINGS = {0: "0\n", 1: "1\n"}
# Two documented 4-CPU layouts with SMT: Intel numbers a core's second thread after every first
# one (cpu0 and cpu2 share core 0), AMD's Linux numbering puts a core's threads side by side.
INTEL_SMT = {0: "0,2\n", 1: "1,3\n", 2: "0,2\n", 3: "1,3\n"}
AMD_SMT = {0: "0-1\n", 1: "0-1\n", 2: "2-3\n", 3: "2-3\n"}


def host(cpus: tuple[int, ...], siblings: dict[int, str], label: str = "local", local: bool = True) -> HostCpus:
    return HostCpus(label, cpus, cores_of(cpus, siblings), local)


def split(machine: HostCpus) -> tuple:
    r = resolve(PlacementSpec("split"), machine, machine, machine, same_machine=True)
    return r.target, r.generator, r.toolbench


def test_cpu_lists_read_as_the_kernel_writes_them():
    assert parse_cpus("0-3,8\n") == (0, 1, 2, 3, 8)
    assert parse_cpus("5") == (5,)
    for bad in ("", "a", "1-", "0-1;2"):
        with pytest.raises(ValueError):
            parse_cpus(bad)


def test_split_on_this_machine_gives_the_target_the_first_cpu():
    assert cores_of((0, 1), HERE_SIBLINGS) == ((0,), (1,))
    assert split(host((0, 1), HERE_SIBLINGS)) == ((0,), (1,), (1,))


def test_split_keeps_smt_siblings_on_one_side():
    assert cores_of((0, 1, 2, 3), INTEL_SMT) == ((0, 2), (1, 3))
    assert split(host((0, 1, 2, 3), INTEL_SMT)) == ((0, 2), (1, 3), (1, 3))
    assert split(host((0, 1, 2, 3), AMD_SMT)) == ((0, 1), (2, 3), (2, 3))


def test_split_halves_only_the_allowed_cpus_and_gives_the_generator_the_larger_half():
    # Allowed 0-2 of the Intel layout: core (0,2) whole, core 1 with one thread.
    assert split(host((0, 1, 2), INTEL_SMT)) == ((0, 2), (1,), (1,))
    three = host((0, 1, 2), {0: "0", 1: "1", 2: "2"})
    assert split(three) == ((0,), (1, 2), (1, 2))


def test_a_single_core_is_split_across_its_siblings_with_a_note_and_a_single_cpu_not_at_all():
    r = resolve(PlacementSpec("split"), one := host((0, 1), AMD_SMT), one, one, same_machine=True)
    assert (r.target, r.generator) == ((0,), (1,))
    assert any("SMT siblings" in note for note in r.notes), r.notes
    assert halves(((3,),)) is None
    lone = host((3,), {3: "3"})
    r = resolve(PlacementSpec("split"), lone, lone, lone, same_machine=True)
    assert (r.target, r.generator, r.toolbench) == (None, None, None)
    assert any("one CPU" in note for note in r.notes), r.notes


def test_sides_on_different_machines_each_keep_every_cpu():
    far = host((0, 1, 2, 3), AMD_SMT, label="root@198.18.0.3:22", local=False)
    here = host((0, 1), HERE_SIBLINGS)
    r = resolve(PlacementSpec("split"), far, here, here, same_machine=False)
    assert (r.target, r.generator, r.toolbench) == (None, None, None)
    assert any("different machines" in note for note in r.notes), r.notes


def test_no_target_started_leaves_the_generator_every_cpu_and_none_places_nothing():
    here = host((0, 1), HERE_SIBLINGS)
    r = resolve(PlacementSpec("split"), None, here, here, same_machine=True)
    assert (r.target, r.generator) == (None, None) and any("no target" in n for n in r.notes)
    r = resolve(PlacementSpec("none"), here, here, here, same_machine=True)
    assert (r.asked, r.target, r.generator, r.toolbench) == ("none", None, None, None)


def test_explicit_lists_are_taken_as_given_and_toolbench_goes_with_the_generator_unless_told():
    here = host((0, 1, 2, 3), INTEL_SMT)
    r = resolve(PlacementSpec("explicit", target=(3,), generator=(0, 1)), here, here, here, same_machine=True)
    assert (r.target, r.generator, r.toolbench) == ((3,), (0, 1), (0, 1))
    assert r.asked == "target 3, generator 0-1"
    r = resolve(PlacementSpec("explicit", target=(3,), generator=(0,), toolbench=(2,)), here, here, here,
                same_machine=True)
    assert r.toolbench == (2,)
    remote_gen = host((0, 1), HERE_SIBLINGS, label="root@gen", local=False)
    r = resolve(PlacementSpec("explicit", target=(3,), generator=(1,)), here, remote_gen, here, same_machine=False)
    assert (r.generator, r.toolbench) == ((1,), None)  # toolbench is not on the generator's machine


def test_a_cpu_the_host_does_not_have_names_the_key_and_its_line():
    here = host((0, 1), HERE_SIBLINGS)
    where = {"placement.target": "s.yaml:4"}
    with pytest.raises(PlacementError, match=r"^s.yaml:4: placement.target: CPU 7 is not on local \(it has 0-1\)$"):
        resolve(PlacementSpec("explicit", target=(7,), generator=(1,)), here, here, here, same_machine=True,
                where=where)
    far = host((0, 1, 2, 3), AMD_SMT, label="root@far:22", local=False)
    with pytest.raises(PlacementError, match=r"placement.generator: CPU 4-5 is not on root@far:22 \(it has 0-3\)"):
        resolve(PlacementSpec("explicit", generator=(4, 5)), here, far, here, same_machine=False)
    with pytest.raises(PlacementError, match=r"placement.toolbench: CPU 9 is not on local"):
        resolve(PlacementSpec("explicit", toolbench=(9,)), here, here, here, same_machine=True)


def test_a_remote_hosts_answer_is_read_into_its_cpus_and_cores():
    answer = "0-3\n0 0,2\n1 1,3\n2 0,2\n3 1,3\n"
    assert parse_remote("root@x", answer) == HostCpus("root@x", (0, 1, 2, 3), ((0, 2), (1, 3)), local=False)
    with pytest.raises(ValueError):
        parse_remote("root@x", "\n")


def test_this_machine_is_read_as_this_process_sees_it():
    here = read_local()
    assert here.cpus == tuple(sorted(os.sched_getaffinity(0)))
    assert sorted(c for core in here.cores for c in core) == list(here.cpus)
    assert affinity_of(os.getpid()) == list(here.cpus)
    assert affinity_of(2**22 + 1) is None  # beyond pid_max's default: no such process


def two_cpus() -> tuple[int, int]:
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        pytest.skip("needs two CPUs")
    return cpus[0], cpus[1]


def until_forked(read: Callable[[], list[PlacedProcess]]) -> list[PlacedProcess]:
    """The processes once the shell's child has exec'd sleep (waited for, within 10 s).

    Between fork and exec the child is a second `sh`, so two processes are not yet enough."""
    deadline = time.monotonic() + 10
    found = read()
    while not {"sh", "sleep"} <= {p.name for p in found} and time.monotonic() < deadline:
        time.sleep(0.02)
        found = read()
    return found


def test_a_local_tool_starts_on_its_pin_and_what_it_forks_stays_there(tmp_path: Path):
    _, second = two_cpus()
    started = LocalHost().with_limits({}).with_pin(Pin((second,))).start(
        ["sh", "-c", "sleep 30 & wait"], tmp_path, tmp_path / "out.txt", tmp_path / "err.txt")
    try:
        placed = until_forked(lambda: local_processes([started.pid], "tool"))
        assert {p.name for p in placed} == {"sh", "sleep"}, placed
        assert all(p.cpus == [second] for p in placed), placed
    finally:
        started.kill()
        started.wait(5)
    # The pin survives with_limits and with_lifeline; capture runs where toolbench does (here: unpinned).
    pinned = LocalHost().with_pin(Pin((second,)))
    assert pinned.with_limits({"nofile": 1024}).pin == pinned.pin
    said = pinned.capture(["sed", "-n", "s/^Cpus_allowed_list:[[:space:]]*//p", "/proc/self/status"]).stdout
    assert parse_cpus(said) == tuple(sorted(os.sched_getaffinity(0)))


def test_a_pin_on_a_cpu_that_is_not_there_fails_the_start_with_a_host_error(tmp_path: Path):
    with pytest.raises(HostError, match="cannot be started on CPUs 4000"):
        LocalHost().with_pin(Pin((4000,))).start(["true"], tmp_path, tmp_path / "o", tmp_path / "e")


def test_cpusets_are_made_joined_and_removed(tmp_path: Path):
    first, second = two_cpus()
    sets, said = cpuset.make({"target": (first,), "generator": (second,)})
    if sets is None:
        pytest.skip(f"no cpuset here: {said}")
    try:
        assert Path(said) == sets.run_group and (sets.run_group / "target").is_dir()
        started = LocalHost().with_pin(Pin((second,), sets.procs("generator"))).start(
            ["sleep", "30"], tmp_path, tmp_path / "o", tmp_path / "e")
        try:
            group = Path(f"/proc/{started.pid}/cpuset").read_text().strip()
            assert group.endswith(f"/{sets.run_group.name}/generator"), group
            assert affinity_of(started.pid) == [second]
        finally:
            started.kill()
            started.wait(5)
    finally:
        assert cpuset.remove(sets) is None
    assert not sets.run_group.exists()


def test_own_group_is_read_from_proc_self_cgroup():
    hybrid = "9:name=systemd:/\n4:memory:/a/b\n3:cpuset:/\n2:cpu,cpuacct:/x\n0::/\n"
    assert cpuset.own_group(hybrid, "cpuset") == "/" and cpuset.own_group(hybrid, "cpuacct") == "/x"
    assert cpuset.own_group("0::/user.slice/session-1.scope\n", None) == "/user.slice/session-1.scope"
    assert cpuset.own_group("0::/\n", "cpuset") is None


def test_a_stale_group_of_a_dead_toolbench_is_removed_and_a_live_ones_is_kept(tmp_path: Path):
    dead = subprocess.Popen(["true"])
    dead.wait()
    (tmp_path / f"toolbench-{dead.pid}-1" / "target").mkdir(parents=True)
    (tmp_path / f"toolbench-{os.getpid()}-1").mkdir()
    (tmp_path / "someone-else").mkdir()
    cpuset.remove_stale(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([f"toolbench-{os.getpid()}-1", "someone-else"])


def test_toolbench_pins_every_thread_of_its_own_and_restores_each():
    first, _ = two_cpus()
    before = os.sched_getaffinity(0)
    seen: dict[str, set[int]] = {}
    go, looked, done = threading.Event(), threading.Event(), threading.Event()

    def worker() -> None:  # a thread already running when toolbench pins itself (a monitor's, say)
        go.wait(10)
        seen["during"] = os.sched_getaffinity(0)
        looked.set()
        done.wait(10)
        seen["after"] = os.sched_getaffinity(0)

    thread = threading.Thread(target=worker)
    thread.start()
    try:
        with pinned_self((first,)):
            assert os.sched_getaffinity(0) == {first}
            assert own_cpus() == before and LocalHost().facts().cpu_count == len(before)  # the machine's
            go.set()
            assert looked.wait(10)
    finally:
        go.set()
        done.set()
        thread.join(10)
    assert seen == {"during": {first}, "after": before}
    assert os.sched_getaffinity(0) == before


def test_pinned_self_restores_after_an_error():
    first, _ = two_cpus()
    before = os.sched_getaffinity(0)
    with pytest.raises(RuntimeError):
        with pinned_self((first,)):
            raise RuntimeError("the run failed")
    assert os.sched_getaffinity(0) == before


@pytest.mark.integration
def test_over_ssh_a_pinned_host_runs_its_commands_under_taskset_and_groups_are_read_there(sshd: Sshd,
                                                                                           tmp_path: Path):
    first, second = two_cpus()
    with SSHHost(sshd.spec(), known_hosts=sshd.known_hosts) as plain:
        remote = plain.with_cpus((second,))
        said = remote.capture(["sed", "-n", "s/^Cpus_allowed_list:[[:space:]]*//p", "/proc/self/status"])
        assert parse_cpus(said.stdout) == (second,), said
        assert remote.with_limits({"nofile": 4096}).cpus == (second,)
        running = remote.start(["sh", "-c", "sleep 30 & sleep 30"], "/tmp", tmp_path / "o", tmp_path / "e")
        try:
            placed = until_forked(lambda: remote_processes(plain, [running.pid], "target"))
            assert {p.name for p in placed} == {"sh", "sleep"} and len(placed) >= 2, placed
            assert all(p.cpus == [second] and p.host == plain.label for p in placed), placed
        finally:
            running.kill()
            running.wait(10)
        there = read_remote(plain)  # the login's own CPUs: the same machine's, unplaced
        assert there.cpus == tuple(sorted(os.sched_getaffinity(0))) and not there.local


@pytest.mark.integration
def test_a_host_without_taskset_is_refused_with_a_clear_error(tmp_path_factory: pytest.TempPathFactory):
    from helpers import sshd_server

    bare = tmp_path_factory.mktemp("bare-path")
    for program in ("sh", "cat", "sed"):
        (bare / program).symlink_to(f"/bin/{program}")
    serving = sshd_server.serve(tmp_path_factory, extra_config=f"SetEnv PATH={bare}\n")
    server = next(serving)
    try:
        with SSHHost(server.spec(), known_hosts=server.known_hosts) as plain:
            with pytest.raises(HostError, match="taskset is not installed"):
                plain.with_cpus((0,))
    finally:
        serving.close()


def test_a_hierarchy_without_the_cpuset_controller_gives_no_group_and_says_why():
    """This machine's unified (v2) hierarchy is mounted beside the v1 ones, with the cpuset
    controller bound to v1: there the placement falls back to affinity only."""
    unified = Path("/sys/fs/cgroup/unified")
    controllers = unified / "cgroup.controllers"
    if not controllers.exists() or "cpuset" in controllers.read_text().split():
        pytest.skip("no v2 hierarchy without cpuset here")
    sets, why = cpuset.make_in(unified, {"target": (0,)}, v2=True)
    assert sets is None and why == f"the cpuset controller is not enabled for {unified}"
    assert not list(unified.glob(f"toolbench-{os.getpid()}-*"))
