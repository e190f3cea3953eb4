"""oha's command and its JSON result, over recorded real output (commands in
tests/fixtures/oha/README.md and CASES.tsv)."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import FIXTURES
from test_adapter_more_tools import URL, argv, cell, parsed
from toolbench import invariants, registry
from toolbench.adapter import Found, RawOutput
from toolbench.errors import ParseError
from toolbench.scenario import RequestSpec, StopSpec
from toolbench.schema import Fidelity, Measurement, Omission

V = "1.16.0"


def as_run(case: str, role: str) -> Measurement:
    """A recording read as the runner hands it over: the JSON file under the role build() gave it."""
    raw = RawOutput(stderr=(FIXTURES / "oha" / f"{V}-{case}.stderr.txt").read_text(),
                    files={role: FIXTURES / "oha" / f"{V}-{case}.json"}, source=case)
    return invariants.parse_checked(registry.get("oha"), raw)


# ---- the command ----

def test_closed_cell_runs_a_duration_or_a_count_with_the_json_to_a_file():
    args = argv("oha")
    assert args[:7] == ["/bin/oha", "--no-tui", "--output-format", "json", "-o", "oha.json", "--disable-compression"]
    assert args[args.index("-z") + 1] == "1500ms" and args[args.index("-c") + 1] == "4" and args[-1] == URL
    assert "-q" not in args and "--latency-correction" not in args and "--disable-keepalive" not in args
    assert argv("oha", stop=StopSpec(requests=100))[-3:-1] == ["-n", "100"]


def test_rate_cell_is_one_schedule_timed_from_when_each_request_was_due():
    adapter = registry.get("oha")
    inv = adapter.build(cell("oha", rate_rps=40.0), Path("/x"), Found("/bin/oha", V))
    assert inv.argv[inv.argv.index("-q") + 1] == "40.0" and "--latency-correction" in inv.argv
    assert inv.outputs == {"corrected": "oha.json"}
    plain = adapter.build(cell("oha", rate_rps=2.5, options={"latency_correction": False}), Path("/x"),
                          Found("/bin/oha", V))
    assert plain.argv[plain.argv.index("-q") + 1] == "2.5" and "--latency-correction" not in plain.argv
    assert plain.outputs == {"not_corrected": "oha.json"}
    closed = adapter.build(cell("oha"), Path("/x"), Found("/bin/oha", V))
    assert closed.outputs == {"not_corrected": "oha.json"}


def test_body_goes_through_a_file_and_headers_one_argument_each():
    hostile = "{\"a\": \"$(rm -rf /)\"}\n-H x"
    adapter = registry.get("oha")
    inv = adapter.build(cell("oha", keepalive=False, request=RequestSpec(method="POST", body=hostile,
                                                                         headers={"X-A": "b; -z 1s"})),
                        Path("/x"), Found("/bin/oha", V))
    assert inv.files == {"body": hostile} and hostile not in inv.argv
    args = inv.argv
    assert args[args.index("-D") + 1] == "body" and args[args.index("-m") + 1] == "POST"
    assert args[args.index("-T") + 1] == "application/octet-stream" and "--disable-keepalive" in args
    assert args[args.index("-H") + 1] == "X-A: b; -z 1s" and args.count("-z") == 1


def test_http2_is_a_cell_option_and_has_no_keepalive_off():
    adapter = registry.get("oha")
    assert "--http2" in argv("oha", options={"h2": True}) and "--http2" not in argv("oha")
    assert not adapter.supports(cell("oha", keepalive=False, options={"h2": True})).ok
    assert adapter.supports(cell("oha", rate_rps=0.5)).ok
