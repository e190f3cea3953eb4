"""`toolbench system check|tune|reset` as a user runs them; tune in a mount namespace whose /sys
is read-only, as in a container, reports what it cannot set instead of failing."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import REPO
from toolbench.record import codec
from toolbench.record.machine import SystemCheck

# `system tune` and its fixtures write this machine's THP setting: never beside another such test.
pytestmark = pytest.mark.machine_settings

TOOLBENCH = str(REPO / ".venv" / "bin" / "toolbench")
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
NAMES = ["foreign_cpu", "load", "governor", "boost", "smt", "steal", "swap", "thp"]


def _toolbench(*args: str, state: Path, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    env = {**os.environ, "XDG_STATE_HOME": str(state)}
    return subprocess.run([*prefix, TOOLBENCH, *args], capture_output=True, text=True, timeout=60, env=env)


def test_check_prints_a_line_per_finding_and_exits_0(tmp_path):
    done = _toolbench("system", "check", "--sample", "200ms", state=tmp_path)
    assert done.returncode == 0, done.stderr
    *lines, summary = done.stdout.splitlines()
    assert [line[12:].split()[0] for line in lines] == NAMES
    for line in lines:
        assert re.match(r"(ok|noisy|not visible) +\w+ .+; wanted .+: .+", line), line
    noisy = [line[12:].split()[0] for line in lines if line.startswith("noisy")]
    assert summary == (f"noisy: {', '.join(noisy)}" if noisy else "nothing noisy found")


@pytest.mark.parametrize("placement", ["", "placement: {target: 1, generator: 0}\n"])
def test_check_json_is_a_system_check_with_the_scenarios_cpus(tmp_path, placement):
    if len(os.sched_getaffinity(0)) < 2:
        pytest.skip("a placement needs two CPUs")
    scenario = tmp_path / "s.yaml"
    scenario.write_text("name: placed\ntarget: {server: nginx-static}\nmatrix: {tool: [ab], concurrency: [2]}\n"
                        "stop: {requests: 100}\n" + placement)
    done = _toolbench("system", "check", "--json", "--sample", "0.2", "--scenario", str(scenario), state=tmp_path)
    assert done.returncode == 0, done.stderr
    found = codec.decode(SystemCheck, json.loads(done.stdout), "check")
    assert [f.name for f in found.findings] == NAMES and found.host == "local"
    smt = next(f for f in found.findings if f.name == "smt")
    if Path("/sys/devices/system/cpu/cpu0/topology/thread_siblings_list").exists():
        # The scenario's CPUs were compared: the split's (the default) or the explicit lists.
        assert smt.ok is not None, smt
        if placement:  # separate cores here; siblings on a machine with SMT
            assert "target 1, generator 0" in smt.found or "CPU 1 (target) and 0 (generator)" in smt.found
    bad = _toolbench("system", "check", "--sample", "forever", state=tmp_path)
    assert bad.returncode == 2 and "not a duration" in bad.stderr


def test_reset_without_a_state_file_has_nothing_to_undo(tmp_path):
    done = _toolbench("system", "reset", state=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("nothing to undo") and str(tmp_path / "toolbench" / "system-tune.json") in done.stdout


@pytest.fixture
def thp_always():
    if os.geteuid() != 0 or not THP.exists() or shutil.which("unshare") is None:
        pytest.skip("needs root, transparent huge pages and unshare")
    original = re.search(r"\[(\w+)\]", THP.read_text()).group(1)
    try:
        THP.write_text("always")
    except OSError as exc:
        pytest.skip(f"{THP} is not writable here: {exc}")
    try:
        yield
    finally:
        THP.write_text(original)


def test_tune_on_a_read_only_sys_says_not_settable(thp_always, tmp_path):
    # The remount is private to the new mount namespace: this machine's /sys stays writable.
    readonly = ("unshare", "--mount", "--propagation", "private", "sh", "-c",
                'mount -o remount,bind,ro /sys && exec "$@"', "sh")
    done = _toolbench("system", "tune", state=tmp_path, prefix=readonly)
    assert done.returncode == 0, done.stderr
    assert re.search(r"^not settable +thp +always -> madvise: read-only file system", done.stdout, re.M), done.stdout
    assert done.stdout.splitlines()[-1] == "nothing changed"
    assert not (tmp_path / "toolbench" / "system-tune.json").exists()
    assert "[always]" in THP.read_text()


def test_tune_then_reset_through_the_cli(thp_always, tmp_path):
    before = THP.read_bytes()
    tuned = _toolbench("system", "tune", state=tmp_path)
    try:
        assert tuned.returncode == 0, tuned.stderr
        assert re.search(r"^applied +thp +always -> madvise$", tuned.stdout, re.M)
        assert "toolbench system reset" in tuned.stdout.splitlines()[-1]
    finally:
        reset = _toolbench("system", "reset", state=tmp_path)
    assert reset.returncode == 0, reset.stderr
    assert re.search(r"^restored +thp +madvise -> always$", reset.stdout, re.M)
    assert THP.read_bytes() == before
