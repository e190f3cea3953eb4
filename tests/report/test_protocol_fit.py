"""Which tools fit an HTTPS and an HTTP/2 service, from a run's stored cells: the tools that ran
ok in each protocol, and the protocol's own reasons for the others (never a reason the tool gave
in plain HTTP/1.1 too, which is about something else)."""
from __future__ import annotations

from toolbench.record.schema import Identity, Outcome, RunResult, Status
from toolbench.report import protocol_fit


def cell(tool: str, protocol: str, status: Status, why: str | None = None) -> RunResult:
    return RunResult(Identity(scenario="s", cell_id=f"{tool}-{protocol}", tool=tool, protocol=protocol),
                     Outcome(status, error=why))


RESULTS = [
    cell("ab", "http1", Status.OK), cell("ab", "https", Status.OK),
    cell("ab", "h2", Status.UNSUPPORTED, "ab speaks HTTP/1.0: no HTTP/2"),
    cell("h2load", "http1", Status.OK), cell("h2load", "https", Status.OK), cell("h2load", "h2", Status.OK),
    cell("httperf", "http1", Status.UNSUPPORTED, "httperf has no closed model"),
    cell("httperf", "https", Status.UNSUPPORTED, "httperf has no closed model"),
    cell("httperf", "h2", Status.UNSUPPORTED, "httperf speaks HTTP/1.1: no HTTP/2"),
    cell("wrk", "http1", Status.OK), cell("wrk", "https", Status.FAILED, "wrk: exit 1"),
]


def test_each_protocol_beyond_plain_http_says_who_ran_who_failed_and_why_the_others_could_not() -> None:
    https, h2 = protocol_fit.fits(RESULTS)
    assert (https.protocol, https.ran, https.failed, https.cannot) == ("https", ("ab", "h2load"), ("wrk",), {})
    assert (h2.ran, h2.cannot) == (("h2load",), {"ab": "ab speaks HTTP/1.0: no HTTP/2",
                                                   "httperf": "httperf speaks HTTP/1.1: no HTTP/2"})


def test_the_sentence_names_the_service_and_gives_each_reason_once() -> None:
    said = protocol_fit.paragraph(RESULTS)
    assert said.startswith("For an HTTPS service (HTTP/1.1 over TLS): ab and h2load (wrk ran but failed).")
    assert "For an HTTP/2 service (over TLS): h2load; not the others: ab speaks HTTP/1.0: no HTTP/2; " in said
    assert "closed model" not in said


def test_a_run_in_plain_http_only_says_nothing() -> None:
    assert protocol_fit.paragraph([r for r in RESULTS if r.identity.protocol == "http1"]) == ""
