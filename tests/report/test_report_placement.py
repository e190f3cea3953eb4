"""The placement in the environment section, and the phrase the one-sentence summary of the
machine's state uses: what was asked, each side's CPUs, cpuset or affinity only, the processes."""
from __future__ import annotations

from toolbench.record.machine import PlacedProcess, Placement
from toolbench.report.environment import placement_facts, placement_phrase

SPLIT = Placement(asked="split", target_cpus=[0], generator_cpus=[1], toolbench_cpus=[1],
                  cpuset="/sys/fs/cgroup/cpuset/toolbench-41-1",
                  processes=[PlacedProcess("target", 50, "nginx", [0]), PlacedProcess("target", 51, "nginx", [0]),
                             PlacedProcess("toolbench", 41, "toolbench", [1])])


def test_the_phrase_says_where_each_side_ran_and_where_toolbench_went():
    assert placement_phrase(SPLIT) == "the target on CPU 0, the generator on CPU 1 (toolbench with the generator)"
    four = Placement(asked="target 0-1, generator 2-3, toolbench 1", target_cpus=[0, 1], generator_cpus=[2, 3],
                     toolbench_cpus=[1])
    assert placement_phrase(four) == "the target on CPUs 0-1, the generator on CPUs 2-3 (toolbench on CPU 1)"
    apart = Placement(asked="split", target_host="root@10.0.0.2:22", notes=["different machines"])
    assert placement_phrase(apart) == ("the target on every CPU of root@10.0.0.2:22, the generator on every CPU "
                                       "(toolbench unplaced)")
    url = Placement(asked="split", target_host="not started by toolbench")
    assert placement_phrase(url).startswith("the target not started by toolbench, the generator on every CPU")


def test_unplaced_and_unrecorded_runs_say_so():
    assert placement_phrase(Placement(asked="none")) == "unplaced: the target and the generator shared every CPU"
    assert placement_phrase(None) == "where the target and the generator ran was not recorded"
    assert placement_facts(None) == []


def test_the_facts_list_sides_how_and_the_processes_grouped():
    facts = dict(placement_facts(SPLIT))
    assert facts["placement"] == "split (cpuset)"
    assert (facts["target CPUs"], facts["generator CPUs"], facts["toolbench CPUs"]) == ("CPU 0", "CPU 1", "CPU 1")
    assert facts["processes and their CPUs"] == "nginx ×2 on 0; toolbench on 1"
    assert "placement notes" not in facts
    remote = Placement(asked="target 1", target_cpus=[1], target_host="root@far:22", notes=["taskset only"],
                       processes=[PlacedProcess("target", 7, "nginx", [1], host="root@far:22")])
    facts = dict(placement_facts(remote))
    assert facts["placement"] == "target 1 (affinity only)" and facts["placement notes"] == "taskset only"
    assert facts["processes and their CPUs"] == "nginx on 1 of root@far:22"
    assert dict(placement_facts(Placement(asked="none")))["placement"] == "none (not placed)"
