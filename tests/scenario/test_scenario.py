from pathlib import Path

import pytest

from helpers.scenarios import write
from toolbench.errors import ScenarioError
from toolbench.run import plan
from toolbench.scenario import read as scenario

GOOD = """\
name: demo
target:
  server: nginx-static
request: {method: POST, path: /x, headers: {X-A: "1"}, body: '{"a": 1}', content_type: application/json}
matrix:
  tool: [ab, siege]
  concurrency: [10, 50]
  keepalive: [true, false]
stop: {duration: 2m}
repeat: 2
cooldown: 500ms
probe: {interval: 250ms}
monitor: {interval: 1s}
tools:
  ab: {gnuplot: false}
"""


def test_a_scenario_becomes_typed_objects(tmp_path):
    s = scenario.load(write(tmp_path, GOOD))
    assert s.name == "demo"
    assert list(s.targets) == ["nginx-static"] and s.targets["nginx-static"].kind == "nginx-static"
    assert s.request.method == "POST" and s.request.headers == {"X-A": "1"} and s.request.body == '{"a": 1}'
    assert s.matrix.tool == ("ab", "siege") and s.matrix.concurrency == (10, 50)
    assert s.stop.duration_s == 120.0 and s.stop.requests is None
    assert s.cooldown_s == 0.5 and s.probe.interval_s == 0.25 and s.monitor.interval_s == 1.0
    assert s.repeat == 2
    assert s.tools["ab"].values == {"gnuplot": False}


@pytest.mark.parametrize("text, message", [
    (GOOD.replace("concurrency: [10, 50]", "concurrency: [10, 50, ten]"),
     r"s.yaml:7: matrix.concurrency\[2\]: expected a positive integer, got 'ten'"),
    (GOOD.replace("repeat: 2", "repaet: 2"), r"s.yaml:10: repaet: unknown key"),
    (GOOD.replace("stop: {duration: 2m}", "stop: {duration: soon}"),
     r"s.yaml:9: stop.duration: expected a duration like 10s, 2m or 250ms, got 'soon'"),
    (GOOD.replace("stop: {duration: 2m}", "stop: {duration: 2m, requests: 5}"),
     r"s.yaml:9: stop: give exactly one of `duration`, `requests` or `requests_per_connection`"),
    (GOOD.replace("server: nginx-static", "server: apache"),
     r"s.yaml:3: target.server: expected one of nginx-static, flask-dev, .*, got .apache."),
    (GOOD.replace("keepalive: [true, false]", "keepalive: [yes please]"),
     r"s.yaml:8: matrix.keepalive\[0\]: expected true or false"),
    (GOOD.replace("name: demo\n", ""), r"s.yaml:1: <top>: missing required key 'name'"),
    (GOOD + "  ab: {gnuplot: true}\n", r"s.yaml:16: tools.ab: key given twice"),
    ("name: [unclosed\n", r"s.yaml:2: not valid YAML"),
    ("", r"s.yaml:1: the file is empty"),
])
def test_errors_name_the_file_line_and_key_path(tmp_path, text, message):
    with pytest.raises(ScenarioError, match=message):
        scenario.load(write(tmp_path, text))


def test_a_missing_file_is_a_scenario_error(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read"):
        scenario.load(tmp_path / "absent.yaml")


def test_the_matrix_expands_with_repetitions_outermost(tmp_path):
    cells = plan.expand(scenario.load(write(tmp_path, GOOD)))
    assert len(cells) == 2 * 2 * 2 * 2
    assert [c.cell.id for c in cells[:3]] == ["ab-c10-ka-rep1", "siege-c10-ka-rep1", "ab-c10-close-rep1"]
    assert {c.cell.repetition for c in cells[:8]} == {1}
    assert all(c.support.ok for c in cells)
    assert cells[0].cell.options == {"gnuplot": False}


def test_a_cell_the_tool_cannot_do_is_planned_unsupported_with_the_reason(tmp_path):
    text = GOOD.replace("keepalive: [true, false]", "keepalive: [true]\n  rate: [100]")
    cells = plan.expand(scenario.load(write(tmp_path, text)))
    assert all(not c.support.ok for c in cells)
    assert "ab has no fixed-rate (open model) mode" in cells[0].support.reason
    assert cells[0].cell.id == "ab-c10-ka-rate100-rep1"


def test_unknown_tools_and_tool_options_name_their_line(tmp_path):
    with pytest.raises(ScenarioError, match=r"s.yaml:6: matrix.tool\[1\]: 'wrk2': unknown tool"):
        plan.expand(scenario.load(write(tmp_path, GOOD.replace("[ab, siege]", "[ab, wrk2]"))))
    with pytest.raises(ScenarioError, match=r"s.yaml:15: tools.ab.gnuplto: unknown option"):
        plan.expand(scenario.load(write(tmp_path, GOOD.replace("gnuplot:", "gnuplto:"))))
    with pytest.raises(ScenarioError, match=r"s.yaml:15: tools.ab.gnuplot: expected bool, got 'no way'"):
        plan.expand(scenario.load(write(tmp_path, GOOD.replace("gnuplot: false", "gnuplot: no way"))))


def test_bundled_scenarios_validate():
    root = Path(__file__).parents[2] / "scenarios"
    files = sorted(root.glob("*.yaml"))
    assert files, "the repository ships scenarios"
    for path in files:
        assert plan.expand(scenario.load(path))


def test_a_variant_runs_a_tool_with_its_own_options_on_top_of_the_tools(tmp_path):
    text = GOOD.replace("tool: [ab, siege]", "tool: [ab, ab-nog]").replace(
        "  ab: {gnuplot: false}\n", "  ab: {gnuplot: false, timeout_s: 5}\n  ab-nog: {use: ab, gnuplot: true}\n")
    cells = plan.expand(scenario.load(write(tmp_path, text)))
    by_id = {c.cell.id: c.cell for c in cells}
    plain, variant = by_id["ab-c10-ka-rep1"], by_id["ab-nog-c10-ka-rep1"]
    assert plain.tool == variant.tool == "ab"
    assert plain.variant is None and variant.variant == "ab-nog" and variant.label == "ab-nog"
    assert plain.options == {"gnuplot": False, "timeout_s": 5}
    assert variant.options == {"gnuplot": True, "timeout_s": 5}


def test_a_variant_must_name_a_known_tool(tmp_path):
    text = GOOD.replace("  ab: {gnuplot: false}\n", "  fast: {use: abx}\n")
    with pytest.raises(ScenarioError, match=r"s.yaml:15: tools.fast: `use: abx` names no known tool"):
        plan.expand(scenario.load(write(tmp_path, text)))
    text = GOOD.replace("  ab: {gnuplot: false}\n", "  fast: {gnuplot: true}\n")
    with pytest.raises(ScenarioError, match=r"tools.fast: unknown tool; a variant needs `use:`"):
        plan.expand(scenario.load(write(tmp_path, text)))


TWO = """\
name: two
targets:
  one: {server: nginx-static, workers: 1}
  two: {server: nginx-static, workers: 2, restart: per-cell}
matrix:
  tool: [ab, siege]
  concurrency: [10]
repeat: 2
"""


def test_named_targets_take_turns_in_each_repetition_with_the_target_in_the_id(tmp_path):
    s = scenario.load(write(tmp_path, TWO))
    assert list(s.targets) == ["one", "two"] and s.matrix.target == ("one", "two")
    assert s.targets["one"].restart == "once" and s.targets["two"].restart == "per-cell"
    assert s.targets["two"].nginx is not None and s.targets["two"].nginx.workers == 2
    ids = [c.cell.id for c in plan.expand(s)]
    assert ids == ["one-ab-c10-ka-rep1", "one-siege-c10-ka-rep1", "two-ab-c10-ka-rep1", "two-siege-c10-ka-rep1",
                   "one-ab-c10-ka-rep2", "one-siege-c10-ka-rep2", "two-ab-c10-ka-rep2", "two-siege-c10-ka-rep2"]


def test_matrix_target_picks_and_orders_targets(tmp_path):
    s = scenario.load(write(tmp_path, TWO.replace("  concurrency: [10]\n", "  concurrency: [10]\n  target: [two]\n")))
    cells = plan.expand(s)
    assert s.matrix.target == ("two",) and {c.cell.target for c in cells} == {"two"}
    assert cells[0].cell.id == "two-ab-c10-ka-rep1"  # the scenario still has two targets


def test_a_single_target_is_named_by_its_label_or_kind_and_ids_stay_as_before(tmp_path):
    s = scenario.load(write(tmp_path, GOOD.replace("  server: nginx-static", "  server: nginx-static\n  label: web")))
    assert list(s.targets) == ["web"] and s.targets["web"].name == "web"
    assert plan.expand(s)[0].cell.id == "ab-c10-ka-rep1" and plan.expand(s)[0].cell.target == "web"
    spaced = scenario.load(write(tmp_path, GOOD.replace("  server: nginx-static", "  server: nginx-static\n"
                                                        "  label: my web")))
    assert list(spaced.targets) == ["nginx-static"] and spaced.targets["nginx-static"].label == "my web"


def test_requests_per_connection_is_a_stop(tmp_path):
    s = scenario.load(write(tmp_path, GOOD.replace("stop: {duration: 2m}", "stop: {requests_per_connection: 10}")))
    assert s.stop.requests_per_connection == 10 and s.stop.duration_s is None and s.stop.requests is None


@pytest.mark.parametrize("text, message", [
    (TWO.replace("  concurrency: [10]\n", "  concurrency: [10]\n  target: [one, three]\n"),
     r"s.yaml:8: matrix.target\[1\]: unknown target 'three' \(known: one, two\)"),
    (TWO.replace("  concurrency: [10]\n", "  concurrency: [10]\n  target: ['../x']\n"),
     r"s.yaml:8: matrix.target\[0\]: not a valid name"),
    (TWO.replace("  one:", "  'o/ne':"), r"s.yaml:3: targets.o/ne: target not a valid name"),
    (TWO.replace("workers: 1}", "workers: 1, restart: always}"),
     r"s.yaml:3: targets.one.restart: expected one of once, per-cell, got 'always'"),
    (TWO.replace("workers: 1}", "wrokers: 1}"), r"s.yaml:3: targets.one.wrokers: unknown key"),
    (TWO.replace("name: two\n", "name: two\ntarget: {server: nginx-static}\n"),
     r"s.yaml:4: targets: give either `target` or `targets`, not both"),
    (TWO.replace("targets:\n  one: {server: nginx-static, workers: 1}\n  two: {server: nginx-static, workers: 2, "
                 "restart: per-cell}\n", "targets: {}\n"), r"s.yaml:2: targets: expected at least one named target"),
    (GOOD.replace("target:\n  server: nginx-static\n", ""), r"s.yaml:1: <top>: missing required key 'target'"),
    (GOOD.replace("stop: {duration: 2m}", "stop: {requests_per_connection: 0}"),
     r"s.yaml:9: stop.requests_per_connection: expected a positive integer"),
])
def test_target_errors_name_the_file_line_and_key(tmp_path, text, message):
    with pytest.raises(ScenarioError, match=message):
        scenario.load(write(tmp_path, text))


HOST_TOOLS = GOOD.replace("name: demo\n", """\
name: demo
hosts:
  generator:
    address: 10.0.0.7
    tools: {jmeter: /opt/jmeter/bin/jmeter, python: "/srv/bench venv/bin/python3"}
""")


def test_a_generator_sets_where_its_tools_are(tmp_path):
    s = scenario.load(write(tmp_path, HOST_TOOLS))
    assert s.generator.tools == {"jmeter": "/opt/jmeter/bin/jmeter", "python": "/srv/bench venv/bin/python3"}
    assert s.locations["hosts.generator.tools.python"] == f"{tmp_path / 's.yaml'}:5"
    plan.expand(s)  # jmeter and python are programs adapters run


@pytest.mark.parametrize("given, message", [
    ("jmeter: jmeter",
     r"s.yaml:5: hosts.generator.tools.jmeter: expected an absolute path on that host .*got 'jmeter'"),
    ("jmeter: ~/jmeter", r"s.yaml:5: hosts.generator.tools.jmeter: expected an absolute path .*got '~/jmeter'"),
    ('jmeter: "/opt/a\\nb"', r"s.yaml:5: hosts.generator.tools.jmeter: expected an absolute path .*got '/opt/a\\nb'"),
    ("jmeter: [/a]", r"s.yaml:5: hosts.generator.tools.jmeter: expected a value, got a list"),
    ('"../x": /opt/x', r"s.yaml:5: hosts.generator.tools.../x: not a valid name"),
])
def test_bad_tool_paths_name_their_line_and_key(tmp_path, given, message):
    text = HOST_TOOLS.replace("jmeter: /opt/jmeter/bin/jmeter", given)
    with pytest.raises(ScenarioError, match=message):
        scenario.load(write(tmp_path, text))


def test_a_tool_path_for_no_known_program_is_an_error(tmp_path):
    s = scenario.load(write(tmp_path, HOST_TOOLS.replace("jmeter: /opt", "jmetr: /opt")))
    with pytest.raises(ScenarioError, match=r"s.yaml:5: hosts.generator.tools.jmetr: no tool runs a program of that "
                                            r"name \(known: ab, bombardier, gatling, h2load, hey, http_load, httperf, "
                                            r"jmeter, oha, python, siege, vegeta, wrk\)"):
        plan.expand(s)


def test_the_target_host_places_only_the_programs_its_servers_run(tmp_path):
    text = HOST_TOOLS.replace("  generator:\n", "  target:\n")
    with pytest.raises(ScenarioError, match=r"s.yaml:5: hosts.target.tools.jmeter: unknown key \(expected one of "
                                            r"python, nginx, uwsgi\)"):
        scenario.load(write(tmp_path, text))
    s = scenario.load(write(tmp_path, text.replace("jmeter: /opt/jmeter/bin/jmeter", "nginx: /opt/nginx/sbin/nginx")))
    assert s.target_host.tools == {"nginx": "/opt/nginx/sbin/nginx", "python": "/srv/bench venv/bin/python3"}
    assert s.locations["hosts.target.tools.nginx"] == f"{tmp_path / 's.yaml'}:5"
