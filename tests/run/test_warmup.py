"""`warmup`: validated like every key, resolved per tool variant and profile; a tool's ramp
flags cells too short for it, at plan time and in the result."""
import subprocess
import sys

import pytest

from conftest import REPO
from helpers.scenarios import write
from toolbench.contract import ramp, registry
from toolbench.errors import ScenarioError
from toolbench.run import plan, warmup
from toolbench.scenario import read as scenario
from toolbench.scenario.read import StopSpec

BASE = """\
name: warm
target: {server: nginx-static}
matrix:
  tool: [ab, jmeter, locust-2p]
  concurrency: [10]
stop: {duration: 3s}
warmup: 2s
tools:
  jmeter: {heap: 1g, warmup: 5s}
  locust-2p: {use: locust, processes: 2}
profiles:
  cold:
    warmup: 0
  long:
    stop: {duration: 20s}
    tools: {jmeter: {warmup: none}}
"""


def cells(text: str, tmp_path, profile: str | None = None) -> dict[str, plan.Cell]:
    return {c.cell.label: c.cell for c in plan.expand(scenario.load(write(tmp_path, text), profile))}


def test_warmup_is_the_scenarios_unless_a_tool_or_a_profile_says_otherwise(tmp_path):
    found = cells(BASE, tmp_path)
    assert (found["ab"].warmup_s, found["jmeter"].warmup_s, found["locust-2p"].warmup_s) == (2.0, 5.0, 2.0)
    assert "warmup" not in found["jmeter"].options  # not a tool option: the adapter never sees it
    cold = cells(BASE, tmp_path, "cold")
    assert (cold["ab"].warmup_s, cold["jmeter"].warmup_s) == (0.0, 5.0)  # the tool's own stays
    long = cells(BASE, tmp_path, "long")
    assert (long["ab"].warmup_s, long["jmeter"].warmup_s) == (2.0, 0.0)
    assert long["jmeter"].options == {}  # a profile replaces a tool's options whole
    no_warmup = cells(BASE.replace("warmup: 2s\n", "").replace(", warmup: 5s", ""), tmp_path)
    assert {c.warmup_s for c in no_warmup.values()} == {0.0}


def test_a_variant_inherits_its_tools_warmup_and_may_set_its_own(tmp_path):
    text = BASE.replace("tool: [ab, jmeter, locust-2p]", "tool: [locust, locust-2p]").replace(
        "  jmeter: {heap: 1g, warmup: 5s}\n", "  locust: {warmup: 4s}\n")
    assert {k: c.warmup_s for k, c in cells(text, tmp_path).items()} == {"locust": 4.0, "locust-2p": 4.0}
    own = text.replace("processes: 2}", "processes: 2, warmup: 1s}")
    assert {k: c.warmup_s for k, c in cells(own, tmp_path).items()} == {"locust": 4.0, "locust-2p": 1.0}


@pytest.mark.parametrize("old, new, message", [
    ("warmup: 2s", "warmup: -2s", r"s.yaml:7: warmup: expected a duration like 10s"),
    ("warmup: 2s", "warmup: soon", r"s.yaml:7: warmup: expected a duration like 10s, 2m or 250ms, got 'soon'"),
    ("warmup: 2s", "warmup: true", r"s.yaml:7: warmup: expected a duration"),
    ("warmup: 2s", "warmup: [2s]", r"s.yaml:7: warmup: expected a value"),
    ("warmup: 2s", "warmup: 2h", r"s.yaml:7: warmup: expected a warm-up of at most 600s, got 7200s"),
    ("warmup: 5s}", "warmup: 5 seconds}", r"s.yaml:9: tools.jmeter.warmup: expected a duration"),
    ("warmup: 0\n", "warmup: -1\n", r"s.yaml:13: profiles.cold.warmup: expected a duration"),
])
def test_a_bad_warmup_names_its_file_line_and_key(tmp_path, old, new, message):
    with pytest.raises(ScenarioError, match=message):
        scenario.load(write(tmp_path, BASE.replace(old, new, 1)))


def test_the_warmup_is_a_timed_run_in_whole_seconds_where_the_tool_takes_only_those(tmp_path):
    found = cells(BASE.replace("warmup: 2s", "warmup: 1.5s"), tmp_path)
    ab, locust = registry.get("ab"), registry.get("locust")
    warm_ab = warmup.warmup_cell(found["ab"], ab)
    assert warm_ab.stop == StopSpec(duration_s=1.5) and warm_ab.warmup_s == 0.0
    assert warm_ab.concurrency == found["ab"].concurrency and warm_ab.keepalive == found["ab"].keepalive
    assert warmup.warmup_cell(found["locust-2p"], locust).stop == StopSpec(duration_s=2.0)
    # a measured stop after N requests still warms up for a duration
    by_count = cells(BASE.replace("stop: {duration: 3s}", "stop: {requests: 500}"), tmp_path)
    assert warmup.warmup_cell(by_count["ab"], ab).stop == StopSpec(duration_s=2.0)


def test_a_cell_shorter_than_five_ramps_is_flagged_and_one_long_enough_is_not(tmp_path):
    found = cells(BASE, tmp_path)
    jmeter, locust = registry.get("jmeter"), registry.get("locust")
    assert jmeter.ramp_s(found["jmeter"]) == 2.0 and locust.ramp_s(found["locust-2p"]) == 1.0
    assert registry.get("ab").ramp_s(found["ab"]) == 0.0
    assert ramp.short_of_ramp(9.9, 2.0) and not ramp.short_of_ramp(10.0, 2.0)
    assert not ramp.short_of_ramp(0.5, 0.0) and not ramp.short_of_ramp(None, 2.0)
    said = plan.ramp_warnings(plan.expand(scenario.load(write(tmp_path, BASE))))
    assert [line.split(":")[0] for line in said] == ["jmeter-c10-ka-rep1", "locust-2p-c10-ka-rep1"]
    assert "asks for 3s, under 5x jmeter's 2s ramp" in said[0] and "10s or longer" in said[0]
    assert plan.ramp_warnings(plan.expand(scenario.load(write(tmp_path, BASE), "long"))) == []


def test_validate_shows_the_warmup_and_warns_of_short_cells(tmp_path):
    path = write(tmp_path, BASE)
    done = subprocess.run([sys.executable, "-m", "toolbench.cli.main", "validate", str(path)],
                          capture_output=True, text=True, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "ab-c10-ka-rep1" in done.stdout and "run after a 2s warm-up" in done.stdout
    assert "run after a 5s warm-up" in done.stdout
    assert "jmeter-c10-ka-rep1: the cell asks for 3s, under 5x jmeter's 2s ramp" in done.stderr
    assert "ab-c10" not in done.stderr
