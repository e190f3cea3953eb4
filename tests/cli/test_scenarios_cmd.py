"""The bundled scenarios by name: `toolbench scenarios` lists them, and the SCENARIO argument of
run, validate, prereq and setup takes a file or a name."""
from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from conftest import REPO
from helpers.cli import cli
from toolbench.cli.scenarios_cmd import scenario_arg
from toolbench.scenario import bundled


def test_every_bundled_file_is_listed_with_its_description():
    every = {b.name: b for b in bundled.listed()}
    assert set(every) == {p.relative_to(REPO / "scenarios").with_suffix("").as_posix()
                          for p in (REPO / "scenarios").rglob("*.yaml")}
    assert every["quickstart"].description.startswith("ab, siege and the bundled engine")
    listed = json.loads(cli("scenarios", "--json").stdout)
    assert [b["name"] for b in listed] == sorted(every)


def test_a_name_a_last_part_or_a_file_resolve(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    assert scenario_arg("quickstart") == REPO / "scenarios" / "quickstart.yaml"
    assert scenario_arg("studies/000-flask-tuning") == REPO / "scenarios" / "studies" / "000-flask-tuning.yaml"
    assert scenario_arg("000-flask-tuning") == REPO / "scenarios" / "studies" / "000-flask-tuning.yaml"
    (tmp_path / "quickstart").write_text("name: mine\n")  # a file of that name here wins
    assert scenario_arg("quickstart") == Path("quickstart")
    assert scenario_arg("no/such.yaml") == Path("no/such.yaml")  # the loader names the missing path


def test_an_unknown_name_is_a_usage_error_naming_the_bundled_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(argparse.ArgumentTypeError, match=r"'nope': no such file.*quickstart"):
        scenario_arg("nope")
    done = cli("validate", "nope", cwd=tmp_path)
    assert done.returncode == 2 and "bundled: " in done.stderr and "Traceback" not in done.stderr
