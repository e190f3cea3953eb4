"""ab, siege, wrk, httperf, hey and h2load run through their adapters against the bundled nginx
over TLS, HTTP/2 and h2c (issue 28): each protocol a tool declares, for about a second at c4.
What was spoken is checked on the server's side: nginx logs each TLS connection's first request
(`<workdir>/tls/handshakes.log`: connection, reused, TLS version, cipher, HTTP version)."""
from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Iterator

import pytest

from toolbench.adapters import ab, h2load, hey, httperf, siege, wrk
from toolbench.contract.adapter import Adapter, Found, RawOutput
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.hosts.local import LocalHost
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec
from toolbench.servers.nginx import nginx_static
from toolbench.servers.process import RunningTarget

# What nginx logs as the request's protocol: ab sends HTTP/1.0 requests, over TLS as in clear.
HTTP1 = {"ab": "HTTP/1.0"}
CASES = [(ab.ADAPTER, "https"), (siege.ADAPTER, "https"), (wrk.ADAPTER, "https"), (httperf.ADAPTER, "https"),
         (hey.ADAPTER, "https"), (hey.ADAPTER, "h2"),
         (h2load.ADAPTER, "https"), (h2load.ADAPTER, "h2"), (h2load.ADAPTER, "h2c")]


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningTarget]:
    with nginx_static(tmp_path_factory.mktemp("nginx-tls"), serve=frozenset({"http1", "https", "h2", "h2c"})) as t:
        yield t


def cell_for(adapter: Adapter, protocol: str, target: RunningTarget) -> Cell:
    rate = 200.0 if adapter is httperf.ADAPTER else None  # httperf runs open-model cells only, one request each
    # siege by a count: a timed siege run now and then never exits (siege.SiegeAdapter.retries_on_hang).
    stop = StopSpec(requests=200) if adapter is siege.ADAPTER else StopSpec(duration_s=1)
    c = Cell(scenario="live", tool=adapter.name, concurrency=4, keepalive=rate is None, repetition=1,
             request=RequestSpec(), stop=stop, timeout_s=60, rate_rps=rate, protocol=protocol)
    return c.at(target.url_for(protocol), str(target.ca_file) if c.tls else None)


def handshakes(target: RunningTarget) -> list[list[str]]:
    log = Path(target.ca_file).parent / "handshakes.log"
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize("adapter, protocol", CASES, ids=[f"{a.name}-{p}" for a, p in CASES])
def test_the_tool_speaks_the_protocol_its_cell_asks(adapter: Adapter, protocol: str, target: RunningTarget,
                                                    tmp_path: Path) -> None:
    found = adapter.detect(LocalHost())
    if not isinstance(found, Found):
        pytest.skip(found.reason)
    c = cell_for(adapter, protocol, target)
    assert adapter.protocol_support(protocol).ok and adapter.supports(c).ok
    before = len(handshakes(target))
    invocation = adapter.build(c, tmp_path, found)
    for name, contents in invocation.files.items():
        (tmp_path / name).write_text(contents)
    done = subprocess.run(invocation.argv, cwd=tmp_path, capture_output=True, text=True, timeout=60)
    files = {role: tmp_path / name for role, name in invocation.outputs.items() if (tmp_path / name).exists()}
    m = parse_checked(adapter, RawOutput(stdout=done.stdout, stderr=done.stderr, exit_code=done.returncode,
                                         files=files, source=str(tmp_path)))
    assert m.counts.requests_ok and m.counts.requests_ok > 0, (done.stdout[-2000:], done.stderr[-2000:])
    assert m.counts.requests_failed == 0
    new = handshakes(target)[before:]
    if protocol == "h2c":
        assert new == []  # in clear: no TLS connection at all
        assert "h2load spoke h2c in clear" in m.notes
        return
    assert new, "no TLS connection reached nginx"
    wanted = "HTTP/2.0" if protocol == "h2" else HTTP1.get(adapter.name, "HTTP/1.1")
    assert {fields[-1] for fields in new} == {wanted}
    assert {fields[2] for fields in new} <= {"TLSv1.2", "TLSv1.3"}
