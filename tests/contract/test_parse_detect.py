"""`toolbench parse` without --tool: each run's tool is told from its files, over recorded
output of every tool, and the result is the one --tool gives."""
import warnings

import pytest

from conftest import FIXTURES
from toolbench.cli.commands import results_of
from toolbench.contract import registry
from toolbench.contract.runs_found import runs
from toolbench.errors import Notice, ToolbenchError

RUNS = {  # one run's files per tool, as a user would point at them
    "ab": ["ab/2.3-nokeepalive.txt", "ab/2.3-nokeepalive.csv", "ab/2.3-nokeepalive.tsv",
           "ab/2.3-nokeepalive.stderr.txt"],
    "siege": ["siege/4.0.7-time.txt", "siege/4.0.7-time.stderr.txt"],
    "siege-json": ["siege/4.0.7-benchmark-j.txt"],
    "siege-log": ["siege/4.0.7-log.csv", "siege/4.0.7-log.txt", "siege/4.0.7-log.stderr.txt"],
    "http_load": ["http_load/27jun2014-p10_fetches.txt", "http_load/27jun2014-p10_fetches.stderr.txt"],
    "jmeter": ["jmeter/5.6.3-csv.jtl", "jmeter/5.6.3-csv.jmx", "jmeter/5.6.3-csv.txt"],
    "jmeter-xml": ["jmeter/5.6.3-xml.jtl"],
    "jmeter-noheader": ["jmeter/5.6.3-csv-noheader.jtl"],
    "locust": ["locust/2.47.0-single.txt", "locust/2.47.0-single_stats.csv",
               "locust/2.47.0-single_stats_history.csv", "locust/2.47.0-single_failures.csv",
               "locust/2.47.0-single_exceptions.csv", "locust/2.47.0-single.stderr.txt"],
    "engine": ["engine/0.1.0-keepalive.json", "engine/0.1.0-keepalive.txt"],
    "wrk": ["wrk/4.1.0-ok.txt", "wrk/4.1.0-ok.json", "wrk/4.1.0-ok.stderr.txt"],
    "wrk-json": ["wrk/4.1.0-close.json"],
    "hey": ["hey/0.1.4-ok.txt", "hey/0.1.4-ok.stderr.txt"],
    "hey-csv": ["hey/0.1.4-ok-csv.txt"],
    "h2load": ["h2load/1.52.0-ok.txt", "h2load/1.52.0-ok.stderr.txt"],
    "httperf": ["httperf/0.9.0-ok.txt", "httperf/0.9.0-ok.stderr.txt"],
    "bombardier": ["bombardier/1.2.6-ok.txt", "bombardier/1.2.6-ok.stderr.txt"],
    "oha": ["oha/1.16.0-ok.json", "oha/1.16.0-ok.stderr.txt"],
    # (its rows, vegeta/12.13.0-ok.csv, read as a headerless JTL too: with them, --tool is asked for)
    "vegeta": ["vegeta/12.13.0-ok.json", "vegeta/12.13.0-ok.gob", "vegeta/12.13.0-ok.txt", "vegeta/12.13.0-ok.stderr.txt"],
    "gatling": ["gatling/3.10.5-ok.log", "gatling/3.10.5-ok.txt", "gatling/3.10.5-ok.stderr.txt"],
}


def _read(paths, tool=None):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always", Notice)
        found = runs(paths, registry.adapters(), registry.get(tool) if tool else None)
    return found, [str(w.message) for w in seen]


@pytest.mark.parametrize("case", sorted(RUNS))
def test_the_tool_is_told_from_the_files_and_said(case):
    tool = case.split("-")[0]
    paths = [FIXTURES / name for name in RUNS[case]]
    found, notes = _read(paths)
    assert [(run.adapter.name, sorted(run.paths)) for run in found] == [(tool, sorted(paths))]
    assert notes == [f"{found[0].name}: read as {tool} output"]
    named = _read(paths, tool)[0]
    assert [r.to_dict() for r in results_of(found[0].adapter, found[0].name, found[0].paths)] == \
        [r.to_dict() for r in results_of(named[0].adapter, named[0].name, named[0].paths)]


def test_runs_of_several_tools_in_one_call_keep_their_order():
    paths = [FIXTURES / RUNS[case][0] for case in ("locust", "ab", "jmeter", "siege-json")]
    found, notes = _read(paths)
    assert [run.adapter.name for run in found] == ["locust", "ab", "jmeter", "siege"]
    assert len(notes) == 4


def test_a_file_no_tool_wrote_is_a_one_line_error(tmp_path):
    stray = tmp_path / "notes.txt"
    stray.write_text("nothing a load tool printed\n")
    with pytest.raises(ToolbenchError, match=r"notes.txt: not the output of any known tool .*--tool"):
        _read([FIXTURES / RUNS["ab"][0], stray])


def test_a_binary_file_no_tool_wrote_is_said_to_be_binary(tmp_path):
    stray = tmp_path / "results.bin"
    stray.write_bytes(b"\x00\x01\x02binary\xff" * 10)
    with pytest.raises(ToolbenchError, match=r"^[^\n]*results.bin: a binary file, not the text or JSON output of any"):
        _read([stray])


def test_a_gzipped_k6_output_is_named_with_what_to_do(tmp_path):
    import gzip

    packed = tmp_path / "k6.csv.gz"
    packed.write_bytes(gzip.compress((FIXTURES / "k6" / "recent-out-csv-head.csv").read_bytes()))
    with pytest.raises(ToolbenchError, match=r"k6.csv.gz: a gzip-compressed file \(k6's --out csv=FILE.gz .*gunzip it"):
        _read([packed])


def test_the_command_says_which_tool_each_run_was_read_as():
    from helpers.cli import cli

    done = cli("parse", str(FIXTURES / "ab" / "2.3-nokeepalive.txt"), str(FIXTURES / "siege" / "4.0.7-benchmark-j.txt"))
    assert done.returncode == 0, done.stderr
    assert "2.3-nokeepalive: read as ab output" in done.stderr
    assert "4.0.7-benchmark-j: read as siege output" in done.stderr
