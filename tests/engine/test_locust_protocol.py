"""The engine's Locust stats against Locust's own StatsEntry (the installed Locust, in a
process of its own: importing Locust patches the process for gevent)."""
from __future__ import annotations

import json
import random
import subprocess
import sys
from array import array

import msgpack
import pytest

from toolbench.engine import locust_protocol as proto

# Run by Locust: log each time (ms) as a request, as its workers do, then read the engine's
# serialized entry as its master does (unserialize + extend).
LOCUST_SIDE = """
import json, sys
import msgpack
from locust.stats import RequestStats, StatsEntry
given = json.load(sys.stdin)
given["entry"] = msgpack.unpackb(bytes.fromhex(given["entry"]), raw=False, strict_map_key=False)
stats = RequestStats()
for ms in given["ms"]:
    stats.log_request("GET", "/", ms, 13)
own = stats.get("/", "GET")
theirs = StatsEntry.unserialize(given["entry"], stats)
merged = StatsEntry(stats, "/", "GET")
merged.extend(theirs)
print(json.dumps({"buckets": {str(k): v for k, v in own.response_times.items()},
                  "total": own.total_response_time, "min": own.min_response_time, "max": own.max_response_time,
                  "merged": [merged.num_requests, merged.get_response_time_percentile(0.99),
                             merged.median_response_time, merged.total_content_length]}))
"""


def latencies(seed: int) -> list[int]:
    rng = random.Random(seed)
    # Around every kind of bucket boundary (x.5 ms, x5 ms, x50 ms, x500 ms) and in between; not
    # on one to the ns, which Locust rounds to even (its float times hit one about once in 10^6).
    edges = [0.5, 1.5, 99.5, 100.0, 104.999, 105.0, 995.0, 999.5, 1050.0, 9950.0, 10500.0]
    values = [int(edge * 1e6) + d for edge in edges for d in (-1000, -1, 1, 999)]
    values += [int(rng.lognormvariate(0, 2) * 1e6) + 1 for _ in range(3000)]
    return values


@pytest.mark.parametrize("seed", [1, 2])
def test_buckets_and_sums_are_locusts_own(seed):
    ns = latencies(seed)
    entry = proto.Entry("/", "GET", start_time=1.0)
    entry.add_second(5, 6.0, array("q", ns), failures=0, content_length=13 * len(ns))
    # The entry as it goes on the wire (msgpack keeps the buckets' integer keys; JSON would not).
    given = {"ms": [v / 1e6 for v in ns], "entry": msgpack.packb(entry.serialize()).hex()}
    done = subprocess.run([sys.executable, "-c", LOCUST_SIDE], input=json.dumps(given), capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    locust = json.loads(done.stdout)
    ours = entry.serialize()
    assert {str(k): v for k, v in ours["response_times"].items()} == locust["buckets"]
    assert ours["total_response_time"] == pytest.approx(locust["total"], rel=1e-9)
    assert (ours["min_response_time"], ours["max_response_time"]) == pytest.approx((locust["min"], locust["max"]))
    count, p99, median, content = locust["merged"]  # the master's reading of the engine's entry
    assert count == len(ns) and content == 13 * len(ns)
    assert median > 0 and p99 >= median


def test_a_report_carries_the_entry_the_total_and_the_errors():
    report = proto.Report.empty("/nope", "GET", 10.0)
    report.entry.add_second(10, 10.5, array("q", [2_000_000, 3_000_000]), failures=2, content_length=0)
    report.error("LocustBadStatusCode(code=404)", 2, 10.5)
    message = report.message({"Anyone": 3})
    kind, data = proto.decode(proto.encode("stats", message, "node"))
    assert kind == "stats" and data["user_count"] == 3 and data["user_classes_count"] == {"Anyone": 3}
    (entry,) = data["stats"]
    assert (entry["num_requests"], entry["num_failures"], entry["num_fail_per_sec"]) == (2, 2, {10: 2})
    assert data["stats_total"]["name"] == "Aggregated" and data["stats_total"]["num_requests"] == 2
    (error,) = data["errors"].values()
    assert error["occurrences"] == 2 and error["error"] == "LocustBadStatusCode(code=404)"


def test_an_empty_report_sends_no_entry_but_a_total():
    data = proto.Report.empty("/", "GET", 1.0).message({})
    assert data["stats"] == [] and data["stats_total"]["num_requests"] == 0 and data["user_count"] == 0


@pytest.mark.parametrize("frame", [b"\xc1", msgpack.packb([1, 2]), msgpack.packb("spawn"), b""])
def test_what_is_not_a_locust_message_is_a_value_error(frame):
    with pytest.raises(ValueError, match="not a Locust message"):
        proto.decode(frame)


@pytest.mark.parametrize("argv, said", [
    (["http://127.0.0.1:1/"], "give -c/--connections and one of -d/--duration or -n/--requests"),
    (["http://127.0.0.1:1/", "-c", "5"], "give -c/--connections and one of"),
    (["http://127.0.0.1:1/", "--locust-master", "127.0.0.1:5557", "-c", "5", "-d", "1s"],
     "-c, -d: not with --locust-master"),
    (["http://127.0.0.1:1/", "-c", "5", "-d", "1s", "--user-throughput", "2"], "are for a Locust worker"),
    (["http://127.0.0.1:1/", "--locust-master", "127.0.0.1"], "--locust-master: expected HOST:PORT"),
    (["http://127.0.0.1:1/", "--locust-master", "127.0.0.1:70000"], "--locust-master: expected HOST:PORT"),
])
def test_engine_flags_that_cannot_work_are_a_usage_error(capsys, argv, said):
    from toolbench.engine.__main__ import main

    assert main(argv) == 2
    assert said in capsys.readouterr().err


@pytest.mark.parametrize("text, parsed", [("127.0.0.1:5557", ("127.0.0.1", 5557)), ("[::1]:1", ("::1", 1)),
                                          ("master.local:80", ("master.local", 80))])
def test_a_master_address(text, parsed):
    from toolbench.engine.locust_worker import parse_master

    assert parse_master(text) == parsed
