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
