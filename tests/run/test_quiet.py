"""The machine around a cell (toolbench.run.quiet): /proc/stat's arithmetic on recorded text, the
foreign CPU of the processes outside the known trees (with the children they reaped), the machine's
total less the known kept beside it, the decision that makes a cell disturbed, and the watch on this
machine's real processes."""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import time

import pytest

from helpers import disturbed_run
from helpers.hogs import Hogs
from toolbench.record import store
from toolbench.record.observed import ForeignProcess
from toolbench.run import quiet
from toolbench.run.quiet import Proc, Snapshot, StatTimes
from toolbench.servers.process import RunningTarget

# Two reads of this machine's /proc/stat (a 2-CPU Firecracker VM), the cpu lines and a few others.
BEFORE = """cpu  1086456 502 237091 917960 58637 0 56354 10652 0 0
cpu0 418788 241 128593 577791 22026 0 28943 5878 0 0
cpu1 667667 260 108497 340169 36611 0 27410 4774 0 0
intr 17191619 0 0 0 0
ctxt 69459961
btime 1796161238
softirq 121863603 0 937433 281 113277136 1241261 0 2517 1258267 21148 5125560
"""
AFTER = """cpu  1096368 559 239928 934824 64749 0 56996 10959 0 0
cpu0 422676 275 129698 589015 23770 0 29174 6001 0 0
cpu1 673692 283 110229 345809 40979 0 27821 4957 0 0
intr 17291619 0 0 0 0
"""
TICK = 0.01
RESOLUTION = quiet.RESOLUTION_TICKS * TICK


def test_the_aggregate_line_gives_user_nice_system_and_steal_in_seconds() -> None:
    before, after = quiet.stat_times(BEFORE, 100), quiet.stat_times(AFTER, 100)
    assert before == StatTimes(busy_s=(1086456 + 502 + 237091) / 100, steal_s=10652 / 100, irq_s=56354 / 100,
                               idle_s=(917960 + 58637) / 100, cpus=2)
    # irq (0) and softirq (56354 -> 56996) are not in it: loopback's softirq is the cell's own work
    assert after.busy_s - before.busy_s == pytest.approx((9912 + 57 + 2837) / 100)
    assert after.steal_s - before.steal_s == pytest.approx(3.07)
    # an old kernel: no iowait, irq nor steal
    assert quiet.stat_times("cpu  10 0 5 100\ncpu0 10 0 5 100\n", 250) == StatTimes(0.06, 0.0, cpus=1)
    with pytest.raises(ValueError):
        quiet.stat_times("cpu0 1 2 3 4\n", 100)


def snap(at: float, busy_s: float, own_s: float, procs: dict[int, Proc], steal_s: float = 0.0) -> Snapshot:
    return Snapshot(at, StatTimes(busy_s, steal_s), own_s, procs)


def proc(name: str, ppid: int, cpu_s: float, created: float = 100.0, children_s: float = 0.0) -> Proc:
    return Proc(name, ppid, cpu_s, created, children_s)


def test_foreign_is_what_the_processes_outside_the_tool_the_target_toolbench_and_kernel_threads_took() -> None:
    own = os.getpid()
    start = snap(10.0, 1000.0, 5.0, {
        2: proc("kthreadd", 0, 0.0), 14: proc("ksoftirqd/0", 2, 1.0),
        500: proc("nginx", 1, 0.2), 501: proc("nginx", 500, 3.0), 502: proc("nginx", 500, 3.0),
        700: proc("stress", 1, 50.0), 800: proc("sshd", 1, 1.0), own: proc("python", 1, 5.0)})
    end = snap(12.0, 1000.0 + 4.0, 5.3, {
        2: proc("kthreadd", 0, 0.0), 14: proc("ksoftirqd/0", 2, 1.2),
        500: proc("nginx", 1, 0.2), 501: proc("nginx", 500, 3.5), 502: proc("nginx", 500, 3.4),
        700: proc("stress", 1, 51.6), 800: proc("sshd", 1, 1.05),
        900: proc("cron-job", 1, 0.1, created=11.0), own: proc("python", 1, 5.3)}, steal_s=0.1)
    found = quiet.figures(start, end, tool_cpu_s=1.2, tool_pid=None, target_roots=[500], tick_s=TICK)
    # known: tool 1.2 + nginx 0.9 + toolbench 0.3 + ksoftirqd 0.2 = 2.6 of 4.0, kept beside; the
    # processes seen outside the known trees took 1.6 + 0.1 + 0.05, less the resolution
    assert found.known_s == pytest.approx(2.6) and found.seen_s == pytest.approx(1.75)
    assert found.foreign_cpu_pct == pytest.approx((1.75 - RESOLUTION) / 2.0 * 100, abs=0.05)
    assert found.steal_pct == pytest.approx(5.0)
    # the busiest foreign processes, a process started meanwhile counted whole; none of the known trees
    assert found.foreign == [ForeignProcess(700, "stress", 80.0), ForeignProcess(900, "cron-job", 5.0),
                             ForeignProcess(800, "sshd", 2.5)]


def test_a_short_lived_program_counts_through_the_parent_that_waited_for_it() -> None:
    """A build's compilers start and end between the two scans: make's reaped children hold them;
    a child alive at the start and reaped inside counts only what it spent in the window."""
    start = snap(0.0, 100.0, 1.0, {10: proc("make", 1, 0.5, children_s=30.0), 11: proc("cc1", 10, 4.0)})
    # cc1 (4.0 s before the window, 4.6 s at its end) and two more compilers of 0.5 s each, reaped
    end = snap(2.0, 100.0 + 3.0, 1.1, {10: proc("make", 1, 0.52, children_s=30.0 + 4.6 + 1.0)})
    found = quiet.figures(start, end, tool_cpu_s=1.0, tool_pid=None, target_roots=[], tick_s=TICK)
    assert found.seen_s == pytest.approx(0.02 + 0.6 + 1.0)
    assert found.foreign == [ForeignProcess(10, "make", 81.0)]
    assert found.foreign_cpu_pct == pytest.approx((1.62 - RESOLUTION) / 2.0 * 100, abs=0.05)
    # a process started in the window counts with everything it reaped
    new = snap(2.0, 103.0, 1.1, {10: proc("make", 1, 0.52, children_s=30.0 + 4.6),
                                  20: proc("sh", 1, 0.01, created=50.0, children_s=0.7)})
    assert quiet.figures(start, new, 1.0, None, [], TICK).seen_s == pytest.approx(0.02 + 0.6 + 0.71)


def test_the_total_less_the_known_is_kept_but_not_judged() -> None:
    """The kernel's work on idle CPUs is in no task's time, and grows with the cell's own rate:
    measured here 0.9 to 1.3 s over a 10 s cell of ab with keep-alive, nothing else running."""
    start = snap(0.0, 100.0, 1.0, {10: proc("agent", 1, 0.5)})
    end = snap(10.0, 100.0 + 17.56, 1.1, {10: proc("agent", 1, 0.53)})
    found = quiet.figures(start, end, tool_cpu_s=16.15, tool_pid=None, target_roots=[], tick_s=TICK)
    assert found.total_s - found.known_s == pytest.approx(1.31) and found.seen_s == pytest.approx(0.03)
    assert found.foreign_cpu_pct == 0.0


def test_irq_time_is_in_the_total_where_the_kernel_charges_it_to_the_tasks() -> None:
    """Without IRQ time accounting, the tool's and the server's own times hold the softirq work
    their traffic caused: the total must hold it too, or a quiet cell reads far below zero."""
    start = Snapshot(0.0, StatTimes(10.0, 0.0, irq_s=5.0), 0.0, {})
    end = Snapshot(2.0, StatTimes(11.4, 0.0, irq_s=5.6), 0.0, {})  # 1.4 s user+system, 0.6 s softirq
    charged = quiet.figures(start, end, 2.0, None, [], TICK, irq_in_tasks=True)
    apart = quiet.figures(start, end, 2.0, None, [], TICK, irq_in_tasks=False)
    assert charged.total_s == pytest.approx(2.0) and apart.total_s == pytest.approx(1.4)


def test_the_total_is_the_cpus_time_less_idle_and_steal_not_the_busy_ticks() -> None:
    """A generator's CPU that wakes in short bursts: its busy ticks (user, system, softirq) say
    3.3 s, its exact idle says the tasks ran 2.6 s, which the tool and the target took. Nothing
    is foreign, where the ticks would have said 0.7 s (6 % of a CPU over 10 s)."""
    start = Snapshot(0.0, StatTimes(100.0, 5.0, irq_s=3.0, idle_s=400.0, cpus=2), 0.0, {})
    end = Snapshot(10.0, StatTimes(100.0 + 2.9, 5.1, irq_s=3.4, idle_s=400.0 + 17.3, cpus=2), 0.0, {})
    found = quiet.figures(start, end, 2.6, None, [], TICK, irq_in_tasks=True)
    assert found.total_s == pytest.approx(2.6)  # 2 CPUs x 10 s - 17.3 idle - 0.1 steal
    assert found.foreign_cpu_pct == 0.0 and found.steal_pct == 1.0
    # Where tasks' times leave irq and softirq out, so does the total: 0.4 s of it here
    assert quiet.figures(start, end, 2.6, None, [], TICK, irq_in_tasks=False).total_s == pytest.approx(2.2)
    # Idle taken away by no process the scans saw is kept in the total, not called foreign
    busier = Snapshot(10.0, StatTimes(100.0 + 3.9, 5.1, irq_s=3.4, idle_s=400.0 + 16.3, cpus=2), 0.0, {})
    found = quiet.figures(start, busier, 2.6, None, [], TICK, irq_in_tasks=True)
    assert found.total_s == pytest.approx(3.6) and found.foreign_cpu_pct == 0.0
    # A CPU brought online between the reads: the busy ticks, as without idle times
    grown = Snapshot(10.0, StatTimes(100.0 + 2.9, 5.1, irq_s=3.4, idle_s=417.3, cpus=3), 0.0, {})
    assert quiet.figures(start, grown, 2.6, None, [], TICK, irq_in_tasks=True).total_s == pytest.approx(3.3)


@pytest.mark.parametrize(("lines", "charged"), [
    (["# CONFIG_IRQ_TIME_ACCOUNTING is not set", "CONFIG_TICK_CPU_ACCOUNTING=y"], True),  # this project's VM
    (["CONFIG_IRQ_TIME_ACCOUNTING=y", "CONFIG_TICK_CPU_ACCOUNTING=y"], False),  # Debian's and Ubuntu's kernels
    (["# CONFIG_IRQ_TIME_ACCOUNTING is not set", "CONFIG_VIRT_CPU_ACCOUNTING_NATIVE=y"], False),
    ([], False),  # not said: the total that cannot make a quiet cell disturbed
])
def test_the_kernels_configuration_says_where_irq_time_goes(lines: list[str], charged: bool) -> None:
    assert quiet.config_charges_irq_to_tasks("\n".join(["CONFIG_HZ=250", *lines])) is charged


def test_a_reused_pid_is_another_process_and_a_quiet_window_is_zero_not_negative() -> None:
    start = snap(0.0, 50.0, 1.0, {300: proc("old", 1, 40.0, created=1.0)})
    end = snap(1.0, 50.1, 1.05, {300: proc("new", 1, 0.02, created=0.5)})
    found = quiet.figures(start, end, tool_cpu_s=0.9, tool_pid=None, target_roots=[], tick_s=TICK)
    assert found.foreign_cpu_pct == 0.0  # 0.1 - 0.95: the counters' own rounding, clamped
    assert found.foreign == [ForeignProcess(300, "new", 2.0)]  # not 0.02 - 40


def test_the_resolution_keeps_a_few_ticks_of_rounding_from_counting() -> None:
    start = snap(0.0, 10.0, 0.0, {70: proc("agent", 1, 1.0)})
    at_floor = snap(1.0, 11.0, 0.0, {70: proc("agent", 1, 1.0 + quiet.RESOLUTION_TICKS * TICK)})
    assert quiet.figures(start, at_floor, 0.5, None, [], TICK).foreign_cpu_pct == 0.0
    beyond = quiet.figures(start, snap(1.0, 11.0, 0.0, {70: proc("agent", 1, 1.3)}), 0.5, None, [], TICK)
    assert beyond.foreign_cpu_pct == pytest.approx((0.3 - quiet.RESOLUTION_TICKS * TICK) * 100, abs=0.05)


def test_without_the_tools_cpu_only_the_processes_seen_count() -> None:
    start = snap(0.0, 10.0, 0.0, {70: proc("stress", 1, 0.0)})
    end = snap(1.0, 12.0, 0.0, {70: proc("stress", 1, 0.5)}, steal_s=0.02)
    found = quiet.figures(start, end, tool_cpu_s=None, tool_pid=None, target_roots=[], tick_s=TICK)
    assert found.known_s is None and found.steal_pct == 2.0
    # 0.5 s, not 2.0 - 0: the tool's own CPU is in the total
    assert found.foreign_cpu_pct == pytest.approx((0.5 - RESOLUTION) * 100)


def test_what_toolbench_reaped_beside_the_tool_is_its_own_work() -> None:
    """Its `ss` calls end before the window's last scan: only its children's times hold them."""
    start = Snapshot(0.0, StatTimes(10.0, 0.0), 0.0, {}, reaped_cpu_s=1.0)
    # the tool (0.5 s) reaped inside the window, and 0.2 s of `ss`: 0.7 s of 1.0 known
    reaped_both = quiet.figures(start, Snapshot(1.0, StatTimes(11.0, 0.0), 0.0, {}, reaped_cpu_s=1.7),
                                tool_cpu_s=0.5, tool_pid=None, target_roots=[], tick_s=TICK)
    assert reaped_both.known_s == pytest.approx(0.7) and reaped_both.foreign_cpu_pct == 0.0
    # the tool reaped after the window: its CPU is not counted twice, nor the `ss` guessed
    tool_later = quiet.figures(start, Snapshot(1.0, StatTimes(11.0, 0.0), 0.0, {}, reaped_cpu_s=1.2),
                               tool_cpu_s=0.5, tool_pid=None, target_roots=[], tick_s=TICK)
    assert tool_later.known_s == pytest.approx(0.5)
    before = quiet.snapshot(scan_first=False).reaped_cpu_s
    subprocess.run([sys.executable, "-c", "sum(range(5_000_000))"], check=True)  # a child, reaped
    assert quiet.snapshot(scan_first=False).reaped_cpu_s - before >= 0.02


def test_the_cells_record_keeps_the_figures_its_foreign_share_was_taken_from(tmp_path) -> None:
    """What the foreign share was taken from (the processes seen), and the total and the known
    beside it, as stored: a reader can judge what no process's time holds."""
    start = snap(0.0, 10.0, 0.0, {70: proc("stress", 1, 0.0)})
    end = snap(2.0, 13.0, 0.0, {70: proc("stress", 1, 0.25)})
    found = quiet.figures(start, end, tool_cpu_s=1.5, tool_pid=None, target_roots=[], tick_s=TICK)
    machine = quiet.cell_machine(found, None, [1], None)
    assert (machine.cpu_total_s, machine.cpu_known_s, machine.cpu_seen_s) == (3.0, 1.5, 0.25)
    assert machine.foreign_cpu_pct == pytest.approx((0.25 - RESOLUTION) / 2.0 * 100, abs=0.05)
    run = disturbed_run.make(tmp_path / "run")
    [r] = [r for r in run.results() if r.identity.cell_id == disturbed_run.CELL]
    run.append(dataclasses.replace(r, machine=machine))
    assert store.RunDir.open(run.path).results()[-1].machine == machine
    unknown = quiet.cell_machine(quiet.figures(start, end, None, None, [], TICK), None, None, None)
    assert unknown.cpu_known_s is None and unknown.cpu_total_s == 3.0
    assert quiet.cell_machine(None, None, None, None).cpu_total_s is None  # a remote generator: not measured


def test_the_tools_own_children_are_never_named_foreign() -> None:
    start = snap(0.0, 10.0, 0.0, {40: proc("ab", 1, 0.0)})
    end = snap(1.0, 11.0, 0.0, {40: proc("ab", 1, 0.5), 41: proc("ab-helper", 40, 0.4, created=0.5)})
    found = quiet.figures(start, end, tool_cpu_s=0.9, tool_pid=40, target_roots=[], tick_s=TICK)
    assert found.foreign == []


def test_the_decision_names_the_busiest_and_the_limits() -> None:
    hogs = [ForeignProcess(1234, "python3", 85.0), ForeignProcess(99, "stress", 2.0)]
    why = quiet.disturbance(87.0, 0.0, hogs, foreign_limit_pct=5.0, steal_limit_pct=5.0)
    assert why == ("foreign work took 87 % of one core (python3 pid 1234 85 %, stress pid 99 2 %), "
                   "over the limit of 5 %")
    assert quiet.disturbance(5.0, 5.0, hogs, 5.0, 5.0) is None  # at the limit is not over it
    assert quiet.disturbance(1.0, 12.4, [], 5.0, 5.0) == "the hypervisor stole 12 % of one core, over the limit of 5 %"
    both = quiet.disturbance(30.0, 9.0, [], 20.0, 5.0)
    assert both is not None and both.startswith("foreign work took 30 %") and "stole 9 %" in both
    assert quiet.disturbance(None, None, hogs, 5.0, 5.0) is None  # not measured disturbs nothing
    assert quiet.disturbance(87.0, 40.0, hogs, None, None) is None  # `disturbed: none`: not judged


def test_descendants_follow_the_parents_read() -> None:
    procs = {1: proc("init", 0, 0), 10: proc("a", 1, 0), 11: proc("b", 10, 0), 12: proc("c", 11, 0),
             20: proc("d", 1, 0)}
    assert quiet.descendants([10], procs) == {10, 11, 12}
    assert quiet.descendants([0, 99], procs) == {99}  # an unknown root is itself; 0 is none


def test_a_real_hog_is_foreign_and_a_tool_is_not() -> None:
    """On this machine's real counters: a busy loop that is neither tool, target nor toolbench
    is foreign work, named; the same loop as the tool is known (its rusage), never named."""
    busy = Hogs(bound_s=30, count=1)
    try:
        watch = quiet.Watch(_no_target())
        watch.start()
        time.sleep(1.0)
        watch.stop()
        found = watch.figures(0.0)
        assert found is not None and found.foreign_cpu_pct is not None
        # the loop ran all the window on a core of its own or shared one: at least a quarter of a core
        assert found.foreign_cpu_pct > 25.0
        assert busy.loops() & {p.pid for p in found.foreign}
    finally:
        busy.end()
    watch = quiet.Watch(_no_target())
    watch.start()
    tool = os.posix_spawnp("timeout", ["timeout", "1", sys.executable, "-c", "while True: pass"], os.environ)
    watch.started(tool)
    _, _, usage = os.wait4(tool, 0)
    watch.stop()
    found = watch.figures(usage.ru_utime + usage.ru_stime)
    assert found is not None and watch.tool_cpus == sorted(os.sched_getaffinity(0))
    assert tool not in {p.pid for p in found.foreign}


def _no_target() -> RunningTarget:
    return RunningTarget(base_url="http://192.0.2.1:9/", label="elsewhere")
