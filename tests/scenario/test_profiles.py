"""Profiles: partial scenarios merged over the top-level keys, checked like the rest."""
import subprocess

import pytest

from conftest import REPO
from helpers.scenarios import write
from toolbench.errors import ScenarioError
from toolbench.run import plan
from toolbench.scenario import read as scenario

BASE = """\
name: demo
description: what it asks
compare: tools
target:
  server: nginx-static
matrix:
  tool: [ab, siege]
  concurrency: [10, 50]
  keepalive: [true, false]
stop: {duration: 2m}
repeat: 3
probe: {interval: 250ms, baseline: 20}
tools:
  ab: {gnuplot: false}
profiles:
  quick:
    matrix: {concurrency: [5]}
    stop: {requests: 100}
    repeat: 1
    probe: {baseline: 5}
"""


def test_without_a_profile_the_scenario_is_as_written(tmp_path):
    s = scenario.load(write(tmp_path, BASE))
    assert (s.profile, s.profiles) == (None, ("quick",))
    assert s.matrix.concurrency == (10, 50) and s.stop.duration_s == 120 and s.repeat == 3
    assert s.compare == "tools"


def test_a_profile_merges_the_matrix_and_probe_key_by_key_and_replaces_stop(tmp_path):
    s = scenario.load(write(tmp_path, BASE), "quick")
    assert s.profile == "quick"
    assert s.matrix.concurrency == (5,)
    assert s.matrix.tool == ("ab", "siege") and s.matrix.keepalive == (True, False)  # kept
    assert (s.stop.duration_s, s.stop.requests) == (None, 100)  # replaced whole, not two stops
    assert s.repeat == 1
    assert (s.probe.baseline_requests, s.probe.interval_s) == (5, 0.25)
    assert len(plan.expand(s)) == 4


def test_a_profile_replaces_the_target_warm_up_and_the_settle(tmp_path):
    text = BASE.replace("repeat: 3\n", "repeat: 3\nwarm_target: 2s\nsettle: 5s\n")
    text += "  short: {warm_target: 0s, settle: 1s}\n"
    written = write(tmp_path, text)
    as_written, short = scenario.load(written), scenario.load(written, "short")
    assert (as_written.method.target_warmup_s, as_written.method.settle_max_s) == (2.0, 5.0)
    assert (short.method.target_warmup_s, short.method.settle_max_s) == (0.0, 1.0)


@pytest.mark.parametrize("profile_text, message", [
    ("    target: {server: nginx-static}\n", ":17: profiles.quick.target: unknown key"),
    ("    matrix: {concurrency: [0]}\n", ":17: matrix.concurrency[0]: expected a positive integer"),
    ("    matrix: {colour: [1]}\n", ":17: matrix.colour: unknown key"),
    ("    stop: {duration: 1s, requests: 3}\n", ":17: profiles.quick.stop: give exactly one"),
    ("    repeat: -1\n", ":17: profiles.quick.repeat: expected a positive integer"),
    ("    {}\n", ":17: profiles.quick: profile 'quick' overrides nothing"),
])
def test_profile_errors_name_the_profiles_file_line_and_key(tmp_path, profile_text, message):
    text = BASE.split("profiles:")[0] + "profiles:\n  quick:\n" + profile_text
    with pytest.raises(ScenarioError, match=message.replace("[", r"\[").replace("]", r"\]")):
        scenario.load(write(tmp_path, text))


def test_a_broken_profile_fails_even_when_another_is_asked_for(tmp_path):
    text = BASE + "  long:\n    repeat: zero\n"
    with pytest.raises(ScenarioError, match=r":22: profiles.long.repeat: expected a positive integer"):
        scenario.load(write(tmp_path, text), "quick")


def test_an_unknown_profile_is_refused_with_the_declared_ones(tmp_path):
    with pytest.raises(ScenarioError, match=r"no profile 'slow' \(declared: quick\)"):
        scenario.load(write(tmp_path, BASE), "slow")
    with pytest.raises(ScenarioError, match=r"no profile 'quick' \(declared: none declared\)"):
        scenario.load(write(tmp_path, BASE.split("profiles:")[0]), "quick")


def test_a_profile_name_is_a_strict_name(tmp_path):
    with pytest.raises(ScenarioError, match=r":17: profiles.\.\./x: "):
        scenario.load(write(tmp_path, BASE.replace("  quick:", "  ../x:")))


def test_compare_is_tools_or_targets(tmp_path):
    with pytest.raises(ScenarioError, match=r":3: compare: expected one of tools, targets"):
        scenario.load(write(tmp_path, BASE.replace("compare: tools", "compare: colours")))


def test_validate_checks_the_tool_options_of_every_profile(tmp_path):
    path = write(tmp_path, BASE + "  long:\n    tools: {ab: {gnuplot: maybe}}\n")
    done = subprocess.run([str(REPO / ".venv" / "bin" / "toolbench"), "validate", str(path), "--profile", "quick"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert done.stderr.strip().endswith(":22: tools.ab.gnuplot: expected bool, got 'maybe'")
