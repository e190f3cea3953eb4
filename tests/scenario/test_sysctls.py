"""`prerequisites.sysctl` names only what a load test needs, with plain values: anything else is
refused when the scenario is read, file:line: key: why, every bad key at once."""
import pytest

from helpers.cli import cli
from helpers.scenarios import write
from toolbench.errors import ScenarioErrors
from toolbench.scenario import read as scenario
from toolbench.scenario import sysctls

HEAD = "name: s\ntarget: {server: nginx-static}\nmatrix: {tool: [ab]}\nprerequisites:\n  sysctl:\n"


def test_the_settings_of_a_load_test_read(tmp_path):
    wanted = {"net.core.somaxconn": "4096", "net.ipv4.tcp_tw_reuse": "1", "net.core.rmem_max": ">=16777216",
              "net.ipv4.tcp_rmem": "4096 87380 16777216", "net.ipv4.ip_local_port_range": "1024 65535",
              "net.ipv4.tcp_congestion_control": "bbr", "fs.file-max": "<= 2000000", "fs.nr_open": "1048576",
              "net.netfilter.nf_conntrack_max": "262144", "net.core.netdev_max_backlog": "5000"}
    path = write(tmp_path, HEAD + "".join(f"    {k}: '{v}'\n" for k, v in wanted.items()))
    assert scenario.load(path).prerequisites.sysctl == wanted


@pytest.mark.parametrize("key", ["kernel.core_pattern", "kernel.modprobe", "vm.overcommit_memory",
                                 "net.ipv4.ip_forward", "net.ipv4.tcp_rmem.x", "fs.suid_dumpable",
                                 "net/core/../../kernel/core_pattern"])
def test_a_setting_beyond_a_load_test_is_refused_naming_its_line(tmp_path, key):
    path = write(tmp_path, HEAD + f"    net.core.somaxconn: 1024\n    {key}: 1\n")
    with pytest.raises(ScenarioErrors) as caught:
        scenario.load(path)
    assert str(caught.value) == (f"{path}:7: prerequisites.sysctl.{key}: not a setting a load test needs "
                                 f"(allowed: {', '.join(sysctls.ALLOWED)})")


@pytest.mark.parametrize("value", ["1; reboot", "$(id)", "1\n2", "`id`", "1 | sh", "a=b", "", "1 2 3 4 5 6 7 8 9"])
def test_a_value_that_is_not_plain_is_refused(tmp_path, value):
    path = write(tmp_path, HEAD + '    net.core.somaxconn: "' + value.replace("\n", "\\n") + '"\n')
    with pytest.raises(ScenarioErrors, match=r":6: prerequisites\.sysctl\.net\.core\.somaxconn: expected a plain value"):
        scenario.load(path)


def test_validate_reports_each_refused_setting_with_file_and_line(tmp_path):
    path = write(tmp_path, HEAD + "    kernel.core_pattern: '|/tmp/x'\n    net.core.somaxconn: 1024\n"
                                  "    kernel.sysrq: 1\n")
    done = cli("validate", str(path))
    assert done.returncode == 2
    assert [line.split(": not a setting a load test needs (allowed: ")[0] for line in done.stderr.splitlines()] == [
        f"toolbench: error: {path}:6: prerequisites.sysctl.kernel.core_pattern",
        f"toolbench: error: {path}:8: prerequisites.sysctl.kernel.sysrq"], done.stderr
