"""Each generator's own figures in the tools' distributed modes, read from recorded real runs:
Locust's workers' own requests (adapters/locust/workers.py) and JMeter's controller JTL split
by server (adapters/jmeter/distributed.py). Every part is exact: the parts add up to what
the controller merged."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from toolbench.adapters.jmeter import adapter as jmeter
from toolbench.adapters.jmeter.distributed import split_by_server
from toolbench.adapters.locust import adapter as locust
from toolbench.adapters.locust import workers as locust_workers
from toolbench.contract.adapter import RawOutput
from toolbench.contract.checked import parse_checked
from toolbench.errors import ParseError
from toolbench.record.schema import Measurement

FIXTURES = Path(__file__).parents[1] / "fixtures"
LOCUST = FIXTURES / "locust"
JMETER_JTL = FIXTURES / "jmeter" / "5.6.3-distributed.jtl"


def _master(case: str) -> Measurement:
    stem = LOCUST / f"2.47.0-{case}"
    raw = RawOutput(stdout=Path(f"{stem}.txt").read_text(), stderr=Path(f"{stem}.stderr.txt").read_text(),
                    exit_code=0, files={}, source=str(stem))
    return parse_checked(locust.ADAPTER, raw)


def _generator(case: str, g: int) -> list[Path]:
    return sorted(LOCUST.glob(f"2.47.0-{case}.gen{g}.worker_stats.*.json"))


@pytest.mark.parametrize("case", ["distributed", "distributed-404"])
def test_locust_workers_own_requests_add_up_to_the_masters_merge(case: str) -> None:
    master = _master(case)
    parts = [locust_workers.read(_generator(case, g)) for g in (1, 2)]
    assert [len(_generator(case, g)) for g in (1, 2)] == [2, 1]  # two worker processes on gen1, one on gen2
    for field in ("requests_total", "requests_ok", "requests_failed"):
        assert sum(getattr(p.counts, field) for p in parts) == getattr(master.counts, field), field
    assert sum(p.transfer.received_bytes for p in parts) == master.transfer.received_bytes
    assert all(p.counts.requests_total and p.latency.percentiles.p99_ms is not None and p.rates.rps_ok is not None
               for p in parts if p.counts.requests_ok)
    assert all(p.timing.duration_s and p.latency.max_ms <= master.latency.max_ms for p in parts)


def test_locust_workers_failures_are_classed_from_their_own_error_rows() -> None:
    parts = [locust_workers.read(_generator("distributed-404", g)) for g in (1, 2)]
    for part in parts:
        assert part.counts.requests_failed == part.counts.requests_total > 0
        assert part.counts.failures.http_4xx == part.counts.requests_failed
        assert part.counts.status_codes == {404: part.counts.requests_failed}


def test_a_worker_file_missing_or_malformed_is_a_parse_error_never_a_zero(tmp_path: Path) -> None:
    (one,) = _generator("distributed", 2)
    with pytest.raises(ParseError, match="no worker stats"):
        locust_workers.read([one, tmp_path / "worker_stats.1.json"])
    doc = json.loads(one.read_text())
    for broken in ({"stats": doc["stats"]}, {**doc, "stats": {"/": 1}}, {**doc, "errors": [{"method": "GET"}]},
                   [doc]):
        bad = tmp_path / "worker_stats.0.json"
        bad.write_text(json.dumps(broken))
        with pytest.raises(ParseError):
            locust_workers.read([bad])
    doc["stats"][0]["num_requests"] = -1
    bad.write_text(json.dumps(doc))
    with pytest.raises(ParseError):
        locust_workers.read([bad])


def test_locust_worker_files_are_named_per_process() -> None:
    assert locust_workers.names(2) == ["worker_stats.0.json", "worker_stats.1.json"]


def _remotes() -> list[str]:
    command = JMETER_JTL.with_name("5.6.3-distributed.command.txt").read_text()
    return re.search(r" -R (\S+)", command).group(1).split(",")  # type: ignore[union-attr]


def _jtl(path: Path) -> Measurement:
    return parse_checked(jmeter.ADAPTER, RawOutput(stdout="", stderr="", exit_code=0,
                                                              files={"jtl": path}, source=str(path)))


def test_jmeter_controllers_jtl_split_by_server_adds_up_to_the_merge(tmp_path: Path) -> None:
    remotes = _remotes()
    into = [tmp_path / f"{n}.jtl" for n in range(len(remotes))]
    counts, hostnames = split_by_server(JMETER_JTL, remotes, into)
    rows = len(JMETER_JTL.read_text().splitlines()) - 1
    assert counts[""] == 0 and sum(counts[r] for r in remotes) == rows and all(counts[r] for r in remotes)
    assert all(hostnames[r] for r in remotes)  # the Hostname column asked for is there
    merged, parts = _jtl(JMETER_JTL), [_jtl(path) for path in into]
    assert [p.counts.requests_total for p in parts] == [counts[r] for r in remotes]
    for field in ("requests_total", "requests_ok", "requests_failed"):
        assert sum(getattr(p.counts, field) for p in parts) == getattr(merged.counts, field), field
    assert sum(p.transfer.received_bytes for p in parts) == merged.transfer.received_bytes


def test_a_sample_naming_no_server_is_counted_apart(tmp_path: Path) -> None:
    lines = JMETER_JTL.read_text().splitlines(keepends=True)
    remotes = _remotes()
    jtl = tmp_path / "results.jtl"
    named = next(r for r in remotes if f",{r}-" in lines[1])
    jtl.write_text(lines[0] + lines[1].replace(f",{named}-", ",elsewhere-") + "".join(lines[2:]))
    counts, _ = split_by_server(jtl, remotes, [tmp_path / "a.jtl", tmp_path / "b.jtl"])
    assert counts[""] == 1 and sum(counts.values()) == len(lines) - 1
