"""The package as people install it: the sdist and the wheel built from this checkout, the wheel
installed into fresh venvs outside it. With the core alone, the commands that read stored runs
work (and one that runs a tool says which extra it needs); with [all], the quickstart runs by
name from a folder that is not the checkout. Across the whole package: build, install, CLI."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO, need

pytestmark = [pytest.mark.slow, pytest.mark.integration]


def sh(argv: list[str], cwd: Path, timeout: float = 900, env: dict[str, str] | None = None,
       check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})
    if check and done.returncode != 0:
        raise AssertionError(f"{' '.join(argv)} exited {done.returncode}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The sdist, and the wheel built from it (as `python -m build` does), from a copy of the
    tracked files only: what a clean clone holds, not this checkout's .venv or build leftovers."""
    base = tmp_path_factory.mktemp("dist")
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout
    source = base / "source"
    for name in filter(None, files.decode().split("\0")):
        if (REPO / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, source / name)
    sh([sys.executable, "-m", "build", "--outdir", str(base / "out"), str(source)], cwd=base)
    return {"sdist": next((base / "out").glob("*.tar.gz")), "wheel": next((base / "out").glob("*.whl"))}


def fresh_venv(where: Path, wheel: Path, extras: str = "") -> Path:
    venv.create(where, with_pip=True)
    pip = where / "bin" / "pip"
    sh([str(pip), "install", "-q", f"{wheel}{extras}"], cwd=where)
    return where / "bin" / "toolbench"


def test_the_wheel_holds_every_package_and_the_bundled_scenarios(dist: dict[str, Path]) -> None:
    listed = sh([sys.executable, "-m", "zipfile", "-l", str(dist["wheel"])], cwd=REPO).stdout
    for package in [*REPO.glob("toolbench/**/__init__.py"), *REPO.glob("adapters/**/__init__.py")]:
        inside = package.relative_to(REPO).as_posix()
        inside = "toolbench/" + inside if inside.startswith("adapters/") else inside
        assert inside in listed, f"{inside} is not in the wheel"
    for scenario in REPO.glob("scenarios/**/*.yaml"):
        assert "toolbench/" + scenario.relative_to(REPO).as_posix() in listed
    for template in ("toolbench/adapters/locust/templates/locustfile.py", "toolbench/report/templates/report.html.j2"):
        assert template in listed


def test_the_core_alone_reads_renders_and_exports_stored_runs(dist: dict[str, Path], tmp_path: Path) -> None:
    toolbench = fresh_venv(tmp_path / "core", dist["wheel"])
    work = tmp_path / "work"
    work.mkdir()
    assert sh([str(toolbench), "--version"], cwd=work).stdout.startswith("toolbench ")
    parsed = json.loads(sh([str(toolbench), "parse", str(FIXTURES / "ab" / "2.3-small-n.txt")], cwd=work).stdout)
    assert parsed[0]["measurement"]["counts"]["requests_total"] == 50
    shutil.copytree(FIXTURES / "runs" / "pair-a", work / "runs" / "pair-a")
    report = sh([str(toolbench), "report", str(work / "runs" / "pair-a")], cwd=work).stdout.strip()
    assert Path(report).is_file() and "<svg" in Path(report).read_text()
    sh([str(toolbench), "export", str(work / "runs"), "-o", str(work / "results.csv")], cwd=work)
    assert (work / "results.csv").read_text().count("\n") > 10
    said = sh([str(toolbench), "run", "quickstart"], cwd=work, check=False)
    assert said.returncode == 1 and "[run] extra" in said.stderr and "Traceback" not in said.stderr, said.stderr


def test_with_every_extra_the_quickstart_runs_by_name_outside_the_checkout(dist: dict[str, Path],
                                                                          tmp_path: Path) -> None:
    for tool in ("ab", "siege", "nginx"):
        need(tool)
    toolbench = fresh_venv(tmp_path / "all", dist["wheel"], "[all]")
    work = tmp_path / "elsewhere"
    work.mkdir()
    listed = sh([str(toolbench), "scenarios"], cwd=work).stdout
    assert "quickstart" in listed and "studies/001-tool-comparison" in listed
    sh([str(toolbench), "install", "ab", "siege", "nginx"], cwd=work)
    done = sh([str(toolbench), "run", "quickstart", "--profile", "quick", "--quiet",
                "--fail-on", "cells"], cwd=work, timeout=600)
    report = Path(done.stdout.strip().splitlines()[-1])
    assert report.is_file() and report.is_relative_to(work / "reports")
    results = [json.loads(line) for line in (report.parent / "results.jsonl").read_text().splitlines()]
    assert len(results) == 12 and {r["outcome"]["status"] for r in results} == {"ok"}  # its quick profile: 1 repetition
