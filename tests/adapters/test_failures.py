"""The one failure classifier (toolbench.record.failures) under each tool's table."""
from __future__ import annotations

import pytest

from toolbench.adapters import http_load, siege
from toolbench.adapters.jmeter import agg as jmeter_agg
from toolbench.adapters.locust import output as locust_output
from toolbench.engine import result as engine_result
from toolbench.engine.recorder import FAILURE_KINDS
from toolbench.record import failures

TABLES = {"locust": locust_output.FAILURE_TABLE, "jmeter": jmeter_agg.FAILURE_TABLE,
          "siege": siege.FAILURE_TABLE, "http_load": http_load.FAILURE_TABLE,
          "engine": engine_result.FAILURE_TABLE}

# Failed name lookups as the resolvers word them: glibc, macOS/BSD, Java, urllib3.
DNS_TEXTS = (
    "gaierror(-2, 'Name or service not known')",
    "gaierror(8, 'nodename nor servname provided, or not known')",
    "ConnectionError(MaxRetryError(\"HTTPConnectionPool(host='x.invalid', port=80): Max retries exceeded "
    "with url: / (Caused by NameResolutionError(\\\"Failed to resolve 'x.invalid' ([Errno -3] Temporary "
    "failure in name resolution)\\\"))\"))",
    "Non HTTP response code: java.net.UnknownHostException",
    "unable to resolve host x.invalid",
)


@pytest.mark.parametrize("tool", sorted(TABLES))
@pytest.mark.parametrize("text", DNS_TEXTS)
def test_a_failed_name_lookup_is_a_connect_failure_for_every_tool(tool: str, text: str) -> None:
    assert failures.classify(text, TABLES[tool]) == "connect"


@pytest.mark.parametrize("tool, text, expected", [
    ("locust", "ConnectionRefusedError(111, 'Connection refused')", "connect"),
    ("locust", "ConnectTimeout(...), 'Connection to 127.0.0.1 timed out'", "timeout"),
    ("locust", "RemoteDisconnected('Remote end closed connection without response')", "read"),
    ("locust", "CatchResponseError('wrong body')", "other"),
    # The order of the table decides: a connect timeout is a timeout.
    ("jmeter", "Non HTTP response code: org.apache.http.conn.ConnectTimeoutException", "timeout"),
    ("jmeter", "Non HTTP response code: org.apache.http.conn.HttpHostConnectException", "connect"),
    ("jmeter", "Non HTTP response code: org.apache.http.NoHttpResponseException", "read"),
    ("jmeter", "Non HTTP response code: java.lang.IllegalArgumentException", "other"),
    ("siege", "socket: unable to connect sock.c:282: Connection refused", "connect"),
    ("siege", "socket: read error Connection reset by peer sock.c:635: Connection reset by peer", "reset"),
    ("siege", "socket: read error Connection timed out sock.c:635: Connection timed out", "timeout"),
    ("http_load", "Connection refused", "connect"),
    ("http_load", "Connection reset by peer", "read"),
])
def test_each_tool_table_classifies_its_own_words(tool: str, text: str, expected: str) -> None:
    assert failures.classify(text, TABLES[tool]) == expected


def test_every_engine_failure_kind_has_its_class() -> None:
    classes = {kind: failures.classify(kind, engine_result.FAILURE_TABLE) for kind in FAILURE_KINDS}
    assert classes == {"connect_refused": "connect", "connect_other": "connect", "connect_timeout": "timeout", "tls": "connect",
                       "timeout": "timeout", "reset": "reset", "closed": "read", "malformed": "other"}


def test_tally_counts_occurrences_by_class_with_every_class_present() -> None:
    counts = failures.tally({"gaierror(-2, 'Name or service not known')": 3, "Connection reset": 2, "odd": 1},
                            siege.FAILURE_TABLE)
    assert counts == {"connect": 3, "timeout": 0, "read": 0, "reset": 2, "http_4xx": 0, "http_5xx": 0, "other": 1,
                      "check": 0}
    assert failures.tally(["refused", "refused"], siege.FAILURE_TABLE)["connect"] == 2


def test_every_table_names_only_schema_classes() -> None:
    for table in TABLES.values():
        assert {name for name, _ in table} <= set(failures.CLASSES)


def test_locust_error_report_keeps_http_status_apart_from_text_classes() -> None:
    classes, codes = locust_output.classify_errors({
        "GET /: HTTPError('404 Client Error: Not Found for url: /')": 4,
        "GET /: LocustBadStatusCode(code=503)": 2,
        "GET /: gaierror(8, 'nodename nor servname provided, or not known')": 5})
    assert codes == {404: 4, 503: 2}
    assert (classes.http_4xx, classes.http_5xx, classes.connect, classes.other) == (4, 2, 5, 0)
