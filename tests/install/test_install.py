"""`toolbench install` and its one table (toolbench/install/recipes.py): every tool installable the
way the project does, a second call changing nothing, and scripts/install.sh holding no list
of its own."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from toolbench.cli.main import main
from toolbench.contract import registry
from toolbench.install import recipes as installs

REPO = Path(__file__).resolve().parents[2]


def test_every_registered_tool_has_a_recipe_or_a_reason():
    named = {r.name for r in installs.RECIPES if r.load_tool} | {n.name for n in installs.NOT_INSTALLABLE}
    assert set(registry.adapters()) <= named, set(registry.adapters()) - named


def test_the_quickstart_purpose_covers_the_quickstart_scenario_and_the_tests_purpose_every_tool():
    tools = yaml.safe_load((REPO / "scenarios" / "quickstart.yaml").read_text())["matrix"]["tool"]
    quickstart = {r.name for r in installs.for_purpose("quickstart")}
    assert set(tools) | {"nginx"} <= quickstart
    assert {r.name for r in installs.RECIPES} == {r.name for r in installs.for_purpose("tests")}
    assert len(quickstart) < len(installs.RECIPES)  # the demo installs less than the tests


def test_install_sh_names_no_tool_of_its_own_it_asks_the_table():
    """One source: install.sh may hold the venv's own build packages, never a tool's package,
    module or script (those are added to toolbench/install/recipes.py)."""
    script = (REPO / "scripts" / "install.sh").read_text()
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
    for r in installs.RECIPES:
        for step in r.steps:
            names = {installs.Apt: lambda s: s.packages, installs.GoModule: lambda s: (s.module,),
                     installs.Script: lambda s: (s.script,), installs.Venv: lambda s: ()}[type(step)](step)
            for name in names:
                assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", code), (r.name, name)
    assert "go install" not in code and "install_" not in code
    assert "toolbench\" install --for" in code and "toolbench.install.recipes --apt-packages" in code


def test_the_system_python_lists_the_apt_packages_before_any_venv_exists():
    python3 = shutil.which("python3", path="/usr/bin:/bin")
    if python3 is None:
        pytest.skip("no system python3")
    out = subprocess.run([python3, "-m", "toolbench.install.recipes", "--apt-packages", "tests"], cwd=REPO,
                         env={"PATH": "/usr/bin:/bin"}, capture_output=True, text=True, check=True).stdout
    assert out.split() == installs.apt_packages(installs.for_purpose("tests"))
    assert "nginx" in out.split() and "wrk" in out.split()


def test_a_bad_tool_name_is_a_one_line_usage_error(capsys):
    assert main(["install", "ab", "no-such-tool"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("toolbench: error: no tool named 'no-such-tool': toolbench installs ab, siege")


def test_a_tool_toolbench_does_not_install_says_why_in_one_line(capsys):
    assert main(["install", "http_load"]) == 1
    err = capsys.readouterr().err
    assert err == "toolbench: error: http_load: in no package registry toolbench reaches: " \
                  "put http_load on the PATH yourself\n"


def test_nothing_asked_is_a_usage_error(capsys):
    assert main(["install"]) == 2
    assert "give --all or --for quickstart|tests" in capsys.readouterr().err


@pytest.mark.integration
def test_a_second_install_changes_nothing_and_says_so(tmp_path, monkeypatch, capsys):
    """bombardier: a real `go install` into a fresh tools folder (seconds with Go's module
    cache), then the same command again."""
    if shutil.which("go") is None:
        pytest.skip("go is not installed")
    monkeypatch.setenv("TOOLBENCH_TOOLS", str(tmp_path / "tools"))
    binary = tmp_path / "tools" / "go" / "bombardier-1.2.6" / "bombardier"

    assert main(["install", "bombardier"]) == 0
    first = capsys.readouterr().out
    assert first.splitlines() == [f"bombardier   installed  {binary}"]
    assert subprocess.run([binary, "--version"], capture_output=True, text=True).returncode == 0
    stat = binary.stat()
    leftovers = sorted(p.name for p in binary.parent.parent.iterdir())

    assert main(["install", "bombardier"]) == 0
    second = capsys.readouterr().out
    assert second.splitlines() == [f"bombardier   in place   {binary}",
                                   "nothing to do: everything asked for is installed"]
    assert binary.stat().st_mtime_ns == stat.st_mtime_ns and binary.stat().st_ino == stat.st_ino
    assert sorted(p.name for p in binary.parent.parent.iterdir()) == leftovers == ["bombardier-1.2.6"]


def test_tools_lists_the_exact_install_command_of_a_missing_tool(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("TOOLBENCH_TOOLS", str(tmp_path / "empty"))
    monkeypatch.setenv("PATH", os.pathsep.join(p for p in os.environ["PATH"].split(os.pathsep)
                                               if not Path(p, "bombardier").exists()))
    assert main(["tools"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("bombardier "))
    assert line.endswith("install: toolbench install bombardier  (go install github.com/codesenberg/bombardier@v1.2.6)")
    assert main(["tools", "--json"]) == 0
    assert '"install": "toolbench install bombardier' in capsys.readouterr().out
