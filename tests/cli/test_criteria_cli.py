"""Gating a pipeline through the real `toolbench` command against the test nginx: exit codes,
the end-of-run summary, criteria stored with the run and shown in its report, JUnit XML that
fits the Jenkins schema, and `toolbench check` on stored runs."""
import json
import subprocess
from pathlib import Path

import pytest
import xmlschema

from conftest import FIXTURES, REPO, need

TOOLBENCH = str(REPO / ".venv" / "bin" / "toolbench")
XSD = xmlschema.XMLSchema(str(FIXTURES / "junit" / "jenkins-junit.xsd"))
STORED = FIXTURES / "stored" / "v2-0.2.0"


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([TOOLBENCH, *args], capture_output=True, text=True, timeout=180)


def scenario(tmp_path: Path, url: str, body: str, name: str = "gate") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\ntarget: {{url: '{url}'}}\nstop: {{duration: 1s}}\n"
                    "probe: {enabled: false}\n" + body)
    return path


def run(tmp_path: Path, path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, Path]:
    done = cli("run", str(path), "--reports-dir", str(tmp_path / "reports"), "--no-progress", *extra)
    report = Path(done.stdout.strip().splitlines()[-1]) if done.stdout.strip() else tmp_path
    return done, report.parent


@pytest.mark.integration
def test_a_criterion_not_met_exits_1_with_the_summary_junit_and_report(tmp_path, nginx):
    need("ab")
    path = scenario(tmp_path, nginx.base_url, "matrix: {tool: [ab], concurrency: [1]}\ncriteria:\n"
                    "  - p99_ms < 100000\n  - rps > 1e12\n  - probe_p50_ms < 1000\n")
    done, run_dir = run(tmp_path, path, "--junit", str(tmp_path / "junit.xml"))
    assert done.returncode == 1, done.stderr
    lines = done.stdout.splitlines()
    lines = lines[next(i for i, line in enumerate(lines) if line.startswith("verdict: ")):]  # after the table
    assert lines[1] == "cells: 1: 1 ok"
    assert lines[2] == "criteria: 1 passed, 1 failed, 1 unknown (unknown: a figure was absent, which is not a pass)"
    assert "  ✗ rps > 1e12: 0 of 1 passed" in lines
    assert "      ? ab-c1-ka-rep1: probe_p50_ms is absent (toolbench's monitor or probe did not measure it)" in lines
    assert lines[-2] == "exit 1: a criterion was not met" and lines[-1].endswith("report.html")
    stored = json.loads((run_dir / "criteria.json").read_text())
    assert [e["verdict"] for e in stored["evaluations"]] == ["passed", "failed", "unknown"]
    assert stored["evaluations"][1]["where"] == f"{path}:8: criteria[1]"
    html = (run_dir / "report.html").read_text()
    assert 'id="criteria"' in html and "rps &gt; 1e12" in html
    XSD.validate(str(tmp_path / "junit.xml"))
    # the stored run judged again: the same verdict, and what fails a pipeline is chosen
    assert cli("check", str(run_dir)).returncode == 1
    assert cli("check", str(run_dir), "--fail-on", "cells").returncode == 0
    assert cli("check", str(run_dir), "--fail-on", "none").returncode == 0
    rerender = cli("report", str(run_dir), "-o", str(tmp_path / "again.html"))
    assert rerender.returncode == 0 and "rps &gt; 1e12" in (tmp_path / "again.html").read_text()


@pytest.mark.integration
def test_all_criteria_met_exits_0_and_unsupported_cells_are_skipped_not_failed(tmp_path, nginx):
    need("ab")
    path = scenario(tmp_path, nginx.base_url, "matrix: {tool: [ab, engine], concurrency: [1], rate: [null, 200]}\n"
                    "criteria:\n  - error_rate < 1%\n  - expect: engine.rps >= 0.01 * ab.rps\n    rate: null\n")
    done, run_dir = run(tmp_path, path, "--junit", str(tmp_path / "junit.xml"))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "cells: 4: 3 ok, 1 unsupported (skipped)" in done.stdout and "exit 0: ok" in done.stdout
    assert "criteria: 4 passed" in done.stdout  # error rate in three cells, the comparison at rate null
    XSD.validate(str(tmp_path / "junit.xml"))
    suites = XSD.to_dict(str(tmp_path / "junit.xml"))["testsuite"]
    skipped = [c["@name"] for c in suites[0]["testcase"] if "skipped" in c]
    assert skipped == ["ab-c1-ka-rate200-rep1"]
    assert suites[1]["@tests"] == "4" and suites[1]["@failures"] == "0"


@pytest.mark.integration
def test_failed_cells_exit_3_unless_only_criteria_fail_the_pipeline(tmp_path, nginx):
    need("ab")
    path = scenario(tmp_path, nginx.base_url, "request: {path: /no-such-page}\nmatrix: {tool: [ab], concurrency: [1]}\n")
    done, run_dir = run(tmp_path, path)
    assert done.returncode == 3, done.stderr  # every request answered 404
    assert "cells: 1: 0 ok, 1 failed" in done.stdout and "criteria: none given" in done.stdout
    assert "  ✗ ab-c1-ka-rep1: failed: no successful request" in done.stdout
    assert cli("check", str(run_dir), "--fail-on", "criteria").returncode == 0
    judged = cli("check", str(run_dir), "--criteria", "error_rate < 1%", "--fail-on", "criteria")
    assert judged.returncode == 1 and "ab-c1-ka-rep1: 1 < 0.01 (error_rate = 1)" in judged.stdout
    assert cli("check", str(run_dir), "--criteria", "error_rate < 1%").returncode == 3  # cells come first
    # In the order written: the first cell is the one --fail-fast stops at.
    path.write_text(path.read_text().replace("concurrency: [1]", "concurrency: [1, 2]") + "order: as-written\n")
    fast, stopped = run(tmp_path, path, "--fail-fast", "--junit", str(tmp_path / "junit.xml"))
    assert fast.returncode == 3, fast.stderr
    assert "ab-c1-ka-rep1 failed, and --fail-fast ended the run there" in fast.stderr
    assert "cells: 2: 0 ok, 1 failed, 1 not run" in fast.stdout
    assert [r["identity"]["cell_id"] for r in map(json.loads, (stopped / "results.jsonl").read_text().splitlines())
            ] == ["ab-c1-ka-rep1"]
    XSD.validate(str(tmp_path / "junit.xml"))
    assert "not_run" in (tmp_path / "junit.xml").read_text()
    assert cli("check", str(stopped), "--fail-on", "none").returncode == 0
    later = cli("check", str(stopped))  # the stored run knows it ended early
    assert later.returncode == 3 and "the run failed" in later.stdout


def test_a_bad_criterion_is_a_usage_error_naming_file_line_and_column(tmp_path):
    path = scenario(tmp_path, "http://127.0.0.1:9/", "matrix: {tool: [ab]}\ncriteria:\n  - p99_ms <= 5\n"
                    "  - expect: rsp > 5\n")
    for command in ("validate", "run"):
        done = cli(command, str(path))
        assert done.returncode == 2
        assert done.stderr == (f"toolbench: error: {path}:8: criteria[1].expect: column 1: unknown figure 'rsp' in "
                               f"'rsp > 5' (did you mean rps? known: {done.stderr.split('known: ')[1]}")
    assert cli("check", str(STORED), "--criteria", "p99_ms <").returncode == 2
    folder = cli("check", str(STORED), "--junit", str(tmp_path))  # a folder for the file
    assert folder.returncode == 2 and folder.stderr == f"toolbench: error: {tmp_path}: is a folder; --junit takes a file\n"


def test_check_judges_a_stored_run_with_criteria_from_the_command_line(tmp_path):
    out = tmp_path / "check.xml"
    done = cli("check", str(STORED), "--criteria", "p99_ms < 50", "--criteria", "engine.rps >= 0.95 * ab.rps",
               "--junit", str(out))
    assert done.returncode == 1, done.stderr
    assert done.stdout.splitlines()[:2] == ["cells: 4: 4 ok", "criteria: 4 passed, 2 failed"]
    assert "  ✗ engine.rps >= 0.95 * ab.rps: 0 of 2 passed" in done.stdout
    XSD.validate(str(out))
    assert not (STORED / "criteria.json").exists()  # check changes nothing in the run folder
    assert cli("check", str(STORED), "--criteria", "p99_ms < 50").returncode == 0
    quiet = cli("check", str(STORED), "--criteria", "p99_ms < 0.001", "--quiet")
    assert quiet.returncode == 1 and quiet.stdout == ""
    shown = json.loads(cli("check", str(STORED), "--criteria", "p99_ms < 50", "--json").stdout)
    assert shown["exit_code"] == 0 and len(shown["cells"]) == 4
    assert {e["verdict"] for e in shown["criteria"]} == {"passed"}
    older = cli("check", str(FIXTURES / "stored" / "v1-0.1.0"), "--criteria", "rps > 1")
    assert older.returncode == 0, older.stdout + older.stderr
