"""`system check` on this machine, with a CPU hog of the test's own; `system tune` and `reset` on
what this machine lets us set (transparent huge pages, as root), and on a recorded cpufreq layout
this VM does not have."""
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from toolbench.hosts import system, system_tune
from toolbench.hosts.system_tune import ALREADY, APPLIED, GONE, NOT_SETTABLE, NOT_VISIBLE, RESTORED

# `system tune` and its fixtures write this machine's THP setting: never beside another such test.
pytestmark = pytest.mark.machine_settings

NAMES = ["foreign_cpu", "load", "governor", "boost", "smt", "steal", "swap", "thp"]
THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")


def test_check_here_returns_every_finding_each_ok_or_noisy_or_not_visible():
    found = system.check(sample_s=0.3, target_cpus=[0], generator_cpus=[1] if os.cpu_count() > 1 else None)
    assert [f.name for f in found.findings] == NAMES
    assert found.host == "local" and re.fullmatch(r"\d{4}-\d\d-\d\dT.*\+00:00", found.checked_at)
    for f in found.findings:
        assert f.ok in (True, False, None) and f.why and f.wanted
        assert (f.ok is None) == (f.found is None), f  # not visible: nothing found, and a note says why
        assert f.found is not None or f.note
    by = {f.name: f for f in found.findings}
    governors = list(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor"))
    assert (by["governor"].ok is None) == (not governors)
    if THP.exists():
        assert by["thp"].found == re.search(r"\[(\w+)\]", THP.read_text()).group(1)
    swap_total = re.search(r"^SwapTotal:\s+(\d+)", Path("/proc/meminfo").read_text(), re.M).group(1)
    assert (by["swap"].found == "no swap") == (swap_total == "0")
    assert by["load"].found.endswith(f", {os.cpu_count()} CPUs)")
    assert found.noisy == [f for f in found.findings if f.ok is False]


@pytest.fixture
def hog():
    """A busy loop that is not this test's child (its parent shell exits at once), so that
    `check`, which leaves out its own process tree, counts it: the python's pid. Niced up so that
    it is among the busiest even on a machine busy with other work; bounded by `timeout`."""
    started = subprocess.run(["sh", "-c", f"timeout 20 nice -n -5 {sys.executable} -c 'while True: pass' "
                              "</dev/null >/dev/null 2>&1 & echo $!"], capture_output=True, text=True, timeout=10)
    leader = psutil.Process(int(started.stdout.strip()))
    try:
        for _ in range(100):
            children = leader.children()
            if children and children[0].name() != "nice":
                break
            time.sleep(0.05)
        assert children, "the hog did not start"
        yield children[0].pid
    finally:
        for proc in [*leader.children(recursive=True), leader]:
            try:
                proc.kill()
            except psutil.NoSuchProcess:
                pass


def test_a_cpu_hog_is_foreign_cpu_and_named(hog):
    found = {f.name: f for f in system.check(sample_s=1.0).findings}["foreign_cpu"]
    assert found.ok is False
    total = float(found.found.split(" %")[0])
    assert total >= 5
    assert f"pid {hog} " in found.found  # among the busiest named


def test_findings_from_recorded_layouts():
    # A 4-CPU machine with SMT: CPUs 0 and 2 are one core, 1 and 3 the other (thread_siblings_list).
    siblings = {0: [0, 2], 1: [1, 3], 2: [0, 2], 3: [1, 3]}
    shared = system.smt_finding(siblings, [0, 1], [2, 3])
    assert shared.ok is False and "CPU 0 (target) and 2 (generator) on one core" in shared.found
    assert system.smt_finding(siblings, [0, 2], [1, 3]).ok is True
    assert system.smt_finding(siblings, [0], None).ok is None
    assert system.smt_finding({}, [0], [1]).ok is None

    mixed = system.governor_finding({0: "powersave", 1: "performance", 2: "powersave"})
    assert mixed.ok is False and mixed.found == "powersave on CPU 0,2; performance on CPU 1"
    assert system.governor_finding({0: "performance", 1: "performance"}).ok is True
    assert system.governor_finding({}).ok is None

    assert system.boost_finding("1\n".strip(), None).ok is False
    assert system.boost_finding(None, "1").ok is True  # intel_pstate no_turbo 1: turbo off
    assert system.boost_finding(None, None).ok is None

    over = system.steal_finding(30, 1.0, 100, 5.0)
    assert over.ok is False and over.found.startswith("30.0 % of one core")
    assert system.steal_finding(2, 1.0, 100, 5.0).ok is True
    assert system.steal_finding(None, 1.0, 100, 5.0).ok is None

    assert system.swap_finding("SwapTotal:  2097152 kB\nSwapFree:   2000000 kB\n").ok is False
    assert system.swap_finding("SwapTotal:  0 kB\nSwapFree:   0 kB\n").found == "no swap"
    assert system.thp_finding("[always] madvise never\n").ok is False
    assert system.thp_finding("always madvise [never]\n").ok is True
    assert system.load_finding(0.6, 2).ok is False and system.load_finding(3.9, 16).ok is True

    busy = [system.Busy("sshd", 10, 0.2), system.Busy("stress", 11, 97.6), system.Busy("cron", 12, 3.0)]
    foreign = system.foreign_finding(busy, 5.0)
    assert foreign.ok is False and foreign.found == "101 % of one core (stress pid 11 98 %, cron pid 12 3 %)"
    assert system.foreign_finding([], 5.0).ok is True


def _thp_mode() -> str:
    return re.search(r"\[(\w+)\]", THP.read_text()).group(1)


@pytest.fixture
def thp_always():
    """THP set to `always` for the test (a value tune changes), put back after."""
    if os.geteuid() != 0 or not THP.exists():
        pytest.skip("needs root and transparent huge pages")
    original = _thp_mode()
    try:
        THP.write_text("always")
    except OSError as exc:
        pytest.skip(f"{THP} is not writable here: {exc}")
    try:
        yield THP.read_bytes()
    finally:
        THP.write_text(original)


def test_tune_changes_thp_and_reset_restores_it_byte_for_byte(thp_always, tmp_path):
    state = tmp_path / "state" / "system-tune.json"
    steps = {s.name: s for s in system_tune.tune(state)}
    try:
        thp = steps["thp"]
        assert (thp.before, thp.wanted, thp.outcome) == ("always", "madvise", APPLIED)
        assert _thp_mode() == "madvise"
        saved = json.loads(state.read_text())
        assert saved["changed"][system_tune.THP] == "always" and oct(state.stat().st_mode & 0o777) == "0o600"
        governors = list(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor"))
        if not governors:  # this VM: no cpufreq, so no governor nor boost to set
            assert steps["governor"].outcome == NOT_VISIBLE and steps["boost"].outcome == NOT_VISIBLE
        again = {s.name: s for s in system_tune.tune(state)}  # a second tune keeps the first's values
        assert again["thp"].outcome == ALREADY
        assert json.loads(state.read_text())["changed"][system_tune.THP] == "always"
    finally:
        restored = {s.name: s for s in system_tune.reset(state)}
    assert restored["thp"].outcome == RESTORED
    assert THP.read_bytes() == thp_always
    assert not state.exists()
    assert system_tune.reset(state) is None  # nothing left to undo


def _fake_sys(root: Path) -> dict[Path, bytes]:
    """A cpufreq layout this VM has not: two CPUs, the second offering only powersave; boost on."""
    files = {
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor": "powersave\n",
        "sys/devices/system/cpu/cpu0/cpufreq/scaling_available_governors": "performance powersave\n",
        "sys/devices/system/cpu/cpu1/cpufreq/scaling_governor": "powersave\n",
        "sys/devices/system/cpu/cpu1/cpufreq/scaling_available_governors": "powersave\n",
        "sys/devices/system/cpu/cpufreq/boost": "1\n",
        "sys/kernel/mm/transparent_hugepage/enabled": "always madvise [never]\n",
        "proc/sys/kernel/random/boot_id": "boot-1\n",
    }
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return {root / name: (root / name).read_bytes() for name in files}


def test_tune_and_reset_on_a_recorded_cpufreq_layout(tmp_path):
    root, state = tmp_path / "root", tmp_path / "tune.json"
    before = _fake_sys(root)
    steps = {s.name: s for s in system_tune.tune(state, root=root)}
    assert [s.name for s in steps.values()] == ["governor cpu0", "governor cpu1", "boost", "thp"]
    assert (steps["governor cpu0"].outcome, steps["boost"].outcome, steps["thp"].outcome) == (APPLIED, APPLIED, ALREADY)
    assert steps["governor cpu1"].outcome == NOT_SETTABLE and "not among" in steps["governor cpu1"].reason
    assert (root / "sys/devices/system/cpu/cpufreq/boost").read_text() == "0\n"
    restored = system_tune.reset(state, root=root)
    assert [(s.name, s.outcome) for s in restored] == [("governor cpu0", RESTORED), ("boost", RESTORED)]
    assert {path: path.read_bytes() for path in before} == before and not state.exists()


def test_reset_after_a_restart_restores_nothing_and_forgets(tmp_path):
    root, state = tmp_path / "root", tmp_path / "tune.json"
    _fake_sys(root)
    system_tune.tune(state, root=root)
    (root / system_tune.BOOT_ID).write_text("boot-2\n")
    steps = system_tune.reset(state, root=root)
    assert {s.outcome for s in steps} == {GONE} and not state.exists()
    assert (root / "sys/devices/system/cpu/cpufreq/boost").read_text() == "0\n"  # untouched: a real restart reset it


@pytest.mark.parametrize("changed", [{"etc/shadow": "x"}, {system_tune.THP: "always\nnever"},
                                     {"sys/devices/system/cpu/cpu0/../../../../etc/passwd": "x"}])
def test_a_tampered_state_file_restores_nothing(tmp_path, changed):
    root, state = tmp_path / "root", tmp_path / "tune.json"
    before = _fake_sys(root)
    state.write_text(json.dumps({"version": 1, "boot_id": "boot-1", "changed": changed}))
    with pytest.raises(system_tune.SystemTuneError, match="not a knob"):
        system_tune.reset(state, root=root)
    assert {path: path.read_bytes() for path in before} == before and state.exists()
    state.write_text("not json")
    with pytest.raises(system_tune.SystemTuneError, match="not a state file"):
        system_tune.reset(state, root=root)


def test_the_state_file_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert system_tune.state_file() == tmp_path / "toolbench" / "system-tune.json"
    monkeypatch.setenv("XDG_STATE_HOME", "relative/is/ignored")
    assert system_tune.state_file() == Path.home() / ".local" / "state" / "toolbench" / "system-tune.json"
