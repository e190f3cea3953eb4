"""Hostile or careless scenarios: every name that becomes a path or code, every header,
URL and path is checked by `validate` (file:line: key: why) or normalised once; no path
toolbench makes leaves the folder it was given."""
import os
import subprocess
from pathlib import Path

import pytest

from conftest import REPO
from toolbench.contract import registry
from toolbench.contract.adapter import Found, Invocation
from toolbench.errors import AdapterError, ScenarioError, StoreError
from toolbench.record import store
from toolbench.run import plan
from toolbench.scenario import names
from toolbench.scenario import read as scenario

BASE = """\
name: {name}
target: {{url: {url}}}
request: {{path: {path}, headers: {headers}}}
matrix:
  tool: [{tool}]
stop: {{requests: 10}}
tools:
  {variant}: {{use: ab}}
"""


def scenario_text(name="ok", url="'http://127.0.0.1:8080'", path="/", headers="{}", tool="ab",
                  variant="ab-v") -> str:
    return BASE.format(name=name, url=url, path=path, headers=headers, tool=tool, variant=variant)


def load(tmp_path: Path, text: str) -> scenario.Scenario:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return scenario.load(path)


@pytest.mark.parametrize("changes, message", [
    ({"name": "../escape"}, r"s.yaml:1: name: not a valid name: '../escape'"),
    ({"name": "'/tmp/abs'"}, r"s.yaml:1: name: not a valid name: '/tmp/abs'"),
    ({"name": "a..b"}, r"s.yaml:1: name: not a valid name"),
    ({"name": "'x" + "y" * 64 + "'"}, r"s.yaml:1: name: not a valid name"),
    ({"tool": "'../ab'"}, r"s.yaml:5: matrix.tool\[0\]: not a valid name: '../ab'"),
    ({"variant": "'../v'"}, r"s.yaml:8: tools.../v: not a valid name: '../v'"),
    # a newline and Python code in a variant name: refused, one line, the newline escaped
    ({"variant": '"x\\nimport os; os.system(1)\\n"'}, r"s.yaml:8: tools.x\\nimport os; os.system\(1\)\\n: not a "),
    ({"headers": '{"X-A": "1\\r\\nX-Injected: 1"}'}, r"s.yaml:3: request.headers.X-A: .*control character"),
    ({"headers": '{"X-A\\nB": "1"}'}, r"s.yaml:3: request.headers.X-A\\nB: not a header name"),
    ({"headers": '{"X A": "1"}'}, r"s.yaml:3: request.headers.X A: not a header name"),
    ({"headers": '{"X-A": "caf\\u00e9"}'}, r"s.yaml:3: request.headers.X-A: .*non-ASCII"),
    ({"url": "'http://127.0.0.1:70000'"}, r"s.yaml:2: target.url: not a valid URL: .*Port out of range"),
    ({"url": "'http://[::1'"}, r"s.yaml:2: target.url: not a valid URL: .*IPv6"),
    ({"url": "'http://[::g]:80'"}, r"s.yaml:2: target.url: not (a valid URL|an IPv6 address)"),
    ({"url": "'http://user:pw@127.0.0.1:8080'"}, r"s.yaml:2: target.url: a URL with a user name or password"),
    ({"url": "'http://127.0.0.1:0'"}, r"s.yaml:2: target.url: port 0"),
    ({"url": "'http://${__groovy(1)}:80'"}, r"s.yaml:2: target.url: not (a host name|a valid URL)"),
    ({"url": "'http://h\\u00e9.test'"}, r"s.yaml:2: target.url: not a host name"),
    ({"url": "'ftp://127.0.0.1'"}, r"s.yaml:2: target.url: expected an http:// or https:// URL"),
    ({"url": "'http://127.0.0.1:8080/?a=1'"}, r"s.yaml:2: target.url: give the query in request.path"),
    ({"path": "'/a#frag'"}, r"s.yaml:3: request.path: a fragment"),
    ({"path": "'a'"}, r"s.yaml:3: request.path: expected a path starting with '/'"),
])
def test_validate_refuses_with_file_line_and_key(tmp_path, changes, message):
    with pytest.raises(ScenarioError, match=message) as caught:
        plan.expand(load(tmp_path, scenario_text(**changes)))
    assert "\n" not in str(caught.value)


def test_paths_are_percent_encoded_once_as_utf8(tmp_path):
    s = load(tmp_path, scenario_text(path="'/caf\u00e9 au lait/${x}?q=\u00fc&r=%41%zz'",
                                     url="'http://127.0.0.1:8080/b\u00e4se/'"))
    assert s.request.path == "/caf%C3%A9%20au%20lait/$%7Bx%7D?q=%C3%BC&r=%41%25zz"
    assert s.targets["url"].url == "http://127.0.0.1:8080/b%C3%A4se"
    assert load(tmp_path, scenario_text(url="'http://[::1]:8080'")).targets["url"].url == "http://[::1]:8080"


def test_the_cli_refuses_a_hostile_variant_in_one_line(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_text(scenario_text(variant='"x\\nopen(\'MARKER\', \'w\')\\n"', tool="ab"))
    done = subprocess.run([str(REPO / ".venv" / "bin" / "toolbench"), "validate", str(path)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode != 0 and done.stderr.count("\n") == 1
    assert f"{path}:8: tools.x\\nopen(" in done.stderr and "not a valid name" in done.stderr
    assert not (tmp_path / "MARKER").exists()


@pytest.mark.parametrize("name", ["..", "../x", "/etc", "a/../../x", "", "x\ny", "a b", "é", "-a", "a" * 65])
def test_names_outside_the_pattern(name):
    assert names.problem(name) is not None


@pytest.mark.parametrize("name", ["quickstart", "locust-2p", "a.b_c-1", "A" * 64])
def test_names_inside_the_pattern(name):
    assert names.problem(name) is None


def test_contained_refuses_every_way_out(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "link").symlink_to(tmp_path)
    assert store.contained(root, "a", "b") == root / "a" / "b"
    for parts in (("..",), ("../x",), ("/etc",), ("a", "../../x"), ("link", "x"), (".",)):
        with pytest.raises(StoreError, match="refusing a path outside"):
            store.contained(root, *parts)


def test_run_and_cell_folders_stay_under_their_root(tmp_path):
    root = tmp_path / "reports"
    with pytest.raises(StoreError):
        store.RunDir.create(root, "../outside")
    run = store.RunDir.create(root, "fine")
    with pytest.raises(StoreError):
        run.cell_dir("../../escaped")
    assert run.cell_dir("ab-c1-ka-rep1").parent == run.path / "raw"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reports"]


@pytest.mark.parametrize("files, outputs", [({"../x": ""}, {}), ({}, {"csv": "/tmp/x.csv"}),
                                            ({"sub/x": ""}, {}), ({}, {"jtl": ".."})])
def test_an_invocation_names_only_plain_files(files, outputs):
    with pytest.raises(AdapterError, match="not a valid name"):
        Invocation(argv=["tool"], files=files, outputs=outputs)


def test_every_input_file_of_every_adapter_is_a_plain_name(tmp_path):
    """The built-in adapters, building a POST with a body: all their files pass the check."""
    text = scenario_text(tool="ab, siege, engine, jmeter, locust, http_load").replace(
        "request: {path: /, headers: {}}", "request: {method: POST, path: /, body: '</etc/hostname'}")
    for planned in plan.expand(load(tmp_path, text)):
        if planned.support.ok:
            cell = planned.cell.at("http://127.0.0.1:8080")
            found = Found(f"/opt/{cell.tool}", "1")
            invocation = registry.get(cell.tool).build(cell, tmp_path, found)
            assert not any(names.problem(n) for n in [*invocation.files, *invocation.outputs.values()])
            assert not any("</etc/hostname" in arg for arg in invocation.argv)  # bodies go through files
    assert os.listdir(tmp_path) == ["s.yaml"]  # building writes nothing


BOUNDED = """\
name: ok
target: {{url: 'http://127.0.0.1:8080'}}
matrix:
  tool: [ab]
  concurrency: [{concurrency}]
  rate: [{rate}]
stop: {stop}
repeat: {repeat}
timeout: {timeout}
cooldown: {cooldown}
warmup: {warmup}
probe: {{interval: {probe}, baseline: {baseline}}}
monitor: {{interval: {monitor}}}
criteria: ['{criterion}']
"""
FINE = dict(concurrency="10", rate="null", stop="{requests: 10}", repeat="1", timeout="60s", cooldown="0",
            warmup="0", probe="1s", baseline="20", monitor="1s", criterion="rps > 1")
HUGE_INT = "9" * 5000  # past Python's int-from-text digit limit: a ValueError deep inside the YAML library


def test_the_bounded_template_reads_as_written(tmp_path):
    s = load(tmp_path, BOUNDED.format(**FINE))
    assert (s.repeat, s.matrix.concurrency, s.matrix.rate, s.stop.requests) == (1, (10,), (None,), 10)


@pytest.mark.parametrize("changes, message", [
    ({"repeat": "1000000000"}, r"s.yaml:8: repeat: expected a positive integer of at most 1000, got '1000000000'"),
    ({"repeat": "1001"}, r"s.yaml:8: repeat: expected a positive integer of at most 1000"),
    ({"repeat": "true"}, r"s.yaml:8: repeat: expected a positive integer, got 'true'"),
    ({"repeat": ".nan"}, r"s.yaml:8: repeat: expected a positive integer, got '.nan'"),
    ({"repeat": HUGE_INT}, r"s.yaml:8: repeat: not a value toolbench can read: '9999"),
    ({"concurrency": "1000001"}, r"s.yaml:5: matrix.concurrency\[0\]: expected a positive integer of at most 1000000"),
    ({"concurrency": "1" + "0" * 30}, r"s.yaml:5: matrix.concurrency\[0\]: expected a positive integer of at most"),
    ({"rate": ".nan"}, r"s.yaml:6: matrix.rate\[0\]: expected a number from 0 to 1e\+07, got '.nan'"),
    ({"rate": ".inf"}, r"s.yaml:6: matrix.rate\[0\]: expected a number from 0 to 1e\+07, got '.inf'"),
    ({"rate": "1.0e+999"}, r"s.yaml:6: matrix.rate\[0\]: expected a number from 0 to 1e\+07"),
    ({"rate": "-0.0"}, r"s.yaml:6: matrix.rate\[0\]: expected a number from 0 to 1e\+07, got '-0.0'"),
    ({"rate": "10000001"}, r"s.yaml:6: matrix.rate\[0\]: expected a number from 0 to 1e\+07"),
    ({"rate": "true"}, r"s.yaml:6: matrix.rate\[0\]: expected a non-negative number, got 'true'"),
    ({"stop": "{duration: 1000000h}"}, r"s.yaml:7: stop.duration: expected a duration of at most 86400s"),
    ({"stop": "{duration: 25h}"}, r"s.yaml:7: stop.duration: expected a duration of at most 86400s"),
    ({"stop": "{duration: " + "9" * 400 + "s}"}, r"s.yaml:7: stop.duration: expected a duration of at most"),
    ({"stop": "{requests: 10000000000}"}, r"s.yaml:7: stop.requests: expected a positive integer of at most"),
    ({"stop": "{requests_per_connection: " + HUGE_INT + "}"}, r"s.yaml:7: stop.requests_per_connection: not a value"),
    ({"timeout": "100000h"}, r"s.yaml:9: timeout: expected a duration of at most 86400s"),
    ({"cooldown": "99999999999s"}, r"s.yaml:10: cooldown: expected a duration of at most 86400s"),
    ({"probe": "48h"}, r"s.yaml:12: probe.interval: expected a duration of at most 86400s"),
    ({"baseline": "1000000000"}, r"s.yaml:12: probe.baseline: expected a positive integer of at most 10000"),
    ({"monitor": "10000000s"}, r"s.yaml:13: monitor.interval: expected a duration of at most 86400s"),
    ({"cooldown": "2020-13-45"}, r"s.yaml:10: cooldown: not a value toolbench can read: '2020-13-45'"),
    ({"criterion": "rps > 1e999"}, r"s.yaml:14: criteria\[0\]: .*too large"),
])
def test_values_past_their_bound_are_one_line_errors(tmp_path, changes, message):
    with pytest.raises(ScenarioError, match=message) as caught:
        load(tmp_path, BOUNDED.format(**{**FINE, **changes}))
    assert "\n" not in str(caught.value)


def _nested(opening: str, closing: str, depth: int, inner: str = "1") -> str:
    return opening * depth + inner + closing * depth


LAUGHS = ("a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
          "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
          "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
          "g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]\nh: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g, *g]\n"
          "i: [*h, *h, *h, *h, *h, *h, *h, *h, *h, *h]\n")


@pytest.mark.parametrize("data, message", [
    (b"name: !!python/object/apply:os.system ['touch MARKER']\n", r"s.yaml:1: .*a YAML tag \('!!python/object/apply:os.system'\)"),
    (b"name: ok\ndescription: !!python/name:os.system\n", r"s.yaml:2: .*a YAML tag \('!!python/name:os.system'\)"),
    (b"name: ok\n!!binary aGk=: 1\n", r"s.yaml:2: .*a YAML tag \('!!binary'\)"),
    (b"name: ok\nmatrix:\n  tool: [ab, !foo x]\n", r"s.yaml:3: .*a YAML tag \('!foo'\)"),
    (b"name: ok\nmatrix: !!set {ab: null}\n", r"s.yaml:2: .*a YAML tag \('!!set'\)"),
    (b"name: ok\nx: !<tag:yaml.org,2002:python/object:os.X> {}\n", r"s.yaml:2: .*a YAML tag \('!!python/object:os.X'\)"),
    (b"name: ok\n? !!python/tuple [a, b]\n: 1\n", r"s.yaml:2: .*a YAML tag \('!!python/tuple'\)"),
    (b"name: ok\ndescription: " + _nested("[", "]", 10_000).encode() + b"\n", r"s.yaml:2: .*nested deeper than 64"),
    (b"name: ok\ndescription: " + _nested("{a: ", "}", 10_000).encode() + b"\n", r"s.yaml:2: .*nested deeper than 64"),
    (b"name: ok\n" + "".join(f"{' ' * 2 * i}k{i}:\n" for i in range(200)).encode(), r"s.yaml:6\d: .*nested deeper"),
    (b"name: ok\n" + LAUGHS.encode(), r"s.yaml:6: .*aliases expand past 20000 nodes"),
    (b"name: ok\nmatrix: &m {tool: [ab, *m]}\n", r"s.yaml:2: .*an alias inside the node it names"),
    (b"name: ok\ndescription: caf\xe9\n", r"s.yaml:2: not UTF-8 text \(byte 0xe9\)"),
    (b"name: ok\n\n\ndescription: \xed\xa0\x80\n", r"s.yaml:4: not UTF-8 text \(byte 0xed\)"),
    ("name: ok\n".encode("utf-16"), r"s.yaml:1: not UTF-8 text \(byte 0xff\)"),
    (b"name: ok\ndescription: a\x00b\n", r"s.yaml:2: not valid YAML: the character U\+0000 is not allowed"),
    (b"name: ok\n\ndescription: a\x1bb\n", r"s.yaml:3: not valid YAML: the character U\+001B is not allowed"),
    (b"name: ok\n" + b"# padding\n" * 200_000, r"s.yaml: larger than 1048576 bytes"),
])
def test_hostile_yaml_is_a_one_line_error(tmp_path, data, message):
    path = tmp_path / "s.yaml"
    path.write_bytes(data)
    with pytest.raises(ScenarioError, match=message) as caught:
        scenario.load(path)
    assert "\n" not in str(caught.value)
    assert os.listdir(tmp_path) == ["s.yaml"]


def test_a_leading_bom_is_read_as_yaml_reads_it(tmp_path):
    path = tmp_path / "s.yaml"
    path.write_bytes(b"\xef\xbb\xbf" + scenario_text().encode())
    assert scenario.load(path).name == "ok"


@pytest.mark.parametrize("text", ["name: !!python/object/apply:os.system ['touch MARKER']\n",
                                  "name: ok\ndescription: " + _nested("[", "]", 10_000) + "\n"])
def test_the_cli_refuses_hostile_yaml_in_one_line(tmp_path, text):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    done = subprocess.run([str(REPO / ".venv" / "bin" / "toolbench"), "validate", str(path)],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode != 0 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert f"{path}:" in done.stderr and not (tmp_path / "MARKER").exists()


@pytest.mark.parametrize("options, message", [
    ("timeout_s: 10000000000", r"s.yaml:8: tools.ab-v.timeout_s: expected an integer from 0 to 1000000000"),
    ("timeout_s: -5", r"s.yaml:8: tools.ab-v.timeout_s: expected an integer from 0 to 1000000000, got -5"),
    ("timeout_s: " + HUGE_INT, r"s.yaml:8: tools.ab-v.timeout_s: not a value toolbench can read"),
    ("timeout_s: .nan", r"s.yaml:8: tools.ab-v.timeout_s: expected int, got nan"),
    ("timeout_s: true", r"s.yaml:8: tools.ab-v.timeout_s: expected int, got True"),
])
def test_a_tools_numeric_option_is_bounded_too(tmp_path, options, message):
    text = scenario_text().replace("{use: ab}", "{use: ab, " + options + "}")
    with pytest.raises(ScenarioError, match=message) as caught:
        plan.expand(load(tmp_path, text))
    assert "\n" not in str(caught.value)
