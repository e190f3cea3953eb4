"""The claims through the real `toolbench` command: `claims` and `report --claims-from` on a stored
run made before claims existed, their errors, and `run` storing a scenario's claims with the run."""
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, need
from toolbench.scenario import claims as scenario_claims

TOOLBENCH = str(REPO / ".venv" / "bin" / "toolbench")
STUDY_001 = REPO / "tests" / "fixtures" / "studies" / "study-001-tool-comparison-20261130T201044Z"
SCENARIO_001 = REPO / "scenarios" / "studies" / "001-tool-comparison.yaml"
AB_ROW = ("| Keep-alive raises the rate a lot (the study's evidence: ab with and without -k) "
          "| 使用 keep-alive 性能会提升很高 | ab c200 ka 9,056/s ±18 % vs ab c10 close 3,194/s ±35 % (2.8×) "
          "| **reproduced** | no counters recorded |")


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([TOOLBENCH, *args], capture_output=True, text=True, timeout=180)


def test_claims_from_a_scenario_print_the_table_of_a_run_made_before_claims():
    done = cli("claims", str(STUDY_001), "--claims-from", str(SCENARIO_001))
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("| claim (the study) | the article's figure | ours, with noise | verdict "
                        "| evidence (this run's counters) |")
    assert AB_ROW in lines
    assert len(lines) == 2 + 10  # the header, its rule, and each of the scenario's 10 claims


def test_a_run_without_claims_and_no_scenario_is_a_usage_error():
    done = cli("claims", str(STUDY_001))
    assert done.returncode == 2
    assert done.stderr.strip() == (f"toolbench: error: {STUDY_001}: no claims stored with the run (claims.json); "
                                   "give a scenario's with --claims-from SCENARIO")


def test_a_bad_claim_in_the_scenario_given_is_said_with_its_file_and_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text(SCENARIO_001.read_text().replace("  - claim: JMeter is close to others' published figures\n",
                                                    "  - claim: JMeter is close\n    colour: red\n"))
    line = bad.read_text().splitlines().index("    colour: red") + 1
    for command, extra in (("claims", []), ("report", ["-o", str(tmp_path / "r.html")])):
        done = cli(command, str(STUDY_001), "--claims-from", str(bad), *extra)
        assert done.returncode == 2
        assert f"{bad}:{line}: claims[4].colour: unknown key" in done.stderr
    assert not (tmp_path / "r.html").exists()


def test_report_claims_from_renders_the_claims_section_first(tmp_path):
    out = tmp_path / "report.html"
    done = cli("report", str(STUDY_001), "--claims-from", str(SCENARIO_001), "-o", str(out))
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(out)
    html = out.read_text()
    assert 'id="claims"' in html and "Keep-alive raises the rate a lot" in html
    assert html.index('id="claims"') < html.index('id="results"')


@pytest.mark.integration
def test_run_stores_the_scenarios_claims_with_the_run(tmp_path, nginx):
    need("ab")
    path = tmp_path / "claimed.yaml"
    path.write_text(f"name: claimed\ntarget: {{url: '{nginx.base_url}'}}\nstop: {{duration: 1s}}\n"
                    "probe: {enabled: false}\nmatrix: {tool: [ab], concurrency: [2], keepalive: [true, false]}\n"
                    "claims:\n  - claim: Keep-alive helps ab\n    article: 3,000 -> 9,000/s\n"
                    "    higher: {keepalive: true}\n    lower: {keepalive: false}\n  - claim: Not checked here\n")
    done = cli("run", str(path), "--reports-dir", str(tmp_path / "reports"), "--no-progress", "--quiet")
    assert done.returncode == 0, done.stderr
    run_dir = Path(done.stdout.strip().splitlines()[-1]).parent
    stored = scenario_claims.load(run_dir)
    assert stored is not None and stored.source == str(path)
    assert [c.claim for c in stored.claims] == ["Keep-alive helps ab", "Not checked here"]
    shown = cli("claims", str(run_dir))
    assert shown.returncode == 0, shown.stderr
    rows = shown.stdout.splitlines()[2:]
    assert rows[0].startswith("| Keep-alive helps ab | 3,000 -> 9,000/s | ab ka ")
    assert rows[1] == "| Not checked here | — | — | **not checked by a run** | — |"
    evidence = rows[0].split(" | ")[-1]  # this machine's counters over each side's cell, read
    assert evidence.startswith(("none on either side: ", "listen overflows: ", "SYN retransmits: ", "resets ")), rows[0]
    assert "Keep-alive helps ab" in (run_dir / "report.html").read_text()
