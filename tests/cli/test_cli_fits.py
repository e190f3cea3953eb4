"""The command line as a pipeline or a shell meets it: --version, help with examples, -o always a
file, --json and --quiet, every scenario error at once, shell completion, and no colour in a pipe
or under NO_COLOR."""
from __future__ import annotations

import json
import os
import pty
import subprocess
from pathlib import Path

import pytest

from toolbench.cli.main import build_parser, main

REPO = Path(__file__).resolve().parents[2]
TOOLBENCH = str(REPO / ".venv" / "bin" / "toolbench")
RUNS = Path(__file__).parents[1] / "fixtures" / "runs"
QUICKSTART = REPO / "scenarios" / "quickstart.yaml"


def run_main(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse: --help, --version, usage errors
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "--version")
    from importlib.metadata import version

    assert code == 0 and out == f"toolbench {version('toolbench-meta')}\n"


def _commands() -> list[str]:
    from toolbench.cli.completion import _subcommands

    return list(_subcommands(build_parser()))


@pytest.mark.parametrize("command", _commands())
def test_every_command_has_help_with_an_example(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, command, "--help")
    assert code == 0
    examples = out.split("examples:\n", 1)[1].splitlines()
    assert examples and all(line.startswith("  ") for line in examples if line.strip() and "--help" not in line)
    assert any(line.strip().startswith(f"toolbench {command}") or line.strip().startswith(f"source <(toolbench {command}")
               or f"toolbench {command} " in line for line in examples)


def test_a_folder_where_a_file_is_expected_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_main(capsys, "report", str(RUNS / "pair-a"), "-o", str(tmp_path))
    assert (code, out, err) == (2, "", f"toolbench: error: {tmp_path}: is a folder; -o takes a file\n")
    assert not (tmp_path / "report.html").exists() and not list(tmp_path.iterdir())
    site_file = tmp_path / "site.txt"
    site_file.write_text("")
    code, _, err = run_main(capsys, "publish", str(RUNS), "--site", str(site_file))
    assert code == 2 and err == f"toolbench: error: {site_file}: is a file; --site takes a folder\n"


def test_o_names_no_folder_any_more(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, "publish", str(RUNS), "-o", str(tmp_path / "site"))
    assert code == 2 and err == (f"toolbench: error: publish: the site's folder is given with --site now "
                                 f"(-o names an output file): --site {tmp_path / 'site'}\n")
    assert not (tmp_path / "site").exists()
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n")
    code, _, err = run_main(capsys, "run", str(bad), "-o", str(tmp_path / "reports"))
    lines = err.splitlines()
    assert code == 2 and lines[0] == ("toolbench: note: `run -o DIR` is now `run --reports-dir DIR` (-o names an "
                                      "output file everywhere else); taken as --reports-dir this time")
    assert lines[1].startswith(f"toolbench: error: {bad}:1: <top>: missing required key")


def test_validate_reports_every_error_with_file_and_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: x\n"
                   "target: {server: nginx-static}\n"
                   "colour: blue\n"
                   "matrix:\n"
                   "  tool: [ab]\n"
                   "  concurrency: [1, two, -3]\n"
                   "  keepalive: maybe\n"
                   "stop: {duration: soon}\n"
                   "repeat: 0\n"
                   "probe: {interval: 1s, wobble: 2}\n"
                   "profiles:\n"
                   "  quick: {repeat: zero}\n")
    code, out, err = run_main(capsys, "validate", str(bad))
    assert code == 2 and out == ""
    assert err.splitlines() == [f"toolbench: error: {bad}:{line}" for line in (
        "3: colour: unknown key (expected one of name, description, hosts, prerequisites, target, targets, request, "
        "matrix, stop, timeout, repeat, cooldown, warmup, probe, monitor, tools, compare, profiles, criteria, "
        "claims, missing_tools, placement, workload, order, seed, settle, warm_target, calibrate, disturbed)",
        "6: matrix.concurrency[1]: expected a positive integer, got 'two'",
        "6: matrix.concurrency[2]: expected a positive integer, got '-3'",
        "7: matrix.keepalive: expected true or false, got 'maybe'",
        "8: stop.duration: expected a duration like 10s, 2m or 250ms, got 'soon'",
        "9: repeat: expected a positive integer, got '0'",
        "10: probe.wobble: unknown key (expected one of interval, baseline, timeout, slowdown, slowdown_floor, "
        "tolerance, tolerance_floor, enabled)",
        "12: profiles.quick.repeat: expected a positive integer, got 'zero'")]
    code, out, err = run_main(capsys, "validate", str(bad), "--json")
    found = json.loads(out)
    assert code == 2 and found["ok"] is False and len(found["errors"]) == 8 and err == ""
    assert found["errors"][0].startswith(f"{bad}:3: colour: unknown key")


def test_validate_json_and_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "validate", str(QUICKSTART), "--json")
    plan = json.loads(out)
    assert code == 0 and plan["ok"] is True and plan["errors"] == []
    assert {"cell": "ab-c10-ka-rep1", "runs": True, "reason": None} in plan["cells"]
    assert run_main(capsys, "validate", str(QUICKSTART), "--quiet") == (0, "", "")
    code, _, err = run_main(capsys, "validate", str(QUICKSTART), "--quiet", "--json")
    assert code == 2 and "not allowed with argument" in err


def test_tools_json_and_quiet(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "tools", "--json")
    listed = json.loads(out)
    assert code == 0 and {t["tool"] for t in listed} >= {"ab", "siege", "engine", "jmeter", "locust", "http_load"}
    engine = next(t for t in listed if t["tool"] == "engine")
    assert engine["found"] is True and engine["version"] and engine["reason"] is None
    code, out, _ = run_main(capsys, "tools", "--quiet")
    assert out.splitlines() == [t["tool"] for t in listed if t["found"]]


def test_completion_script_completes_commands_options_and_choices(tmp_path: Path) -> None:
    script = tmp_path / "toolbench.bash"
    done = subprocess.run([TOOLBENCH, "completion", "bash"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    script.write_text(done.stdout)
    probe = ('source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 )); '
             '_toolbench; printf "%s\\n" "${COMPREPLY[@]}"')

    def complete(*words: str) -> list[str]:
        out = subprocess.run(["bash", "-c", probe, "bash", str(script), "toolbench", *words],
                             capture_output=True, text=True, timeout=30, cwd=tmp_path)
        assert out.returncode == 0, out.stderr
        return sorted(line for line in out.stdout.splitlines() if line)

    assert complete("ex") == ["export"]
    assert complete("--ver") == ["--version"]
    assert complete("export", "RUN", "--format", "") == ["csv", "json", "markdown", "parquet"]
    assert complete("publish", "reports", "--w") == ["--with-raw"]
    assert complete("run", "x.yaml", "--reports") == ["--reports-dir"]  # the old spelling is not offered


def _in_a_terminal(args: list[str], env: dict[str, str]) -> bytes:
    """The command's output as a terminal shows it (a pseudo-terminal), so colour is possible."""
    pid, fd = pty.fork()
    if pid == 0:
        os.execve(args[0], args, env)
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.waitpid(pid, 0)
    return b"".join(chunks)


def test_no_colour_in_a_pipe_or_with_no_color() -> None:
    fixture = str(Path(__file__).parents[1] / "fixtures" / "siege" / "4.0.7-benchmark-j.txt")
    args = [TOOLBENCH, "parse", "--tool", "siege", fixture, "--format", "table"]
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR", "TERM")} | {"TERM": "xterm"}
    coloured = _in_a_terminal(args, env)
    assert b"9,091" in coloured and b"\x1b[" in coloured  # a terminal gets colour: the test can tell
    assert b"\x1b[" not in _in_a_terminal(args, env | {"NO_COLOR": "1"})
    piped = subprocess.run(args, capture_output=True, env=env, timeout=60)
    assert b"9,091" in piped.stdout and b"\x1b[" not in piped.stdout + piped.stderr


def test_run_json_and_quiet_are_one_of(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_main(capsys, "run", str(QUICKSTART), "--json", "--quiet")
    assert code == 2 and "not allowed with argument" in err


@pytest.mark.integration
def test_run_json_and_quiet(tmp_path: Path) -> None:
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: tiny\ntarget: {server: nginx-static}\nmatrix: {tool: [ab], concurrency: [2]}\n"
                        "stop: {requests: 200}\nprobe: {enabled: false}\n")
    reports = tmp_path / "reports"
    done = subprocess.run([TOOLBENCH, "run", str(scenario), "--reports-dir", str(reports), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert Path(summary["report"]).is_file() and Path(summary["run_dir"]).parent == reports.resolve()
    assert [(c["cell"], c["status"], c["requests_total"]) for c in summary["cells"]] == [("ab-c2-ka-rep1", "ok", 200)]
    quiet = subprocess.run([TOOLBENCH, "run", str(scenario), "--reports-dir", str(reports), "--quiet"],
                           capture_output=True, text=True, timeout=300)
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.splitlines() == [quiet.stdout.strip()] and quiet.stdout.strip().endswith("report.html")
    assert quiet.stderr == ""
