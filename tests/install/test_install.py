"""`toolbench install` and its table (each tool's install as its adapter declares it,
toolbench/install/recipes.py for the rest): every tool installable the way the project does or
saying why not, one Java package here and on a remote host, a second call changing nothing, and
scripts/install.sh holding no list of its own."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
from importlib import resources
from pathlib import Path

import pytest
import yaml

from toolbench.cli.main import main
from toolbench.contract import registry, toolsdir
from toolbench.contract.adapter import Adapter
from toolbench.contract.recipe import Apt, GoModule, Install, Script, Venv
from toolbench.install import needs
from toolbench.install import recipes as installs
from toolbench.scenario.hosts import HostSpec
from toolbench.scenario.read import Prerequisites

REPO = Path(__file__).resolve().parents[2]


def test_every_adapter_has_install_steps_or_says_why_it_is_impossible():
    for name, adapter in registry.adapters().items():
        install = adapter.install
        assert "install" in vars(type(adapter)), f"{name}: declares no install of its own"
        if install.impossible is None:
            assert install.steps and install.purposes, name
        else:
            assert not install.steps and not install.purposes and len(install.impossible) > 10, name
    assert {r.name for r in installs.recipes() if r.load_tool} == set(registry.adapters())


def test_an_adapter_that_declares_no_install_says_toolbench_has_no_recipe_and_a_recipe_is_never_empty():
    class Plugin(Adapter):  # a third party's, as little as the contract allows
        name = "plugin"

        def detect(self, host, path=None): ...  # type: ignore[no-untyped-def]
        def build(self, cell, workdir, found): ...  # type: ignore[no-untyped-def]
        def parse(self, raw): ...  # type: ignore[no-untyped-def]

    assert Plugin.install.impossible and not Plugin.install.steps
    assert "no install recipe" in Plugin.install.impossible
    for neither_or_both in ({}, {"steps": (Apt(("x",)),), "impossible": "why"}):
        with pytest.raises(ValueError, match="steps, or says why"):
            Install(**neither_or_both)  # type: ignore[arg-type]


def test_jmeter_needs_the_same_java_package_here_as_on_a_remote_host():
    """One Java package everywhere: what `toolbench install jmeter` installs here, what `toolbench
    setup` gives a remote generator to run it, and what the install scripts tell a user to get."""
    here = installs.apt_packages([installs.recipe("jmeter")])  # type: ignore[list-item]
    there = needs.for_generator(HostSpec("192.0.2.1"), ["jmeter"], Prerequisites()).packages
    java = [p.apt for p in there if p.program == "java"]
    assert len(java) == 1 and java[0] in here, (java, here)
    assert set(here) - {p.apt for p in there} == {"maven"}  # only builds JMeter's home here
    for tool in ("jmeter", "gatling"):
        (script,) = [s for s in registry.get(tool).install.steps if isinstance(s, Script)]
        text = (resources.files(script.package) / script.script).read_text()
        assert f"apt-get install {java[0]}" in text, tool
        assert not re.search(r"apt-get install (?!maven)\S+", text.replace(f"apt-get install {java[0]}", "")), tool


def test_a_remote_host_is_told_the_command_for_what_setup_does_not_install():
    why = needs.why_not()
    assert why["bombardier"] == "bombardier is a Go program: `go install github.com/codesenberg/bombardier@v1.2.6` there"
    assert why["http_load"] == registry.get("http_load").install.impossible
    assert "toolbench install oha" in why["oha"] and "jmeter" not in why  # setup copies JMeter from here
    assert needs.python_tools() == ("engine", "locust")
    assert "maven" not in {p.apt for packages in needs.tool_packages().values() for p in packages}


def test_every_install_script_is_package_data_beside_its_adapter_and_needs_the_tools_folder(tmp_path):
    """Read as an installed wheel reads them (importlib.resources); run without TOOLBENCH_TOOLS a
    script stops before it writes anything: it has no folder of its own to fall back on."""
    scripts = [s for r in installs.recipes() for s in r.steps if isinstance(s, Script)]
    assert {s.package for s in scripts} == {"toolbench.adapters", "toolbench.adapters.jmeter",
                                            "toolbench.adapters.gatling"}
    globs = (REPO / "pyproject.toml").read_text()
    for step in scripts:
        source = resources.files(step.package) / step.script
        assert source.is_file(), step
        assert re.search(rf'"{re.escape(step.package)}" = \[[^]]*"\*\.sh"', globs), step.package
        with resources.as_file(source) as path:
            assert subprocess.run(["bash", "-n", str(path)]).returncode == 0, step
            env = {k: v for k, v in os.environ.items() if k != "TOOLBENCH_TOOLS"}
            done = subprocess.run(["bash", str(path)], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert done.returncode != 0 and "TOOLBENCH_TOOLS" in done.stderr, (step, done.stderr)
    assert list(tmp_path.iterdir()) == []


def test_the_tools_folder_is_the_checkouts_else_the_users_data_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("TOOLBENCH_TOOLS", raising=False)
    assert toolsdir.tools_dir() == REPO / ".tools"
    monkeypatch.setattr(toolsdir, "checkout", lambda: None)  # an installed package
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert toolsdir.tools_dir() == tmp_path / "data" / "toolbench" / "tools"
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert toolsdir.tools_dir() == tmp_path / "home" / ".local" / "share" / "toolbench" / "tools"
    home = tmp_path / "home" / ".local" / "share" / "toolbench" / "tools" / "go" / "vegeta-12.13.0"
    home.mkdir(parents=True)
    (home / "vegeta").touch()
    assert toolsdir.newest("go", "vegeta", "vegeta") == [str(home / "vegeta")]
    monkeypatch.setenv("TOOLBENCH_TOOLS", str(tmp_path / "set"))
    assert toolsdir.tools_dir() == tmp_path / "set"


def test_the_quickstart_purpose_covers_the_quickstart_scenario_and_the_tests_purpose_every_tool():
    tools = yaml.safe_load((REPO / "scenarios" / "quickstart.yaml").read_text())["matrix"]["tool"]
    quickstart = {r.name for r in installs.for_purpose("quickstart")}
    assert set(tools) | {"nginx"} <= quickstart
    assert {r.name for r in installs.installable()} == {r.name for r in installs.for_purpose("tests")}
    assert len(quickstart) < len(installs.installable())  # the demo installs less than the tests


def test_install_sh_names_no_tool_of_its_own_and_leaves_every_tool_to_toolbench_install():
    """One source: install.sh holds the venv's own build packages, never a tool's package, module
    or script (an adapter declares those), and asks nothing of the system's Python."""
    script = (REPO / "scripts" / "install.sh").read_text()
    code = "\n".join(line for line in script.splitlines() if not line.lstrip().startswith("#"))
    for r in installs.recipes():
        for step in r.steps:
            names = {Apt: lambda s: s.packages, GoModule: lambda s: (s.module,),
                     Script: lambda s: (s.path.split("/", 1)[1],), Venv: lambda s: ()}[type(step)](step)
            for name in names:
                assert not re.search(rf"(?<![\w-]){re.escape(name)}(?![\w-])", code), (r.name, name)
    assert "go install" not in code and "install_" not in code and "--apt-packages" not in code
    assert re.findall(r"apt_packages\+?=.*", code) == ["apt_packages=(python3-venv gcc libc6-dev python3-dev)"]
    assert "toolbench\" install --for" in code and "python3 -m toolbench" not in code


def test_a_bad_tool_name_is_a_one_line_usage_error(capsys):
    assert main(["install", "ab", "no-such-tool"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("toolbench: error: no tool named 'no-such-tool': toolbench installs ab, bombardier, engine")


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
