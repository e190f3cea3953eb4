"""Shared test fixtures: recorded tool output, a real nginx on loopback, a real sshd."""
from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from helpers import netns, sshd_server
from toolbench.contract.adapter import RawOutput
from toolbench.servers.nginx import nginx_static
from toolbench.servers.process import RunningTarget

FIXTURES = Path(__file__).parent / "fixtures"


def pytest_configure(config: pytest.Config) -> None:
    """The suite's runs share the machine with whatever else runs (CI, a busy loop, other
    suites): a scenario that does not give `disturbed:` is not judged for foreign work here
    (toolbench.scenario.method.DISTURBED_ENV). The tests about disturbance give the key."""
    os.environ["TOOLBENCH_DISTURBED"] = "off"


def pytest_itemcollected(item: pytest.Item) -> None:
    """Under `-n 2 --dist loadgroup` (./bootstrap.sh test) the integration tests are one group,
    run one after another on one worker, since they share the test net's fixed names, JMeter's
    pinned RMI ports and the machine they measure; so are the tests that change the machine's
    kernel settings (`machine_settings`: two at once undo each other's). The rest share out over
    the workers, beside them. The suite holds on a machine that busy (see the README's Tests).
    Marked as each test is collected, before any pytest_collection_modifyitems: xdist's reads
    the groups into the test ids there."""
    if item.get_closest_marker("integration") or item.get_closest_marker("machine_settings"):
        item.add_marker(pytest.mark.xdist_group("integration"))


REPO = Path(__file__).parent.parent


def recorded(tool: str, case: str, **files: str) -> RawOutput:
    """A recorded run: <case>.txt (stdout), <case>.stderr.txt, and output files by role
    (role=suffix, e.g. csv="csv" reads <case>.csv)."""
    folder = FIXTURES / tool
    stdout = folder / f"{case}.txt"
    stderr = folder / f"{case}.stderr.txt"
    return RawOutput(
        stdout=stdout.read_text() if stdout.exists() else "",
        stderr=stderr.read_text() if stderr.exists() else "",
        exit_code=0,
        files={role: folder / f"{case}.{suffix}" for role, suffix in files.items()},
        source=case,
    )


@pytest.fixture(scope="session")
def nginx(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTarget]:
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (scripts/install.sh installs it)")
    with nginx_static(tmp_path_factory.mktemp("nginx")) as target:
        yield target


def need(tool: str) -> None:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not on PATH (scripts/install.sh installs it)")


@pytest.fixture(scope="module")
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sshd_server.Sshd]:
    """A real sshd on 127.0.0.1 with keys of its own, one per test module (tests/helpers/sshd_server.py)."""
    yield from sshd_server.serve(tmp_path_factory)


@pytest.fixture(scope="session")
def testnet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[netns.TestNet]:
    """Four machines on one box (tests/helpers/netns.py): `ctl` where toolbench runs, `target`, and
    the generators `gen1` and `gen2`, each a network namespace with an sshd. Skips when
    namespaces cannot be made here (not root)."""
    yield from netns.testnet(tmp_path_factory.mktemp("testnet"), ("ctl", "target", "gen1", "gen2"))


@pytest.fixture(scope="session")
def nginx_there(testnet: netns.TestNet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """nginx in the `target` machine on port 8080, for every test that uses the machines; its
    access log, one line per request by client address (tests/helpers/netns.py)."""
    return testnet.start_nginx(tmp_path_factory.mktemp("nginx-netns"))
