"""`toolbench setup` against a real sshd on 127.0.0.1 (tests/helpers/sshd_server.py). The remote machine
is this machine: the tools apt would install are already here (scripts/install.sh), so setup
finds them and installs nothing with apt; what it installs goes under a folder of the test's own
(`--root`): the venv with Locust and toolbench, the copy of JMeter's home."""
from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from helpers import sshd_server
from helpers.sshd_server import Sshd
from toolbench.cli.main import main
from toolbench.install import needs, setup
from toolbench.scenario import read as scenario

pytestmark = pytest.mark.integration


def _scenario(path: Path, sshd: Sshd, tools: str, extra: str = "") -> Path:
    path.write_text(
        f"name: lab\nhosts:\n  generator: {{address: 127.0.0.1, port: {sshd.port}, user: {sshd.user}, "
        f"key: {json.dumps(str(sshd.client_key))}}}\ntarget: {{url: 'http://127.0.0.1:9/'}}\n"
        f"matrix: {{tool: [{tools}]}}\nstop: {{duration: 2s}}\n{extra}")
    return path


@pytest.fixture(scope="module")
def twice(sshd: Sshd, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str], list[str]]:
    """setup run twice against one host: the root there, and what each run printed."""
    folder = tmp_path_factory.mktemp("setup")
    lab = _scenario(folder / "lab.yaml", sshd, "ab, jmeter, locust, engine",
                    "prerequisites: {sysctl: {net.core.somaxconn: '>=1'}}\n")
    root = folder / "there"
    said = []
    for _ in range(2):
        results = setup.setup_scenario(scenario.load(lab), folder / "records", str(root),
                                       known_hosts=sshd.known_hosts)
        assert not any(result.done.lacks for result in results), [setup.lines(r) for r in results]
        said.append([line for result in results for line in setup.lines(result)])
    return root, said[0], said[1]


@pytest.mark.slow  # pip installs Locust and the engine's packages into a new venv: minutes
def test_first_setup_installs_locust_toolbench_and_jmeter_and_records_how_to_undo(
        twice: tuple[Path, list[str], list[str]], sshd: Sshd) -> None:
    root, first, _ = twice
    label = f"{sshd.user}@127.0.0.1:{sshd.port}"
    changed = [line for line in first if line.startswith(f"{label}: changed: ")]
    assert any("made the virtual environment" in line and f"(undo: rm -rf {root}/venv)" in line for line in changed)
    assert any("installed locust==" in line for line in changed)
    assert any("installed toolbench (source" in line for line in changed)
    assert any(f"copied JMeter's home to {root}/jmeter-" in line for line in changed)
    assert not any("apt" in line for line in changed)  # ab and java are here already
    record = json.loads((root / "setup-record.json").read_text())
    assert [entry["what"] for entry in record] == [line.split(": changed: ")[1].split("   (undo")[0] for line in changed]
    assert all(entry["undo"] for entry in record)
    local = list((root.parent / "records").glob("*.json"))
    assert len(local) == 1 and json.loads(local[0].read_text()) == record
    assert f"{label}: recorded in {label}:{root}/setup-record.json and {local[0]}" in first


@pytest.mark.slow  # pip installs Locust and the engine's packages into a new venv: minutes
def test_what_setup_installed_runs_there(twice: tuple[Path, list[str], list[str]]) -> None:
    root, first, _ = twice
    paths = [line for line in first if "give the scenario this host's tools" in line]
    jmeter = next(root.glob("jmeter-*"))
    assert paths and f"python: {root}/venv/bin/python" in paths[0] and f"jmeter: {jmeter}/bin/jmeter" in paths[0]
    for argv in ([str(root / "venv/bin/python"), "-m", "locust", "--version"],
                 [str(root / "venv/bin/python"), "-m", "toolbench.engine", "--version"]):
        assert subprocess.run(argv, capture_output=True, cwd="/", timeout=60).returncode == 0, argv
    assert (jmeter / "bin" / "ApacheJMeter.jar").is_file()


@pytest.mark.slow  # pip installs Locust and the engine's packages into a new venv: minutes
def test_a_second_setup_changes_nothing_and_says_so(twice: tuple[Path, list[str], list[str]], sshd: Sshd) -> None:
    root, _, second = twice
    label = f"{sshd.user}@127.0.0.1:{sshd.port}"
    assert second[0].startswith(f"{label}: nothing to do (")
    assert not any(": changed: " in line for line in second)
    assert len(json.loads((root / "setup-record.json").read_text())) == 4  # nothing appended


@pytest.fixture(scope="module")
def sparse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    """A machine whose login has a shell and coreutils but no apt-get, no sudo and no load tools."""
    bin_dir = tmp_path_factory.mktemp("sparse-bin")
    for program in ("sh", "setsid", "cat", "id", "mkdir", "test", "prlimit", "python3", "kill"):
        found = shutil.which(program)
        if found:
            (bin_dir / program).symlink_to(found)
    yield from sshd_server.serve(tmp_path_factory, f"SetEnv PATH={bin_dir}\n")


def test_a_host_without_apt_gets_one_line_with_the_command_to_run_there(
        sparse: Sshd, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lab = _scenario(tmp_path / "lab.yaml", sparse, "ab, siege")
    code = main(["setup", str(lab), "--root", str(tmp_path / "there"), "--record-dir", str(tmp_path / "records"),
                 "--known-hosts", str(sparse.known_hosts)])
    out = capsys.readouterr().out.splitlines()
    assert code == 1
    assert out == [f"{sparse.user}@127.0.0.1:{sparse.port}: cannot set up: apache2-utils, siege: no apt-get on the "
                   "login's PATH; run there: apt-get install -y apache2-utils siege"]
    assert not (tmp_path / "records").exists()  # nothing changed, nothing recorded


def test_needs_follow_the_tools_and_skip_what_the_scenario_places_itself(sshd: Sshd, tmp_path: Path) -> None:
    lab = _scenario(tmp_path / "lab.yaml", sshd, "ab, http_load, locust")
    (wanted,) = needs.of_scenario(scenario.load(lab))
    assert [p.apt for p in wanted.packages] == ["apache2-utils", "python3-venv"]
    assert wanted.python_tools == ("locust",) and not wanted.jmeter
    assert wanted.cannot == ("http_load: " + needs.why_not()["http_load"],)
    text = lab.read_text().replace("}\ntarget", ", tools: {ab: /opt/ab/ab, python: /usr/bin/python3}}\ntarget")
    (wanted,) = needs.of_scenario(scenario.load(_write(tmp_path / "placed.yaml", text)))
    assert wanted.packages == () and wanted.python_tools == ()


def _write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path
