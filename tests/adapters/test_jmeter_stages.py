"""JMeter with a workload's stages (issue 32): the stock Thread Group's ramp-up is the first stage
and its scheduler the stages' sum (a ramp down is approximated: every user runs to the end, said
in the plan), profiles it cannot run are refused with the reason, and one short real run shows
the threads starting over the ramp, not at once, in the JTL JMeter wrote."""
from __future__ import annotations

import csv
import xml.etree.ElementTree as ET
from pathlib import Path

from helpers.workload_live import run, workload_cell
from helpers.workload_server import workload_server
from toolbench.adapters.jmeter import adapter as jmeter
from toolbench.adapters.jmeter import stages as jmeter_stages
from toolbench.contract.adapter import Found
from toolbench.contract.workload import Level, support_for
from toolbench.run.workload_plan import of_adapter
from toolbench.scenario.read import StopSpec
from toolbench.scenario.workload import Stage, Workload, WorkloadRequest

ADAPTER = jmeter.ADAPTER


def staged(*stages: Stage) -> Workload:
    return Workload("sequence", (WorkloadRequest("page", path="/page"), WorkloadRequest("other", path="/nope")),
                    stages=stages)


def group(cell) -> dict[str, str]:
    assert ADAPTER.supports(cell).ok, ADAPTER.supports(cell).reason
    plan = ADAPTER.build(cell, Path("/nonexistent"), Found("/opt/jmeter/bin/jmeter", "5.6.3")).files["plan.jmx"]
    tg = ET.fromstring(plan.encode()).find(".//ThreadGroup")
    assert tg is not None
    return {p.get("name", ""): p.text or "" for p in tg if p.get("name", "").startswith("ThreadGroup.")}


def test_the_first_stage_is_the_ramp_up_and_the_scheduler_runs_the_stages_sum():
    wl = staged(Stage(5, users=20), Stage(10, users=20), Stage(3, users=0))
    props = group(workload_cell("jmeter", wl, concurrency=20, stop=StopSpec(duration_s=18)))
    assert props["ThreadGroup.num_threads"] == "20" and props["ThreadGroup.ramp_time"] == "5"
    assert props["ThreadGroup.duration"] == "18" and props["ThreadGroup.scheduler"] == "true"
    unstaged = Workload("sequence", (WorkloadRequest("page", path="/page"),))
    assert group(workload_cell("jmeter", unstaged))["ThreadGroup.ramp_time"] == "0"


def test_stages_are_approximated_with_how_and_profiles_it_cannot_run_are_refused():
    wl = staged(Stage(2, users=3), Stage(2, users=1))
    support = support_for(ADAPTER.workload_features, "jmeter", wl)
    assert support["stages"].level is Level.APPROXIMATED and "ramp down is not run" in support["stages"].how
    assert any("ramp down is not run" in note for note in of_adapter(ADAPTER, wl).notes())
    second_rise = staged(Stage(2, users=3), Stage(2, users=1), Stage(2, users=3))
    assert "ramps up once" in ADAPTER.supports(workload_cell("jmeter", second_rise, concurrency=3,
                                                              stop=StopSpec(duration_s=6))).reason
    stepped = staged(Stage(2, users=2), Stage(2, users=4))
    assert "first stage reaches 2 users, the peak is 4" in jmeter_stages.refusal(stepped)
    rated = staged(Stage(2, rate_rps=10.0))
    assert "closed model" in ADAPTER.supports(workload_cell("jmeter", rated, rate_rps=10.0,
                                                            stop=StopSpec(duration_s=2))).reason


def test_a_real_run_starts_the_threads_over_the_first_stage(tmp_path: Path):
    wl = Workload("sequence", (WorkloadRequest("page", path="/page"), WorkloadRequest("items", method="POST",
                                                                                      path="/api/items", body="{}")),
                  stages=(Stage(2, users=3), Stage(1, users=3), Stage(1, users=1)))
    with workload_server() as (base, served):
        m, raw = run(ADAPTER, workload_cell("jmeter", wl, base_url=base, concurrency=3, stop=StopSpec(duration_s=4)),
                     tmp_path)
    with open(raw.files["jtl"], newline="") as fh:
        rows = list(csv.DictReader(fh))
    first: dict[str, int] = {}
    for row in rows:
        first.setdefault(row["threadName"], int(row["timeStamp"]))
    assert len(first) == 3
    starts = sorted(first.values())
    # ramp_time 2 s over 3 threads: one every 0.67 s, the last 1.33 s after the first; without it
    # they would start within milliseconds. Only the spread, at half of it: on a busy machine a
    # thread's first sample can come late, so two neighbours' first samples may be closer (0.31 s).
    assert starts[2] - starts[0] >= 600, starts
    assert m.counts.requests_total == served.by_path("GET", "/page") + served.by_path("POST", "/api/items") == len(rows)
