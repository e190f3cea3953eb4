"""vegeta, bombardier, oha, JMeter, Locust and Gatling through their adapters, for real, against
one nginx serving TLS (HTTP/1.1 or HTTP/2 by ALPN) and h2c: each protocol a tool declares is
spoken (nginx's log of each TLS connection's first request says which), every request succeeds,
and the tools that check certificates trust the target's own and no other. About 1 s at c4 a
cell; the JVM tools run one cell each, as they take seconds to start."""
from __future__ import annotations

import collections
import shutil
from pathlib import Path
from typing import Iterator

import pytest

from toolbench.contract import registry
from toolbench.contract.adapter import Found
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.hosts.local import LocalHost
from toolbench.record.schema import Measurement
from toolbench.run.execute import staged
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec
from toolbench.servers import tls
from toolbench.servers.nginx import nginx_static
from toolbench.servers.process import RunningTarget

# What nginx logs as $server_protocol of a TLS connection's first request.
SPOKEN = {"https": "HTTP/1.1", "h2": "HTTP/2.0"}


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTarget]:
    if shutil.which("nginx") is None and not Path("/usr/sbin/nginx").exists():
        pytest.skip("nginx is not installed (scripts/install.sh installs it)")
    with nginx_static(tmp_path_factory.mktemp("nginx-tls"), serve=frozenset({"http1", "https", "h2", "h2c"})) as t:
        yield t


def found(tool: str) -> Found:
    detected = registry.get(tool).detect(LocalHost())
    if not isinstance(detected, Found):
        pytest.skip(f"{tool}: {detected.reason}")
    return detected


def run(tool: str, protocol: str, target: RunningTarget, workdir: Path, ca_file: str | None = None,
        duration_s: float = 1.0, **options: object) -> tuple[Measurement, collections.Counter[str]]:
    """One cell through the adapter, as the runner runs it; what it measured, and the TLS
    connections it opened by (session reused, protocol spoken)."""
    adapter, tool_found = registry.get(tool), found(tool)
    cell = Cell(scenario="live", tool=tool, concurrency=4, keepalive=True, repetition=1, request=RequestSpec(),
                stop=StopSpec(duration_s=duration_s), timeout_s=120, protocol=protocol, options=dict(options))
    cell = cell.at(target.url_for(protocol), ca_file or (target.ca_file if cell.tls else None))
    assert adapter.protocol_support(protocol).ok and adapter.supports(cell).ok, adapter.supports(cell).reason
    log = Path(target.ca_file).parent / "handshakes.log"
    before = log.stat().st_size if log.exists() else 0
    host = LocalHost()

    def start(argv: list[str], env: dict[str, str], tool_dir: Path):
        return host.run(argv, cwd=tool_dir, stdout=workdir / "stdout.txt", stderr=workdir / "stderr.txt",
                        timeout_s=110, env=env), None

    completed, raw, _ = staged(adapter, tool_found, cell, workdir, host, start)
    assert completed.exit_code in adapter.ok_exit_codes, raw.stderr[-2000:]
    with open(log, "rb") as fh:  # nginx appends a line per TLS connection, from this cell on
        fh.seek(before)
        lines = fh.read().decode().splitlines()
    # `$connection $ssl_session_reused $ssl_protocol $ssl_cipher $server_protocol`
    return parse_checked(adapter, raw), collections.Counter((line.split()[1], line.split()[4]) for line in lines)


def spoke(m: Measurement, connections: collections.Counter[str], protocol: str) -> None:
    assert m.counts.requests_ok and m.counts.requests_failed == 0, (m.counts, m.notes)
    if protocol in SPOKEN:
        assert connections and {spoken for _, spoken in connections} == {SPOKEN[protocol]}, connections
    else:
        # In clear nothing is logged; nginx's h2c port speaks HTTP/2 alone (an HTTP/1.1 request
        # gets no answer it can read), so an answered request was HTTP/2.
        assert not connections


@pytest.mark.parametrize("tool, protocol", [
    ("vegeta", "https"), ("vegeta", "h2"), ("vegeta", "h2c"),
    ("bombardier", "https"), ("bombardier", "h2"),
    ("oha", "https"), ("oha", "h2"), ("oha", "h2c"),
    ("locust", "https"),
])
def test_each_protocol_a_tool_declares_is_spoken(tool, protocol, target, tmp_path):
    m, connections = run(tool, protocol, target, tmp_path)
    spoke(m, connections, protocol)
    trust_notes = [note for note in m.notes if "certificate not verified" in note]
    assert len(trust_notes) == (1 if tool == "bombardier" else 0)  # the others check it


def test_locust_httpuser_over_tls(target, tmp_path):
    m, connections = run("locust", "https", target, tmp_path, user_class="HttpUser")
    spoke(m, connections, "https")


@pytest.mark.parametrize("tool, protocol", [("jmeter", "https"), ("gatling", "h2")])
def test_a_jvm_tool_over_tls(tool, protocol, target, tmp_path):
    m, connections = run(tool, protocol, target, tmp_path)
    spoke(m, connections, protocol)
    assert sum("certificate not verified" in note for note in m.notes) == 1


@pytest.mark.parametrize("tool, options", [("vegeta", {}), ("oha", {}), ("locust", {}),
                                           ("locust", {"user_class": "HttpUser"})])
def test_a_tool_that_checks_certificates_trusts_the_targets_and_no_other(tool, options, target, tmp_path):
    other = tls.make(tmp_path / "other", "127.0.0.1")  # valid for the address, signed by no one the tool trusts
    work = tmp_path / "run"
    work.mkdir()
    # 3 s: on a busy machine Locust's users can take a second to start, and this needs an attempt
    m, _ = run(tool, "https", target, work, ca_file=str(other.cert), duration_s=3.0, **options)
    assert m.counts.requests_ok == 0 and m.counts.requests_failed > 0, (m.counts, m.notes)
