"""TLS and HTTP/2 in ab, siege, wrk, httperf, hey, h2load and http_load (issue 28): what each
declares it speaks and why not the rest, what its command asks of the protocol, and what its
parser reads of output recorded from the real tool against the bundled nginx over TLS, h2 and
h2c (commands in each fixtures folder's README.md and CASES.tsv)."""
from __future__ import annotations

from pathlib import Path

import pytest

from conftest import recorded
from helpers.scenarios import write
from toolbench.adapters import ab, h2load, hey, http_load, httperf, siege, wrk
from toolbench.contract.adapter import Found
from toolbench.contract.cell import Cell
from toolbench.contract.checked import parse_checked
from toolbench.run import plan
from toolbench.scenario import read as scenario
from toolbench.scenario.read import StopSpec
from toolbench.scenario.request import RequestSpec

ALL = ("http1", "https", "h2", "h2c")
SPEAKS = {
    ab.ADAPTER: {"http1", "https"},
    siege.ADAPTER: {"http1", "https"},
    wrk.ADAPTER: {"http1", "https"},
    httperf.ADAPTER: {"http1", "https"},
    http_load.ADAPTER: {"http1", "https"},
    hey.ADAPTER: {"http1", "https", "h2"},
    h2load.ADAPTER: set(ALL),
}
# What the reason for each refused protocol says: the tool's own limit, never a generic line.
REFUSAL_WORDS = {
    "ab": ("HTTP/1.0", "no HTTP/2"), "siege": ("HTTP/1.1", "no HTTP/2"), "wrk": ("HTTP/1.1", "no HTTP/2"),
    "httperf": ("--ssl", "no HTTP/2"), "http_load": ("HTTP/1.x", "no HTTP/2"), "hey": ("-h2", "over TLS only"),
}
TLS_URL = "https://127.0.0.1:8443/"
CA = "/run/tb/tls/cert.pem"


def cell(tool: str, protocol: str = "http1", **changes) -> Cell:
    url = {"h2c": "http://127.0.0.1:8081/", "http1": "http://127.0.0.1:8080/"}.get(protocol, TLS_URL)
    base = dict(scenario="s", tool=tool, concurrency=4, keepalive=True, repetition=1, request=RequestSpec(),
                stop=StopSpec(duration_s=1), timeout_s=40, url=url, protocol=protocol,
                ca_file=CA if protocol in ("https", "h2") else None)
    base.update(changes)
    return Cell(**base)


def argv(adapter, c: Cell) -> list[str]:
    support = adapter.supports(c)
    assert support.ok, support.reason
    return adapter.build(c, Path("/nonexistent"), Found(f"/usr/bin/{adapter.name}", "1")).argv


# ---- what each declares ----

@pytest.mark.parametrize("adapter", list(SPEAKS), ids=lambda a: a.name)
def test_each_tool_declares_what_it_speaks_and_why_not_the_rest(adapter) -> None:
    assert set(adapter.protocols) == SPEAKS[adapter]
    for protocol in ALL:
        support = adapter.protocol_support(protocol)
        assert support.ok is (protocol in SPEAKS[adapter])
        if not support.ok:
            assert protocol in adapter.protocol_refusals  # its own reason, not the generic one
            assert all(word in support.reason for word in REFUSAL_WORDS[adapter.name]), support.reason


@pytest.mark.parametrize("adapter", list(SPEAKS), ids=lambda a: a.name)
def test_each_tool_says_how_it_trusts_the_certificate_and_none_is_handed_a_file_it_cannot_take(adapter) -> None:
    # None of these tools can be told a CA file: each says so, and no command names the certificate.
    assert "never checks the server's certificate" in adapter.TLS_TRUST
    c = cell(adapter.name, "https", rate_rps=100.0 if adapter is httperf.ADAPTER else None,
             keepalive=adapter not in (httperf.ADAPTER, http_load.ADAPTER),
             stop=StopSpec(requests=40) if adapter is http_load.ADAPTER else StopSpec(duration_s=1))
    built = adapter.build(c, Path("/nonexistent"), Found(f"/usr/bin/{adapter.name}", "1"))
    assert not any(CA in arg for arg in built.argv) and not any(CA in text for text in built.files.values())


MATRIX = """\
name: p
target: {{server: nginx-static}}
matrix: {{tool: [{tools}], protocol: [http1, https, h2, h2c], keepalive: [true, false]{rate}}}
stop: {{duration: 1s}}
"""


def planned(tmp_path: Path, tools: str, rate: str = "") -> dict[str, plan.Support]:
    cells = plan.expand(scenario.load(write(tmp_path, MATRIX.format(tools=tools, rate=rate))))
    return {p.cell.id: p.support for p in cells}


def test_the_plan_runs_each_protocol_a_tool_speaks_and_refuses_the_rest_with_its_reason(tmp_path: Path) -> None:
    cells = planned(tmp_path, "ab, siege, wrk, hey, h2load")
    runs = {cid for cid, support in cells.items() if support.ok}
    assert runs == {
        "ab-c10-ka-rep1", "ab-c10-ka-https-rep1", "ab-c10-close-rep1", "ab-c10-close-https-rep1",
        "siege-c10-ka-rep1", "siege-c10-ka-https-rep1", "siege-c10-close-rep1", "siege-c10-close-https-rep1",
        "wrk-c10-ka-rep1", "wrk-c10-ka-https-rep1", "wrk-c10-close-rep1", "wrk-c10-close-https-rep1",
        "hey-c10-ka-rep1", "hey-c10-ka-https-rep1", "hey-c10-ka-h2-rep1",
        "hey-c10-close-rep1", "hey-c10-close-https-rep1",
        "h2load-c10-ka-rep1", "h2load-c10-ka-https-rep1", "h2load-c10-ka-h2-rep1", "h2load-c10-ka-h2c-rep1"}
    assert cells["ab-c10-ka-h2-rep1"].reason == ab.ADAPTER.protocol_refusals["h2"]
    assert cells["wrk-c10-close-h2c-rep1"].reason == wrk.ADAPTER.protocol_refusals["h2c"]
    assert cells["hey-c10-ka-h2c-rep1"].reason == hey.ADAPTER.protocol_refusals["h2c"]
    assert "several requests on each HTTP/2 connection" in cells["hey-c10-close-h2-rep1"].reason
    for protocol in ("h2", "h2c"):
        assert "HTTP/2 has no keep-alive off" in cells[f"h2load-c10-close-{protocol}-rep1"].reason
    # A timed HTTP/1.1 run that closes each connection never ends in h2load, over TLS as in clear.
    assert "never exits after a timed run" in cells["h2load-c10-close-https-rep1"].reason


def test_the_plan_runs_httperf_over_tls_at_a_rate_and_never_over_http2(tmp_path: Path) -> None:
    cells = planned(tmp_path, "httperf", rate=", rate: [100]")
    assert {cid for cid, support in cells.items() if support.ok} == {"httperf-c10-close-rate100-rep1",
                                                                     "httperf-c10-close-https-rate100-rep1"}
    assert cells["httperf-c10-close-h2-rate100-rep1"].reason == httperf.ADAPTER.protocol_refusals["h2"]


# ---- what each command asks of the protocol ----

@pytest.mark.parametrize("adapter", [ab.ADAPTER, siege.ADAPTER, wrk.ADAPTER], ids=lambda a: a.name)
def test_https_is_the_url_alone_for_the_tools_that_take_tls_from_the_scheme(adapter) -> None:
    plain, tls = argv(adapter, cell(adapter.name)), argv(adapter, cell(adapter.name, "https"))
    assert tls[-1] == TLS_URL and tls[:-1] == plain[:-1]


def test_httperf_over_tls_says_ssl_and_the_tls_port() -> None:
    args = argv(httperf.ADAPTER, cell("httperf", "https", keepalive=False, rate_rps=100.0))
    assert "--ssl" in args and args[args.index("--port") + 1] == "8443"
    assert "--ssl" not in argv(httperf.ADAPTER, cell("httperf", keepalive=False, rate_rps=100.0))


def test_http_load_over_tls_is_the_https_url_in_its_url_file() -> None:
    c = cell("http_load", "https", keepalive=False, stop=StopSpec(requests=40))
    assert http_load.ADAPTER.build(c, Path("/nonexistent"), Found("/usr/bin/http_load", "1")).files == {
        http_load.URL_FILE: TLS_URL + "\n"}


def test_hey_asks_for_http2_only_in_an_h2_cell() -> None:
    assert "-h2" in argv(hey.ADAPTER, cell("hey", "h2"))
    assert "-h2" not in argv(hey.ADAPTER, cell("hey", "https")) and "-h2" not in argv(hey.ADAPTER, cell("hey"))
    assert argv(hey.ADAPTER, cell("hey", "https", keepalive=False))[-2] == "-disable-keepalive"


@pytest.mark.parametrize("protocol, wanted, unwanted", [
    ("http1", ["--h1"], ["--npn-list"]),
    ("https", ["--h1"], ["--npn-list"]),
    ("h2", ["--npn-list", "h2"], ["--h1"]),  # h2 alone offered: no quiet fall back to HTTP/1.1
    ("h2c", [], ["--h1", "--npn-list"]),  # an http:// URL without --h1 is HTTP/2 with prior knowledge
])
def test_h2load_flags_per_protocol(protocol: str, wanted: list[str], unwanted: list[str]) -> None:
    args = argv(h2load.ADAPTER, cell("h2load", protocol))
    if wanted:
        at = args.index(wanted[0])
        assert args[at:at + len(wanted)] == wanted
    assert not set(unwanted) & set(args)


def test_h2load_h2_option_is_h2c_on_an_http1_cell_and_refused_on_an_https_one() -> None:
    assert "--h1" not in argv(h2load.ADAPTER, cell("h2load", options={"h2": True}))
    refused = h2load.ADAPTER.supports(cell("h2load", "https", options={"h2": True}))
    assert not refused.ok and "protocol axis" in refused.reason
    # HTTP/1.1 over TLS without keep-alive, for a count: Connection: close, a handshake per request.
    args = argv(h2load.ADAPTER, cell("h2load", "https", keepalive=False, stop=StopSpec(requests=100)))
    assert "--h1" in args and args[args.index("-H") + 1] == "Connection: close"


# ---- what each parser reads of the real tool over TLS and HTTP/2 ----

def test_ab_over_tls_reads_its_figures_and_notes_the_tls_it_spoke() -> None:
    m = parse_checked(ab.ADAPTER, recorded("ab", "2.3-https", csv="csv", tsv="tsv"))
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.requests_failed) == (2000, 2000, 0)
    assert m.url == "https://127.0.0.1:52847/" and m.latency.percentiles.p99_ms is not None
    assert ("ab spoke HTTP/1.0 over TLSv1.3 (TLS_AES_256_GCM_SHA384, 256-bit; server temp key X25519 253 bits); "
            "it does not check the server's certificate") in m.notes


def test_ab_over_tls_without_keepalive_and_over_tls_1_2() -> None:
    close = parse_checked(ab.ADAPTER, recorded("ab", "2.3-https-close"))
    assert close.counts.requests_ok == 500 and close.counts.requests_failed == 0
    assert any(n.startswith("ab spoke HTTP/1.0 over TLSv1.3 (") for n in close.notes)
    tls12 = parse_checked(ab.ADAPTER, recorded("ab", "2.3-https-tls12"))
    assert tls12.counts.requests_ok == 200
    assert any("over TLSv1.2 (ECDHE-ECDSA-AES256-GCM-SHA384, 256-bit;" in n for n in tls12.notes)
    plain = parse_checked(ab.ADAPTER, recorded("ab", "2.3-keepalive", csv="csv"))
    assert plain.url.startswith("http://") and not any("TLS" in n for n in plain.notes)


def test_siege_over_tls_reads_as_in_clear() -> None:
    m = parse_checked(siege.ADAPTER, recorded("siege", "4.0.7-https"))
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.requests_failed) == (200, 200, 0)


def test_wrk_over_tls_reads_its_text_and_done_json() -> None:
    m = parse_checked(wrk.ADAPTER, recorded("wrk", "4.1.0-https", json="json"))
    assert m.url == "https://127.0.0.1:52847/" and m.concurrency == 4
    assert m.counts.requests_ok and m.counts.requests_ok > 0 and m.counts.requests_failed == 0


def test_httperf_over_tls_reads_as_in_clear() -> None:
    m = parse_checked(httperf.ADAPTER, recorded("httperf", "0.9.0-https"))
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.requests_failed) == (200, 200, 0)


@pytest.mark.parametrize("case", ["0.1.4-https", "0.1.4-h2"])
def test_hey_over_tls_and_http2_reads_as_in_clear(case: str) -> None:
    m = parse_checked(hey.ADAPTER, recorded("hey", case))
    assert m.counts.requests_ok and m.counts.requests_ok == m.counts.status_codes[200]
    assert m.counts.requests_failed == 0


@pytest.mark.parametrize("case, note", [
    ("1.52.0-https", "h2load negotiated http/1.1 over TLSv1.3 (TLS_AES_128_GCM_SHA256, server temp key X25519 "
                     "253 bits); it does not check the server's certificate"),
    ("1.52.0-h2", "h2load negotiated h2 over TLSv1.3 (TLS_AES_128_GCM_SHA256, server temp key X25519 253 bits); "
                  "it does not check the server's certificate"),
    ("1.52.0-h2c", "h2load spoke h2c in clear"),
    ("1.52.0-ok", "h2load spoke http/1.1 in clear"),
])
def test_h2load_reads_its_figures_and_notes_what_it_negotiated(case: str, note: str) -> None:
    m = parse_checked(h2load.ADAPTER, recorded("h2load", case))
    assert m.counts.requests_ok and m.counts.requests_ok == m.counts.requests_total
    assert m.counts.requests_failed == 0 and m.latency.mean_ms is not None and m.concurrency == 4
    assert note in m.notes


def test_h2load_that_agreed_on_no_protocol_sent_nothing_and_says_so() -> None:
    m = parse_checked(h2load.ADAPTER, recorded("h2load", "1.52.0-h2-noalpn"))
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.requests_failed) == (4, 0, 4)
    assert any(n.startswith("h2load agreed on none of the protocols it offered (h2) with the server, over TLSv1.3 "
                            "(TLS_AES_128_GCM_SHA256") for n in m.notes)
