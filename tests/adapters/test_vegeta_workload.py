"""vegeta with a workload (issue 32): its targets file, built from hostile values, and short real
runs against a logged nginx-static whose access log is counted per request line."""
from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from helpers.logged_nginx import logged_nginx, need_nginx
from helpers.workload_live import data_file, run, served, workload_cell
from toolbench.adapters import vegeta, vegeta_workload
from toolbench.contract.adapter import Found
from toolbench.contract.workload import Level, support_for
from toolbench.errors import AdapterError
from toolbench.scenario.workload import Stage, Workload, WorkloadRequest

ADAPTER = vegeta.ADAPTER
HOSTILE = 'a"b\\c\r\nX-Evil: 1\x00é ]]%q/../?&x=1'


def targets(cell) -> list[dict]:
    inv = ADAPTER.build(cell, Path("/nonexistent"), Found("/bin/vegeta", "12.13.0"))
    return [json.loads(line) for line in inv.files["targets.json"].splitlines()]


def test_a_mix_is_a_cycle_of_targets_in_the_weights_proportion_interleaved():
    wl = Workload("mix", (WorkloadRequest("a", path="/a", weight=1), WorkloadRequest("b", path="/b", weight=3)))
    urls = [t["url"] for t in targets(workload_cell("vegeta", wl))]
    assert urls.count("http://127.0.0.1:8080/b") == 3 * urls.count("http://127.0.0.1:8080/a") == 3
    assert urls[:2] != ["http://127.0.0.1:8080/b"] * 2 or urls[2] != urls[1]  # interleaved, not a run of b's
    odd = Workload("mix", (WorkloadRequest("a", weight=1), WorkloadRequest("b", weight=0.3183098861837907)))
    assert not ADAPTER.supports(workload_cell("vegeta", odd)).ok


def test_hostile_values_stay_data_in_the_targets_file(tmp_path: Path):
    data = data_file(tmp_path, [{"v": HOSTILE}])
    wl = Workload("sequence", (WorkloadRequest("post", method="POST", path="/p/${v}", query={"q": "${v}"},
                                               headers={"X-V": "${v}"}, body='{"v": "${v}"}'),), data=data)
    (t,) = targets(workload_cell("vegeta", wl))
    assert base64.b64decode(t["body"]).decode() == '{"v": "%s"}' % HOSTILE  # sent exactly, base64 in JSON
    assert t["header"]["X-V"] == ['a"b\\cX-Evil: 1é ]]%q/../?&x=1']  # no CR, LF or NUL: no header of its own
    path, _, query = t["url"].partition("?")
    assert path.count("/") == 4 and "%2F..%2F%3F%26x%3D1" in path and " " not in t["url"]  # one path segment
    assert query.startswith("q=a%22b%5Cc%0D%0AX-Evil") and "&x=1" not in query


def test_data_rows_fill_one_pass_each_and_at_end_stop_is_refused(tmp_path: Path):
    rows = [{"f": "1k.bin"}, {"f": "100k.bin"}]
    wl = Workload("sequence", (WorkloadRequest("one", path="/${f}"), WorkloadRequest("two", path="/")),
                  data=data_file(tmp_path, rows))
    urls = [t["url"].removeprefix("http://127.0.0.1:8080") for t in targets(workload_cell("vegeta", wl))]
    assert urls == ["/1k.bin", "/", "/100k.bin", "/"]
    stop = Workload("sequence", wl.requests, data=data_file(tmp_path, rows, at_end="stop"))
    assert "cannot stop" in ADAPTER.supports(workload_cell("vegeta", stop)).reason


def test_what_vegeta_cannot_express_is_declared_with_the_reason():
    wl = Workload("sequence", (WorkloadRequest("a"), WorkloadRequest("b")), stages=(Stage(2.0, rate_rps=10),))
    support = support_for(ADAPTER.workload_features, "vegeta", wl)
    assert support["stages"].level is Level.UNSUPPORTED and "-rate" in support["stages"].how
    assert support["sequence"].level is Level.APPROXIMATED and "not per user" in support["sequence"].how
    assert support["per_request"].level is Level.HONOURED


def test_too_many_literal_targets_are_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(vegeta_workload, "MAX_TARGETS", 3)
    wl = Workload("sequence", (WorkloadRequest("a"), WorkloadRequest("b")),
                  data=data_file(tmp_path, [{"x": "1"}, {"x": "2"}]))
    with pytest.raises(AdapterError, match="literal requests"):
        targets(workload_cell("vegeta", wl))


def test_a_real_mix_counts_per_name_what_the_target_served(tmp_path: Path):
    need_nginx()
    wl = Workload("mix", (WorkloadRequest("home", path="/", weight=1), WorkloadRequest("kb", path="/1k.bin", weight=2),
                          WorkloadRequest("gone", path="/nope", weight=1)))
    with logged_nginx(tmp_path / "nginx") as target:
        cell = workload_cell("vegeta", wl, target.base_url, rate_rps=200.0)
        (tmp_path / "cell").mkdir()
        before = served(target.lines())  # the readiness probe's
        m, _ = run(ADAPTER, cell, tmp_path / "cell")
        log = served(target.lines()) - before
    names = {f.name: f for f in m.by_request}
    assert set(names) == {"home", "kb", "gone"}
    assert sum(f.counts.requests_total for f in names.values()) == m.counts.requests_total > 100
    assert names["home"].counts.requests_total == log["GET / HTTP/1.1"]
    assert names["kb"].counts.requests_total == log["GET /1k.bin HTTP/1.1"]
    assert names["gone"].counts.requests_total == log["GET /nope HTTP/1.1"] == names["gone"].counts.requests_failed
    assert names["gone"].counts.failures.http_4xx == names["gone"].counts.requests_total
    assert names["kb"].counts.requests_failed == 0
    assert names["home"].counts.requests_ok == names["home"].counts.requests_total
    kb, home = names["kb"].counts.requests_total, names["home"].counts.requests_total
    assert abs(kb - 2 * home) <= 2  # a cycle of 4 targets: within one cycle of the weights
    assert names["kb"].latency.percentiles.p99_ms is not None and names["kb"].rates.rps


def test_real_data_rows_reach_the_target_and_two_names_on_one_url_leave_no_figures(tmp_path: Path):
    need_nginx()
    data = data_file(tmp_path, [{"f": "1k.bin", "term": "a b&c"}, {"f": "100k.bin", "term": "é/?"}])
    wl = Workload("sequence", (WorkloadRequest("file", path="/${f}", query={"q": "${term}"}),
                               WorkloadRequest("again", path="/${f}", query={"q": "${term}"})), data=data)
    with logged_nginx(tmp_path / "nginx") as target:
        (tmp_path / "cell").mkdir()
        before = served(target.lines())  # the readiness probe's
        m, _ = run(ADAPTER, workload_cell("vegeta", wl, target.base_url, rate_rps=100.0), tmp_path / "cell")
        log = served(target.lines()) - before
    assert set(log) == {"GET /1k.bin?q=a+b%26c HTTP/1.1", "GET /100k.bin?q=%C3%A9%2F%3F HTTP/1.1"}
    assert m.by_request == [] and any("two request names share" in n for n in m.notes)
    assert log.total() == m.counts.requests_total
