"""Prerequisites, checked on this machine and applied inside a network namespace of our own."""
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolbench.cli.main import main
from toolbench.hosts import prereq
from toolbench.hosts.local import LocalHost
from toolbench.scenario.read import Prerequisites


def _proc(key: str) -> str:
    return " ".join(Path("/proc/sys/" + key.replace(".", "/")).read_text().split())


def test_a_check_reads_this_machine():
    somaxconn = int(_proc("net.core.somaxconn"))
    wanted = Prerequisites(sysctl={"net.core.somaxconn": str(somaxconn), "net.ipv4.tcp_fin_timeout": "<=1"})
    first, second = prereq.check(LocalHost(), wanted)
    assert (first.kind, first.key, first.found, first.ok, first.required) == (
        "sysctl", "net.core.somaxconn", str(somaxconn), True, True)
    assert first.host == "local"
    assert second.found == _proc("net.ipv4.tcp_fin_timeout")
    assert second.ok is (int(second.found) <= 1)
    higher = prereq.check(LocalHost(), Prerequisites(sysctl={"net.core.somaxconn": str(somaxconn + 1)}))
    assert higher[0].ok is False and higher[0].blocking


def test_a_key_the_kernel_does_not_have_is_an_unmet_finding():
    (f,) = prereq.check(LocalHost(), Prerequisites(sysctl={"net.ipv4.tcp_no_such_knob": "1"}))
    assert f.found is None and f.ok is False and f.note == "no such key on this kernel"
    error = prereq.refusal([f], "s.yaml")
    assert "net.ipv4.tcp_no_such_knob" in str(error) and "--go-on" in str(error)
    (bad,) = prereq.check(LocalHost(), Prerequisites(sysctl={"../../etc/passwd": "1"}))
    assert bad.ok is False and "not a sysctl key" in bad.note


def test_tcp_tw_recycle_is_explained_not_blocking():
    (f,) = prereq.check(LocalHost(), Prerequisites(sysctl={"net.ipv4.tcp_tw_recycle": "1"}))
    assert not Path("/proc/sys/net/ipv4/tcp_tw_recycle").exists()
    assert f.ok is None and not f.blocking
    assert "Linux 4.12" in f.note and "NAT" in f.note


def test_the_comparisons():
    assert prereq.satisfies("net.core.somaxconn", "4096", "1024")  # more is better
    assert not prereq.satisfies("net.core.somaxconn", "128", "1024")
    assert prereq.satisfies("net.ipv4.tcp_fin_timeout", "15", "30")  # less is better
    assert prereq.satisfies("net.ipv4.tcp_tw_reuse", "1", "1") and not prereq.satisfies("net.ipv4.tcp_tw_reuse", "2", "1")
    assert prereq.satisfies("net.ipv4.ip_local_port_range", "1024 65535", "15000 61000")  # covers it
    assert not prereq.satisfies("net.ipv4.ip_local_port_range", "32768 60999", "1024 65535")
    assert prereq.satisfies("kernel.anything", "7", ">=5") and not prereq.satisfies("kernel.anything", "7", "<=5")
    assert prereq.satisfies("net.ipv4.tcp_congestion_control", "bbr", "bbr")
    assert prereq.target_value("net.core.somaxconn", ">= 4096") == "4096"


@pytest.fixture
def low_nofile():
    """This process's soft nofile limit lowered to 1024 for the test (lowering needs no privilege)."""
    saved = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, saved[1]))
    try:
        yield saved[1]
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, saved)


def test_the_tools_get_the_soft_nofile_limit_raised_and_the_check_sees_it(low_nofile):
    hard = low_nofile
    want = 4096 if hard == resource.RLIM_INFINITY else min(4096, hard)
    host = LocalHost()
    assert host.process_limits()["nofile"].soft == 1024  # what this login gives
    assert host.with_limits({"nofile": want}).process_limits()["nofile"].soft == want
    assert resource.getrlimit(resource.RLIMIT_NOFILE)[0] == 1024  # toolbench's own is put back
    (f,) = prereq.check(host.with_limits({"nofile": want}), Prerequisites(ulimit={"nofile": want}))
    assert f.ok is True and f.found == str(want) and "raises it from 1024" in f.note


def test_a_nofile_above_the_hard_limit_is_unmet_unless_it_may_be_raised():
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        pytest.skip("no hard nofile limit here")
    want = hard + 1
    may_raise = subprocess.run(
        [sys.executable, "-c", f"import resource; resource.setrlimit(resource.RLIMIT_NOFILE, ({want}, {want}))"],
        capture_output=True).returncode == 0
    (f,) = prereq.check(LocalHost().with_limits({"nofile": want}), Prerequisites(ulimit={"nofile": want}))
    assert f.ok is may_raise
    if not may_raise:
        assert f.found == str(hard) and f.blocking and "CAP_SYS_RESOURCE" in f.note


def test_advice_for_the_concurrency():
    findings = prereq.check(LocalHost(), Prerequisites(), concurrency=1_000_000)
    by_key = {f.key: f for f in findings}
    assert all(f.kind == "advice" and not f.required for f in findings)
    assert by_key["net.core.somaxconn"].ok is False and "drops connections" in by_key["net.core.somaxconn"].note
    ports = by_key["net.ipv4.ip_local_port_range"]
    low, high = map(int, _proc("net.ipv4.ip_local_port_range").split())
    assert ports.ok is False and f"{high - low + 1} ephemeral ports" in ports.note
    assert by_key["ulimit nofile (soft)"].ok is False
    assert "Too many open files" in by_key["ulimit nofile (soft)"].note
    assert all(f.ok for f in prereq.check(LocalHost(), Prerequisites(), concurrency=4))


@pytest.fixture
def netns():
    if shutil.which("ip") is None or os.geteuid() != 0:
        pytest.skip("needs root and iproute2 to create a network namespace")
    name = f"tb-test-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True, capture_output=True)
    try:
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], capture_output=True)


def test_apply_sets_a_sysctl_in_a_namespace_and_says_how_to_undo_it(netns):
    host = LocalHost(prefix=("ip", "netns", "exec", netns))
    outside = _proc("net.core.somaxconn")
    before, _ = prereq.read_sysctl(host, "net.core.somaxconn")
    want = str(int(before) * 2)
    wanted = Prerequisites(sysctl={"net.core.somaxconn": want, "net.ipv4.tcp_fin_timeout": "<=21"})
    applied = prereq.apply(host, wanted)
    assert applied.problems == []
    assert [(c.key, c.before, c.after) for c in applied.changes] == [
        ("net.core.somaxconn", before, want), ("net.ipv4.tcp_fin_timeout", "60", "21")]
    assert applied.changes[0].undo == f"sysctl -w net.core.somaxconn={before}"
    assert all(f.ok for f in prereq.check(host, wanted))
    assert _proc("net.core.somaxconn") == outside  # the host itself is untouched
    again = prereq.apply(host, wanted)
    assert again.changes == [] and len(again.unchanged) == 2
    subprocess.run(["ip", "netns", "exec", netns, "sh", "-c", applied.changes[0].undo], check=True)
    assert prereq.read_sysctl(host, "net.core.somaxconn")[0] == before


def test_apply_without_permission_or_for_a_missing_key_is_a_problem_not_a_crash(netns):
    nobody = LocalHost(prefix=("ip", "netns", "exec", netns, "setpriv", "--reuid=65534", "--regid=65534",
                               "--clear-groups"))
    applied = prereq.apply(nobody, Prerequisites(sysctl={"net.ipv4.tcp_fin_timeout": "22",
                                                          "net.ipv4.tcp_no_such_knob": "1"}))
    assert applied.changes == []
    assert any(p.startswith("net.ipv4.tcp_fin_timeout:") and ("needs root" in p or "sudo" in p)
               for p in applied.problems)
    assert any("no_such_knob: cannot set: no such key" in p for p in applied.problems)
    assert prereq.read_sysctl(nobody, "net.ipv4.tcp_fin_timeout")[0] == "60"


def test_the_prereq_command(tmp_path, capsys):
    somaxconn = _proc("net.core.somaxconn")
    path = tmp_path / "s.yaml"
    path.write_text(f"""\
name: p
target: {{server: nginx-static}}
matrix: {{tool: [ab], concurrency: [4]}}
prerequisites:
  sysctl: {{net.core.somaxconn: {somaxconn}, net.ipv4.tcp_tw_recycle: 1}}
""")
    assert main(["prereq", "check", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"local: ok: net.core.somaxconn: found {somaxconn} wanted {somaxconn}" in out
    assert "n/a: net.ipv4.tcp_tw_recycle" in out
    assert main(["prereq", "apply", str(path)]) == 0
    assert "unchanged: ok: net.core.somaxconn" in capsys.readouterr().out
    path.write_text(path.read_text().replace("tcp_tw_recycle: 1", "tcp_no_such_knob: 1"))
    assert main(["prereq", "check", str(path)]) == 1
    assert "1 required prerequisite(s) unmet" in capsys.readouterr().out


def test_prerequisites_marked_not_required_never_block(tmp_path):
    from toolbench.scenario import read as scenario

    path = tmp_path / "s.yaml"
    path.write_text("name: p\ntarget: {server: nginx-static}\nmatrix: {tool: [ab]}\n"
                    "prerequisites: {required: false, sysctl: {net.ipv4.tcp_no_such_knob: 1}}\n")
    loaded = scenario.load(path)
    assert loaded.prerequisites.required is False
    (f,) = prereq.check(LocalHost(), loaded.prerequisites)
    assert f.ok is False and not f.blocking and prereq.blocking([f]) == []
    assert prereq.describe(f).startswith("warning: net.ipv4.tcp_no_such_knob")


def test_apply_never_sets_a_setting_a_load_test_does_not_need(netns):
    # Defence in depth: a Prerequisites made without the scenario reader still cannot reach
    # beyond the allow-list. ip_forward is per namespace, so a failure here stays inside it.
    host = LocalHost(prefix=("ip", "netns", "exec", netns))
    before, _ = prereq.read_sysctl(host, "net.ipv4.ip_forward")
    wanted = "0" if before == "1" else "1"
    applied = prereq.apply(host, Prerequisites(sysctl={"net.ipv4.ip_forward": wanted,
                                                       "net.core.somaxconn": "1; reboot"}))
    assert applied.changes == []
    assert [p.split(":", 2)[:2] for p in applied.problems] == [["net.ipv4.ip_forward", " not set"],
                                                               ["net.core.somaxconn", " not set"]]
    assert prereq.read_sysctl(host, "net.ipv4.ip_forward")[0] == before
