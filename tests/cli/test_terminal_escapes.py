"""Terminal control sequences in a tool's output or a stored run (an OSC that retitles the window, a
CSI that clears the screen, BEL, a C1 CSI) never reach the terminal from `toolbench parse`,
`toolbench check` or the summary `run` prints: each such character is shown as its escape
(`\\x1b`); JSON escapes them itself. The inputs are recorded outputs with the sequences put into
an error text and into the run's label (its files' name), and a stored run with them in a cell's
name and error."""
from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from helpers.cli import cli
from toolbench.cli.progress import ProgressObserver
from toolbench.cli.terminal import safe
from toolbench.record import store
from toolbench.record.schema import RunResult

OSC = "\x1b]0;owned\x07"  # sets the window's title
CSI = "\x1b[2J"  # clears the screen
C1 = "\u009b31m"  # CSI as one C1 character (a terminal may take it as ESC [)
LABEL = f"run{OSC}{CSI}[link=mailto:x]label"  # and rich's markup, which is text here
RAW = ("\x1b", "\x07", "\u009b")  # none of these may be printed as they are


def unsafe(text: str) -> list[str]:
    return [c for c in RAW if c in text]


def ab_reset(folder: Path) -> list[Path]:
    """ab's recorded run ended by a reset, its stderr line (which becomes a note) with both
    sequences in it, under a name with them too."""
    folder.mkdir()
    stdout, stderr = folder / f"{LABEL}.txt", folder / f"{LABEL}.stderr.txt"
    shutil.copy(FIXTURES / "ab" / "2.3-reset.txt", stdout)
    said = (FIXTURES / "ab" / "2.3-reset.stderr.txt").read_text()
    assert "Connection reset by peer" in said
    stderr.write_text(said.replace("Connection reset", f"Connection {OSC}{CSI}{C1}reset"), encoding="utf-8")
    return [stdout, stderr]


def test_safe_shows_control_characters_and_keeps_tab_and_newline():
    assert safe("a\tb\nc") == "a\tb\nc"
    assert safe(f"x{OSC}{CSI}{C1}\x7f\r\x00") == "x\\x1b]0;owned\\x07\\x1b[2J\\x9b31m\\x7f\\x0d\\x00"
    assert safe("é ☃ —") == "é ☃ —"  # text is text


def test_parse_as_a_table_shows_the_sequences_in_a_label(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("COLUMNS", "300")  # the whole label in its cell (rich cuts it to fit 80)
    files = ab_reset(tmp_path / "ab")
    done = cli("parse", "--tool", "ab", "--format", "table", *map(str, files))
    assert done.returncode == 0, done.stderr
    assert unsafe(done.stdout + done.stderr) == []
    assert "run\\x1b]0;owned\\x07\\x1b[2J[link=mailto:x]label" in done.stdout.replace("\n", "")


def test_parse_on_a_terminal_prints_no_sequence_of_the_output(tmp_path: Path):
    """On a terminal rich styles the table with escapes of its own; none of the label's gets out."""
    files = ab_reset(tmp_path / "ab")
    leader, follower = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | {"TERM": "xterm-256color", "COLUMNS": "300"}
    with subprocess.Popen([str(REPO / ".venv" / "bin" / "toolbench"), "parse", "--tool", "ab", "--format", "table",
                           *map(str, files)], stdout=follower, stderr=follower, env=env) as proc:
        os.close(follower)
        out = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the other end closed
                break
            if not chunk:
                break
            out += chunk
        assert proc.wait(timeout=60) == 0, out
    os.close(leader)
    shown = out.decode("utf-8", errors="replace")
    for sequence in ("\x1b]", "\x1b[2J", "\x07", "\u009b", "\x1b]8;"):  # \x1b]8; a hyperlink from markup
        assert sequence not in shown, shown
    assert "\\x1b]0;owned\\x07" in shown


def test_parse_as_json_escapes_the_sequences_and_keeps_them(tmp_path: Path):
    files = ab_reset(tmp_path / "ab")
    done = cli("parse", "--tool", "ab", "--format", "json", *map(str, files))
    assert done.returncode == 0, done.stderr
    assert unsafe(done.stdout + done.stderr) == []
    assert "\\u001b]0;owned\\u0007" in done.stdout
    [result] = json.loads(done.stdout)
    assert result["identity"]["cell_id"] == LABEL  # JSON's own escapes: the text is whole
    assert f"Connection {OSC}{CSI}{C1}reset" in " ".join(result["measurement"]["notes"])


def test_parse_as_csv_shows_the_sequences(tmp_path: Path):
    files = ab_reset(tmp_path / "ab")
    done = cli("parse", "--tool", "ab", "--format", "csv", *map(str, files))
    assert done.returncode == 0, done.stderr
    assert unsafe(done.stdout + done.stderr) == []
    assert "\\x1b]0;owned\\x07" in done.stdout


@pytest.mark.parametrize("fmt", ["table", "json"])
def test_a_parse_error_quoting_the_tool_shows_the_sequences(tmp_path: Path, fmt: str):
    """wrk's refused run: the error quotes its stderr line, here with the sequences in it."""
    stdout, stderr = tmp_path / f"{LABEL}.txt", tmp_path / f"{LABEL}.stderr.txt"
    shutil.copy(FIXTURES / "wrk" / "4.1.0-refused.txt", stdout)
    said = (FIXTURES / "wrk" / "4.1.0-refused.stderr.txt").read_text()
    assert "Connection refused" in said
    stderr.write_text(said.replace("Connection refused", f"Connection {OSC}{CSI}{C1}refused"), encoding="utf-8")
    done = cli("parse", "--tool", "wrk", "--format", fmt, str(stdout), str(stderr))
    assert done.returncode == 1
    assert unsafe(done.stdout + done.stderr) == []
    assert "wrk said: " in done.stderr and "Connection \\x1b]0;owned\\x07\\x1b[2J\\x9b31mrefused" in done.stderr


@pytest.fixture
def stored_run(tmp_path: Path) -> Path:
    """A recorded run whose first cell failed with the sequences in its name and its error."""
    run = Path(shutil.copytree(FIXTURES / "runs" / "pair-a", tmp_path / "run"))
    records = [json.loads(line) for line in (run / store.RESULTS).read_text().splitlines()]
    records[0]["identity"]["cell_id"] = "ab-c10" + OSC
    records[0]["outcome"].update(status="failed", error=f"apr_socket_recv: {CSI}{C1}Connection reset by peer")
    (run / store.RESULTS).write_text("".join(json.dumps(r) + "\n" for r in records))
    return run


def test_check_shows_the_sequences_of_a_stored_run(stored_run: Path):
    done = cli("check", str(stored_run), "--criteria", "p99_ms < 1e9")
    assert done.returncode == 3, done.stdout + done.stderr  # the failed cell
    assert unsafe(done.stdout + done.stderr) == []
    assert "✗ ab-c10\\x1b]0;owned\\x07: failed: apr_socket_recv: \\x1b[2J\\x9b31mConnection reset" in done.stdout


def test_check_as_json_escapes_the_sequences(stored_run: Path):
    done = cli("check", str(stored_run), "--json")
    assert unsafe(done.stdout + done.stderr) == []
    cells = json.loads(done.stdout)["cells"]
    assert any(c["cell"] == "ab-c10" + OSC for c in cells)


def test_run_progress_shows_the_sequences_of_a_failed_cell(stored_run: Path, capsys: pytest.CaptureFixture):
    """The line `run` prints as a cell ends; its end-of-run summary is check's (above)."""
    result = RunResult.from_dict(json.loads((stored_run / store.RESULTS).read_text().splitlines()[0]))
    with ProgressObserver(enabled=False) as observer:
        observer.cell_finished(0, result)
    err = capsys.readouterr().err
    assert unsafe(err) == []
    assert "ab-c10\\x1b]0;owned\\x07: failed: apr_socket_recv: \\x1b[2J\\x9b31mConnection" in err.replace("\n", "")
