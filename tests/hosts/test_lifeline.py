"""Processes toolbench starts die with it, kill -9 included; what a killed run left is found
again by its ledger, and a pid since reused by another process is never touched."""
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from toolbench.errors import Notice, StoreError
from toolbench.hosts import lifeline


def gone(pid: int, within_s: float = 15.0) -> bool:
    """True once the process no longer runs (a zombie waiting for its parent counts as gone)."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


def toolbench_stand_in(tmp_path: Path, body: str) -> tuple[subprocess.Popen, list[int]]:
    """A Python process that starts children as toolbench does, prints their pids, and waits."""
    script = tmp_path / "stand_in.py"
    script.write_text("import subprocess, sys, time\nfrom pathlib import Path\nfrom toolbench.hosts import lifeline\n"
                      + body + "\nprint(' '.join(map(str, pids)), flush=True)\ntime.sleep(120)\n")
    proc = subprocess.Popen([sys.executable, str(script)], cwd=tmp_path, stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    return proc, [int(p) for p in line.split()]


def test_a_child_dies_with_toolbench_on_kill_9(tmp_path):
    proc, (child,) = toolbench_stand_in(tmp_path, (
        "kid = subprocess.Popen(['sleep', '60'], start_new_session=True, preexec_fn=lifeline.die_with_parent())\n"
        "pids = [kid.pid]"))
    try:
        assert psutil.Process(child).is_running()
        proc.kill()
        assert gone(child)
    finally:
        proc.kill()
        proc.wait()


def test_the_watchdog_kills_the_whole_group_a_dead_toolbench_left(tmp_path):
    # The leader's grandchild gets no parent-death signal: only the watchdog can stop it, as
    # it stops nginx's workers.
    proc, (leader, grandchild, watchdog) = toolbench_stand_in(tmp_path, (
        "life = lifeline.Lifeline(Path('ledger.jsonl'))\n"
        "kid = subprocess.Popen(['sh', '-c', 'sleep 60 & echo $!; wait'], stdout=subprocess.PIPE, text=True,\n"
        "                       start_new_session=True, preexec_fn=lifeline.die_with_parent())\n"
        "life.adopt(kid.pid, 'target test')\n"
        "pids = [kid.pid, int(kid.stdout.readline()), life._watchdog.pid]"))
    try:
        assert os.getpgid(grandchild) == leader
        proc.send_signal(signal.SIGKILL)
        assert gone(leader) and gone(grandchild) and gone(watchdog)
    finally:
        proc.kill()
        proc.wait()
    entries = [json.loads(line) for line in (tmp_path / "ledger.jsonl").read_text().splitlines()]
    assert [(e["role"], e["pid"]) for e in entries] == [("watchdog", watchdog), ("target test", leader)]


def test_leftovers_are_stopped_by_their_recorded_create_time_and_a_reused_pid_is_spared(tmp_path):
    sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        created = psutil.Process(sleeper.pid).create_time()
        ledger = tmp_path / lifeline.LEDGER
        # The same pid, started at another time: a process that merely got the pid again.
        ledger.write_text(json.dumps({"event": "started", "role": "tool ab", "pid": sleeper.pid,
                                      "pgid": sleeper.pid, "create_time": created - 100}) + "\n")
        assert lifeline.stop_leftovers(ledger) == []
        assert sleeper.poll() is None
        with open(ledger, "a") as fh:
            fh.write(json.dumps({"event": "started", "role": "tool ab", "pid": sleeper.pid,
                                 "pgid": sleeper.pid, "create_time": created}) + "\n")
            fh.write('{"event": "started", "pid": 12')  # cut off by the crash
        assert lifeline.stop_leftovers(ledger) == [f"tool ab (pid {sleeper.pid})"]
        assert gone(sleeper.pid)  # killed (and reaped by the check, since here it is our own child)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_released_process_is_not_a_leftover(tmp_path):
    ledger = tmp_path / lifeline.LEDGER
    with lifeline.Lifeline(ledger) as life:
        sleeper = subprocess.Popen(["sleep", "60"], start_new_session=True)
        life.adopt(sleeper.pid, "tool sleep")
        sleeper.kill()
        sleeper.wait()
        life.release(sleeper.pid)
    assert lifeline.stop_leftovers(ledger) == []
    events = [json.loads(line)["event"] for line in ledger.read_text().splitlines()]
    assert events == ["started", "started", "stopped", "stopped"]


def dead_pid() -> int:
    """A pid that ran a moment ago and runs no more (reaped)."""
    done = subprocess.Popen(["true"])
    done.wait()
    return done.pid


def test_a_crafted_line_naming_a_dead_leader_never_kills_another_group(tmp_path):
    # A run folder may come from anyone: its ledger names a pid that is gone and the group of a
    # process toolbench never started. Nothing proves that group is the run's: it is left alone.
    victim = subprocess.Popen(["sleep", "60"], start_new_session=True)
    try:
        ledger = tmp_path / lifeline.LEDGER
        dead = dead_pid()
        ledger.write_text(json.dumps({"event": "started", "role": "target nginx", "pid": dead, "pgid": victim.pid,
                                      "create_time": 0.0}) + "\n")
        with pytest.warns(Notice, match=rf"^left alone: target nginx \(pid {victim.pid}\) in process group "
                                        rf"{victim.pid}: the leader the run recorded \(pid {dead}\) is gone, so "
                                        "nothing proves they are the run's"):
            assert lifeline.stop_leftovers(ledger) == []
        time.sleep(0.2)
        assert victim.poll() is None
    finally:
        victim.kill()
        victim.wait()


def test_a_group_whose_leader_is_a_zombie_is_still_the_runs(tmp_path):
    # A leader that ended and is not reaped yet still holds its pid (no other process can have
    # it): its group is the one the run started, and what is left of it is stopped.
    leader = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!; exec sleep 0.2"], stdout=subprocess.PIPE, text=True,
                              start_new_session=True)
    worker, ended = None, False
    try:
        created = psutil.Process(leader.pid).create_time()
        worker = int(leader.stdout.readline())
        while psutil.Process(leader.pid).status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.05)
        ledger = tmp_path / lifeline.LEDGER
        ledger.write_text(json.dumps({"event": "started", "role": "target nginx", "pid": leader.pid,
                                      "pgid": leader.pid, "create_time": created}) + "\n")
        assert lifeline.stop_leftovers(ledger) == [f"target nginx (pid {worker})"]
        ended = gone(worker)
        assert ended
    finally:
        if worker is not None and not ended:
            os.kill(worker, signal.SIGKILL)  # the test's own grandchild, by its pid
        leader.kill()
        leader.wait()


def test_a_recorded_process_that_no_longer_leads_the_group_named_takes_only_itself(tmp_path):
    # The leader is the process recorded (its create time), but the group the line names is not
    # its own: the process is the run's, the group is not.
    mine = subprocess.Popen(["sleep", "60"], start_new_session=True)
    victim = subprocess.Popen(["sleep", "60"], start_new_session=True)  # started after it
    try:
        ledger = tmp_path / lifeline.LEDGER
        ledger.write_text(json.dumps({"event": "started", "role": "tool ab", "pid": mine.pid, "pgid": victim.pid,
                                      "create_time": psutil.Process(mine.pid).create_time()}) + "\n")
        with pytest.warns(Notice, match=rf"^left alone: tool ab \(pid {victim.pid}\) in process group {victim.pid}: "
                                        rf"the leader the run recorded \(pid {mine.pid}\) no longer leads"):
            assert lifeline.stop_leftovers(ledger) == [f"tool ab (pid {mine.pid})"]
        assert gone(mine.pid)
        assert victim.poll() is None
    finally:
        for proc in (mine, victim):
            proc.kill()
            proc.wait()


def test_a_ledger_that_is_a_link_is_neither_read_nor_appended_to(tmp_path):
    outside = tmp_path / "outside.jsonl"
    outside.write_text("someone else's\n")
    (tmp_path / "run").mkdir()
    ledger = tmp_path / "run" / lifeline.LEDGER
    ledger.symlink_to(outside)
    with pytest.raises(StoreError, match=rf"^{ledger}: is a symbolic link"):
        lifeline.Lifeline(ledger)
    with pytest.raises(StoreError, match=rf"^{ledger}: is a symbolic link"):
        lifeline.stop_leftovers(ledger)
    assert outside.read_text() == "someone else's\n"
