"""A scenario that starts programs of its own says so: `validate` lists each with file:line, and
`run` starts none of them unless given --allow-commands."""
import json
import shutil
import socket
import sys

import pytest

from conftest import REPO, need
from helpers.cli import cli
from toolbench.contract.host import free_port


def _ab() -> str:
    need("ab")
    return str(shutil.which("ab"))


def _scenario(tmp_path, port):
    www = tmp_path / "www"
    www.mkdir()
    (www / "index.html").write_text("hi")
    (tmp_path / "mine.py").write_text("from locust import HttpUser\n")
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
name: own-programs
hosts:
  generator:
    address: local
    tools: {{ab: "{_ab()}"}}
target:
  command: "{sys.executable} -m http.server {port} --bind 127.0.0.1 --directory {www}"
  url: "http://127.0.0.1:{port}"
  ready: {{path: /index.html, timeout: 10s}}
request: {{path: /index.html}}
matrix: {{tool: [ab], concurrency: [2]}}
stop: {{requests: 20}}
probe: {{enabled: false}}
tools:
  mine: {{use: locust, locustfile: mine.py}}
""")
    return path


def test_validate_lists_every_program_the_scenario_starts_with_its_line(tmp_path):
    path = _scenario(tmp_path, free_port())
    done = cli("validate", str(path))
    assert done.returncode == 0, done.stderr
    listed = [line.strip() for line in done.stdout.splitlines() if line.startswith(f"  {path}:")]
    assert listed == [f"{path}:5: hosts.generator.tools.ab: {_ab()}",
                      f"{path}:7: target.command: {sys.executable} -m http.server "
                      f"{path.read_text().split(' -m http.server ')[1].split(chr(34))[0]}",
                      f"{path}:15: tools.mine.locustfile: mine.py"]
    as_json = json.loads(cli("validate", str(path), "--json").stdout)["programs"]
    assert [(p["where"], p["key"]) for p in as_json] == [
        (f"{path}:5", "hosts.generator.tools.ab"), (f"{path}:7", "target.command"), (f"{path}:15", "tools.mine.locustfile")]


def test_a_bundled_scenario_of_bundled_parts_starts_no_program_of_its_own():
    done = cli("validate", str(REPO / "scenarios" / "quickstart.yaml"), "--json")
    assert json.loads(done.stdout)["programs"] == []


@pytest.mark.integration
def test_run_refuses_a_scenario_with_programs_unless_allowed_then_runs_it(tmp_path):
    port = free_port()
    path = _scenario(tmp_path, port)
    path.write_text(path.read_text().rsplit("tools:\n", 1)[0])  # no locustfile: ab is the tool
    reports = tmp_path / "reports"
    refused = cli("run", str(path), "--reports-dir", str(reports), "--quiet")
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"toolbench: error: {path}:5: hosts.generator.tools.ab: this scenario starts a program of its own "
        f"('{_ab()}') (and 1 more: `toolbench validate` lists them); read it, then run with --allow-commands"]
    assert not reports.exists()  # refused before anything started or was written
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
    done = cli("run", str(path), "--reports-dir", str(reports), "--quiet", "--allow-commands")
    assert done.returncode == 0, done.stderr
    (run_dir,) = reports.iterdir()
    (result,) = [json.loads(line) for line in (run_dir / "results.jsonl").read_text().splitlines()]
    assert result["outcome"]["status"] == "ok" and result["measurement"]["counts"]["requests_ok"] == 20
