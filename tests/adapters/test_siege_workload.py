"""siege with a workload (issue 32): its URL file and arguments, and short real runs against a
logged nginx-static whose access log says what siege sent, in which order and mix."""
from __future__ import annotations

from pathlib import Path

from helpers.logged_nginx import logged_nginx, need_nginx
from helpers.workload_live import run, served, workload_cell
from toolbench.adapters import siege
from toolbench.contract.adapter import Found
from toolbench.contract.workload import Level, support_for
from toolbench.scenario.read import StopSpec
from toolbench.scenario.workload import Checks, ThinkTime, Workload, WorkloadRequest

ADAPTER = siege.ADAPTER
JSON = {"Content-Type": "application/json", "X-T": "1"}


def built(wl: Workload, **kw):
    return ADAPTER.build(workload_cell("siege", wl, **kw), Path("/nonexistent"), Found("/usr/bin/siege", "4.0.7"))


def test_the_url_file_holds_one_line_a_request_and_bodies_in_files_of_their_own():
    wl = Workload("sequence", (WorkloadRequest("get", path="/a", query={"q": "x y&$(HOME)"}, headers=JSON),
                               WorkloadRequest("post", method="POST", path="/b", body='{"a": "<b c"}', headers=JSON),
                               WorkloadRequest("del", method="DELETE", path="/c", headers=JSON)))
    inv = built(wl)
    assert inv.files["urls.txt"].splitlines() == ["http://127.0.0.1:8080/a?q=x+y%26%24%28HOME%29",
                                                  "http://127.0.0.1:8080/b POST <body-post",
                                                  "http://127.0.0.1:8080/c DELETE"]
    assert inv.files["body-post"] == '{"a": "<b c"}'
    argv = inv.argv
    assert argv[argv.index("--content-type") + 1] == "application/json" and "X-T: 1" in argv
    assert "-i" not in argv and "-b" in argv and argv[argv.index("-f") + 1] == "urls.txt"


def test_think_time_is_sieges_random_delay_outside_benchmark_mode_and_a_mix_is_random_lines():
    wl = Workload("mix", (WorkloadRequest("a", path="/a", weight=1), WorkloadRequest("b", path="/b", weight=2)),
                  think=ThinkTime(0.1, 0.3))
    inv = built(wl)
    assert "-b" not in inv.argv and inv.argv[inv.argv.index("-d") + 1] == "0.4" and "-i" in inv.argv
    assert "benchmark = false" in inv.files["siegerc"]
    assert sorted(inv.files["urls.txt"].splitlines()) == ["http://127.0.0.1:8080/a"] + ["http://127.0.0.1:8080/b"] * 2


def test_what_siege_cannot_send_as_given_is_refused_with_the_reason():
    differ = Workload("sequence", (WorkloadRequest("a", headers={"X": "1"}), WorkloadRequest("b", headers={"X": "2"})))
    assert "one set of headers" in ADAPTER.supports(workload_cell("siege", differ)).reason
    dollar = Workload("sequence", (WorkloadRequest("a", path="/$(HOME)"),))
    assert "$(NAME)" in ADAPTER.supports(workload_cell("siege", dollar)).reason
    padded = Workload("sequence", (WorkloadRequest("a", method="POST", body=" x "),))
    assert "trims" in ADAPTER.supports(workload_cell("siege", padded)).reason
    checked = Workload("sequence", (WorkloadRequest("a", checks=Checks(status=(200,))), WorkloadRequest("b")))
    support = support_for(ADAPTER.workload_features, "siege", checked)
    assert support["checks"].level is Level.UNSUPPORTED and support["per_request"].level is Level.UNSUPPORTED
    assert support["sequence"].level is Level.APPROXIMATED


def test_a_real_sequence_is_sent_in_order_and_a_real_mix_in_proportion(tmp_path: Path):
    need_nginx()
    seq = Workload("sequence", (WorkloadRequest("kb", path="/1k.bin"), WorkloadRequest("home", path="/"),
                                WorkloadRequest("gone", path="/nope")))
    mix = Workload("mix", (WorkloadRequest("home", path="/", weight=1),
                           WorkloadRequest("kb", path="/1k.bin", weight=3)))
    with logged_nginx(tmp_path / "nginx") as target:
        start = len(target.lines())
        (tmp_path / "seq").mkdir()
        m, _ = run(ADAPTER, workload_cell("siege", seq, target.base_url, concurrency=1,
                                          stop=StopSpec(requests_per_connection=6)), tmp_path / "seq")
        order = [line.split('"')[1] for line in target.lines()[start:]]
        before = served(target.lines())
        (tmp_path / "mix").mkdir()
        mixed, _ = run(ADAPTER, workload_cell("siege", mix, target.base_url, concurrency=2,
                                              stop=StopSpec(requests_per_connection=200)), tmp_path / "mix")
        log = served(target.lines()) - before
    assert order == ["GET /1k.bin HTTP/1.1", "GET / HTTP/1.1", "GET /nope HTTP/1.1"] * 2
    assert m.counts.requests_total == 6 and m.counts.requests_failed == 2  # the two 404s
    assert mixed.counts.requests_total == log.total() == 400
    assert 2.2 < log["GET /1k.bin HTTP/1.1"] / log["GET / HTTP/1.1"] < 4.0  # lines drawn at random, 3:1 in the file
