"""vegeta, bombardier, oha, JMeter, Locust and Gatling over TLS and HTTP/2: what each declares it
speaks and why not the rest, what build() asks of the tool per protocol (flags, generated plan,
locustfile parameters, simulation parameters), and their output recorded from the real tools over
https, h2 and h2c (tests/fixtures/<tool>/README.md, "Over TLS ...")."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from helpers.tool_cells import argv, cell, parsed
from toolbench.adapters.gatling import adapter as gatling
from toolbench.adapters.jmeter import adapter as jmeter
from toolbench.adapters.locust import adapter as locust
from toolbench.contract import registry
from toolbench.contract.adapter import Found
from toolbench.errors import AdapterError
from toolbench.scenario.read import StopSpec

TLS_URL, H2C_URL, CA = "https://127.0.0.1:8443/", "http://127.0.0.1:8444/", "/run/targets/nginx/tls/cert.pem"
URLS = {"http1": "http://127.0.0.1:8080/", "https": TLS_URL, "h2": TLS_URL, "h2c": H2C_URL}

SPEAKS = {
    "vegeta": {"http1", "https", "h2", "h2c"},
    "bombardier": {"http1", "https", "h2"},
    "oha": {"http1", "https", "h2", "h2c"},
    "jmeter": {"http1", "https"},
    "locust": {"http1", "https"},
    "gatling": {"http1", "https", "h2"},
}
REFUSED = {
    ("bombardier", "h2c"): "its --http2 client (Go's net/http) negotiates HTTP/2 by ALPN over TLS only",
    ("jmeter", "h2"): "HTTP/2 needs a plugin",
    ("jmeter", "h2c"): "HTTP/2 needs a plugin",
    ("locust", "h2"): "HttpUser) and geventhttpclient (FastHttpUser) have no HTTP/2",
    ("locust", "h2c"): "HttpUser) and geventhttpclient (FastHttpUser) have no HTTP/2",
    ("gatling", "h2c"): "no HTTP/2 in clear",
}


def at(tool: str, protocol: str, **kw):
    """A cell of `protocol` at its URL, with the target's certificate when over TLS, for 2 s."""
    return cell(tool, **_cell(protocol, kw))


def args(tool: str, protocol: str, **kw) -> list[str]:
    return argv(tool, **_cell(protocol, kw))


def _cell(protocol: str, kw: dict) -> dict:
    return {"protocol": protocol, "url": URLS[protocol], "ca_file": CA if protocol in ("https", "h2") else None,
            "stop": StopSpec(duration_s=2.0), **kw}


def files(tool: str, protocol: str, **kw) -> dict[str, str]:
    c = at(tool, protocol, **kw)
    adapter = registry.get(tool)
    assert adapter.supports(c).ok, adapter.supports(c).reason
    return adapter.build(c, Path("/nonexistent"), Found("/bin/" + tool, "1")).files


@pytest.mark.parametrize("tool", sorted(SPEAKS))
def test_each_tool_declares_what_it_speaks_and_says_why_not_the_rest(tool):
    adapter = registry.get(tool)
    assert set(adapter.protocols) == SPEAKS[tool]
    for protocol in ("http1", "https", "h2", "h2c"):
        support = adapter.protocol_support(protocol)
        assert support.ok == (protocol in SPEAKS[tool])
        if not support.ok:
            assert REFUSED[(tool, protocol)] in support.reason
    assert getattr(adapter, "TLS_TRUST", "")  # what the report may say of its trust


# ---- vegeta ----

def test_vegeta_is_told_the_protocol_and_trusts_the_targets_certificate():
    assert "-http2=false" in args("vegeta", "https")  # its -http2 is on by default: HTTP/1.1 must turn it off
    assert "-http2=true" in args("vegeta", "h2") and "-http2=false" not in args("vegeta", "h2")
    h2c = args("vegeta", "h2c")
    assert "-h2c" in h2c and "-root-certs" not in h2c
    for protocol in ("https", "h2"):
        built = args("vegeta", protocol)
        assert built[built.index("-root-certs") + 1] == CA
    plain = args("vegeta", "http1")
    assert not {"-h2c", "-http2=false", "-http2=true", "-root-certs"} & set(plain)
    assert json.loads(files("vegeta", "h2c")["targets.json"])["url"] == H2C_URL


def test_vegeta_without_a_certificate_of_toolbench_keeps_its_own_trust_and_refuses_a_list():
    built = argv("vegeta", protocol="https", url=TLS_URL, ca_file=None)
    assert "-root-certs" not in built
    c = cell("vegeta", protocol="https", url=TLS_URL, ca_file="/tmp/a,b/cert.pem")
    with pytest.raises(AdapterError, match="comma-separated"):
        registry.get("vegeta").build(c, Path("/nonexistent"), Found("/bin/vegeta", "1"))


def test_vegeta_h2c_without_keepalive_is_not_run_h2_is():
    adapter = registry.get("vegeta")
    assert "whatever -keepalive says" in adapter.supports(at("vegeta", "h2c", keepalive=False)).reason
    assert "-keepalive=false" in args("vegeta", "h2", keepalive=False)


@pytest.mark.parametrize("case", ["12.13.0-https", "12.13.0-h2", "12.13.0-h2c"])
def test_vegeta_reads_its_rows_and_report_over_tls_and_http2(case):
    m = parsed("vegeta", case)
    assert m.counts.requests_total == m.counts.requests_ok == 100
    assert m.latency.percentiles.p50_ms is not None and len(m.series) >= 1


# ---- bombardier ----

def test_bombardier_skips_the_check_over_tls_and_takes_net_http_for_h2():
    https = args("bombardier", "https")
    assert "--insecure" in https and "--http2" not in https
    h2 = args("bombardier", "h2")
    assert "--insecure" in h2 and "--http2" in h2
    assert "--insecure" not in args("bombardier", "http1")


def test_bombardier_keepalive_off_is_its_net_http_flag_over_h2_and_a_header_otherwise():
    h2 = args("bombardier", "h2", keepalive=False)
    assert "-a" in h2 and "Connection: close" not in h2  # HTTP/2 has no Connection header
    https = args("bombardier", "https", keepalive=False)
    assert "-a" not in https and "Connection: close" in https


@pytest.mark.parametrize("case", ["1.2.6-https", "1.2.6-h2", "1.2.6-text-h2"])
def test_bombardier_says_the_certificate_was_not_verified(case):
    m = parsed("bombardier", case)
    assert m.counts.requests_total == m.counts.requests_ok == 200
    assert m.url.startswith("https://")
    assert sum("certificate not verified" in note for note in m.notes) == 1


def test_bombardier_names_its_net_http_client_from_its_json():
    assert "client: Go's net/http with HTTP/2 (--http2)" in parsed("bombardier", "1.2.6-h2").notes
    assert not any(note.startswith("client:") for note in parsed("bombardier", "1.2.6-https").notes)
    assert not any("certificate" in note for note in parsed("bombardier", "1.2.6-ok").notes)


# ---- oha ----

def test_oha_is_told_http2_and_trusts_the_targets_certificate():
    https = args("oha", "https")
    assert "--http2" not in https and https[https.index("--cacert") + 1] == CA
    h2 = args("oha", "h2")
    assert "--http2" in h2 and h2[h2.index("--cacert") + 1] == CA
    h2c = args("oha", "h2c")
    assert "--http2" in h2c and "--cacert" not in h2c and h2c[-1] == H2C_URL
    assert "--http2" in args("oha", "http1", options={"h2": True})  # the option of before the protocol axis


def test_oha_refuses_http2_without_keepalive_and_its_h2_option_over_tls():
    adapter = registry.get("oha")
    for protocol in ("h2", "h2c"):
        assert "no keep-alive off" in adapter.supports(at("oha", protocol, keepalive=False)).reason
    assert "--disable-keepalive" in args("oha", "https", keepalive=False)
    assert "protocol axis" in adapter.supports(at("oha", "https", options={"h2": True})).reason


@pytest.mark.parametrize("case", ["1.16.0-https", "1.16.0-h2", "1.16.0-h2c", "1.16.0-text-h2"])
def test_oha_reads_its_json_and_text_over_tls_and_http2(case):
    m = parsed("oha", case)
    assert m.counts.requests_total == m.counts.requests_ok == 200
    assert m.latency.percentiles.p99_ms is not None
    if "text" not in case:  # the text's Total data is rounded
        assert m.transfer.received_bytes == 200 * 13


# ---- JMeter ----

def test_jmeter_plan_speaks_https_from_the_url():
    plan = files("jmeter", "https")["plan.jmx"]
    assert '<stringProp name="HTTPSampler.protocol">https</stringProp>' in plan
    assert '<stringProp name="HTTPSampler.port">8443</stringProp>' in plan
    assert '<stringProp name="HTTPSampler.implementation">HttpClient4</stringProp>' in plan


def test_jmeter_over_tls_says_the_certificate_was_not_verified():
    m = parsed("jmeter", "5.6.3-https")
    assert m.counts.requests_total == m.counts.requests_ok == 200
    assert m.notes.count(jmeter.TRUSTS_ALL) == 1
    assert jmeter.TRUSTS_ALL not in parsed("jmeter", "5.6.3-404").notes


# ---- Locust ----

@pytest.mark.parametrize("user_class", locust.USER_CLASSES)
def test_locust_is_given_the_targets_certificate_over_tls(user_class):
    params = json.loads(files("locust", "https", options={"user_class": user_class})[locust.PARAMS])
    assert params["ca_file"] == CA
    assert json.loads(files("locust", "http1")[locust.PARAMS])["ca_file"] is None
    built = args("locust", "https")
    assert built[built.index("--host") + 1] == "https://127.0.0.1:8443"


def test_locust_locustfile_turns_the_certificate_into_each_clients_trust():
    source = locust.locustfile()
    assert "insecure = False" in source and "create_default_context(cafile=CA_FILE)" in source  # FastHttpUser
    assert "self.client.verify = CA_FILE" in source  # HttpUser (requests)


def test_locust_engine_workers_are_not_run_over_tls():
    support = registry.get("locust").supports(at("locust", "https", options={"workers": "engine"}))
    assert not support.ok and "plain HTTP" in support.reason


@pytest.mark.parametrize("case", ["2.47.0-https", "2.47.0-httpuser-https"])
def test_locust_reads_its_output_over_tls(case):
    m = parsed("locust", case)
    assert m.counts.requests_total == m.counts.requests_ok > 0 and m.counts.requests_failed == 0


# ---- Gatling ----

def test_gatling_simulation_is_asked_for_http2_on_h2_cells_only():
    for protocol, http2 in (("http1", False), ("https", False), ("h2", True)):
        params = json.loads(files("gatling", protocol)[gatling.PARAMS])
        assert params["http2"] is http2 and params["url"] == URLS[protocol]
    source = gatling.simulation_source()
    assert 'p.path("http2").asBoolean(false)' in source and "enableHttp2()" in source


@pytest.mark.parametrize("case, http2", [("3.10.5-https", False), ("3.10.5-h2", True)])
def test_gatling_over_tls_says_what_its_simulation_said(case, http2):
    m = parsed("gatling", case)
    assert m.counts.requests_total == m.counts.requests_ok == 200
    assert m.notes.count(gatling.TRUSTS_ALL) == 1
    assert any(note.startswith("HTTP/2 enabled") for note in m.notes) == http2
    assert gatling.TRUSTS_ALL not in parsed("gatling", "3.10.5-closed").notes
