"""Tool output that once crashed a parser, the process or the machine's memory, rebuilt by
mutating a real recorded output in a temporary folder: each is now a one-line ParseError
naming the field (or, where the output is valid, a correct Measurement)."""
from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import pytest

from conftest import FIXTURES
from toolbench.contract import registry
from toolbench.contract.adapter import RawOutput, raw_from_files
from toolbench.contract.checked import parse_checked
from toolbench.errors import ParseError, ParserCrash, SchemaError
from toolbench.record import histogram, invariants
from toolbench.record.schema import Latency, Measurement, Percentiles

NOT_OUTPUT = (".md", ".py", ".jmx", ".rc")


def mutated(tmp_path: Path, tool: str, case: str, edits: dict[str, tuple[bytes, bytes]]) -> Measurement:
    """Copies the recorded files of `case` (all but the inputs beside them), applies each
    edit (what follows the case in the file's name -> (old, new), `old` must be there), and parses the copy as
    `toolbench parse` does."""
    adapter = registry.get(tool)
    paths = []
    for source in sorted((FIXTURES / tool).glob(f"{case}*")):
        if source.suffix in NOT_OUTPUT or adapter.group_name(source) != str(source.parent / case):
            continue
        data = source.read_bytes()
        for ending, (old, new) in edits.items():
            if source.name[len(case):] == ending:
                assert old in data, f"{old!r} is not in {source.name}: the mutation would test nothing"
                data = data.replace(old, new, 1)
        target = tmp_path / source.name
        target.write_bytes(data)
        paths.append(target)
    assert paths, f"no recorded files for {tool} {case}"
    return parse_checked(adapter, raw_from_files(adapter, str(tmp_path / case), paths))


def refused(tmp_path: Path, tool: str, case: str, edits: dict[str, tuple[bytes, bytes]], *words: str) -> str:
    with pytest.raises(ParseError) as caught:
        mutated(tmp_path, tool, case, edits)
    assert not isinstance(caught.value, ParserCrash), str(caught.value)
    message = str(caught.value)
    assert "\n" not in message
    for word in words:
        assert word in message, message
    return message


def test_the_recorded_outputs_parse_unchanged(tmp_path: Path):
    """The baseline of the mutations below: each recording parses as it is."""
    for tool, case in (("ab", "2.3-keepalive"), ("locust", "2.47.0-timeout"), ("siege", "4.0.7-benchmark-j"),
                       ("http_load", "27jun2014-p10_fetches"), ("jmeter", "5.6.3-xml"),
                       ("engine", "0.1.0-keepalive")):
        folder = tmp_path / tool
        folder.mkdir()
        assert mutated(folder, tool, case, {}).counts.requests_total


# Each: (tool, recorded case, {what follows the case in a file's name: (text, its mutation)},
# words the one-line error must hold). All once raised ValueError, OverflowError,
# LookupError or UnicodeDecodeError from the parser, or crashed the process.
REFUSED = {
    "ab count in exponent form": ("ab", "2.3-keepalive", {".txt": (
        b"Complete requests:      20000", b"Complete requests:      1e5")}, ("Complete requests", "'1e5'")),
    "ab time per request '-'": ("ab", "2.3-keepalive", {".txt": (
        b"Time per request:       0.146", b"Time per request:       -")}, ("Time per request", "'-'")),
    "ab -e file with nan": ("ab", "2.3-keepalive", {".csv": (b"50,0.128", b"50,nan")}, ("line 52: ms", "'nan'")),
    "jmeter xml unknown encoding": ("jmeter", "5.6.3-xml", {".jtl": (
        b'encoding="UTF-8"', b'encoding="x-no-such-encoding"')}, ("unknown encoding",)),
    "jmeter xml superscript digit": ("jmeter", "5.6.3-xml", {".jtl": (b't="33"', 't="3²"'.encode())},
                                     ("'t' is not a whole number",)),
    "engine byte 0xff": ("engine", "0.1.0-keepalive", {".json": (
        b'"scenario": "engine"', b'"scenario": "\xffengine"')}, ("not UTF-8",)),
    "engine NaN": ("engine", "0.1.0-keepalive", {".json": (
        b'"duration_s": 2.001915825', b'"duration_s": NaN')}, ("NaN is not a number JSON allows",)),
    "engine Infinity": ("engine", "0.1.0-keepalive", {".json": (
        b'"duration_s": 2.001915825', b'"duration_s": Infinity')}, ("Infinity is not a number JSON allows",)),
    "engine 1e400": ("engine", "0.1.0-keepalive", {".json": (
        b'"duration_s": 2.001915825', b'"duration_s": 1e400')}, ("too large",)),
    # once free(): invalid pointer, exit 134, inside the HDR library
    "locust negative count": ("locust", "2.47.0-timeout", {".txt": (b'"1000": 4', b'"1000": -4')},
                              ("response_times", "negative")),
    # once a per-second series over billions of seconds (10 GB of memory)
    "locust negative second": ("locust", "2.47.0-timeout", {".txt": (
        b'"1796001605": 2', b'"-1796001605": 2')}, ("num_reqs_per_sec", "negative")),
    "locust seconds far apart": ("locust", "2.47.0-timeout", {".txt": (b'"1796001605": 2', b'"5": 2')},
                                 ("num_reqs_per_sec", "span")),
    "locust 1e400": ("locust", "2.47.0-timeout", {".txt": (b'"num_requests": 4', b'"num_requests": 1e400')},
                     ("too large",)),
    "locust NaN": ("locust", "2.47.0-timeout", {".txt": (b'"num_requests": 4', b'"num_requests": NaN')},
                   ("NaN",)),
    "siege json 1e400": ("siege", "4.0.7-benchmark-j", {".txt": (b"9090.91", b"1e400")}, ("too large",)),
    "siege text two points": ("siege", "4.0.7-benchmark", {".stderr.txt": (b"12500.00", b"12500.0.0")},
                              ("Transaction rate", "'12500.0.0'")),
    "http_load 1e400 bytes": ("http_load", "27jun2014-p10_fetches", {".txt": (
        b"260000 bytes", b"1e400 bytes")}, ("bytes", "not a finite number")),
}


@pytest.mark.parametrize("tool, case, edits, words", REFUSED.values(), ids=REFUSED.keys())
def test_broken_output_is_a_parse_error_naming_the_field(tmp_path: Path, tool: str, case: str,
                                                         edits: dict[str, tuple[bytes, bytes]],
                                                         words: tuple[str, ...]):
    refused(tmp_path, tool, case, edits, *words)


# ---- ab ----



def test_ab_time_per_request_above_the_longest_request_is_not_taken_for_the_mean(tmp_path: Path):
    m = mutated(tmp_path, "ab", "2.3-keepalive",
                {".txt": (b"Time per request:       0.146", b"Time per request:       50.000")})
    # The mean is the -e curve's, whatever "Time per request" says.
    assert m.latency.mean_ms == pytest.approx(0.15535) and m.latency.max_ms == 2.829
    assert any("counts time outside the requests" in note for note in m.notes)



def test_ab_reset_requests_are_counted_once(tmp_path: Path):
    """ab -r against a server that resets: "Failed requests: 200 (Receive: 100, Exceptions:
    100)" of 100 complete. ab counts error events; each reset request is one receive error
    and one poll exception. 100 requests failed, 0 succeeded."""
    m = mutated(tmp_path, "ab", "2.3-reset-r", {})
    assert (m.counts.requests_total, m.counts.requests_ok, m.counts.requests_failed) == (100, 0, 100)
    assert m.counts.failures.read == 100 and m.counts.failures.other is None
    assert any("200 failed requests" in note and "counts error events" in note for note in m.notes)


def test_ab_requests_that_received_no_byte_are_failed(tmp_path: Path):
    """Against a server that closes without a reply ab says 100 complete, 0 failed, 0 bytes."""
    m = mutated(tmp_path, "ab", "2.3-emptyreply", {})
    assert (m.counts.requests_ok, m.counts.requests_failed) == (0, 100)
    assert any("no byte" in note for note in m.notes)


def test_ab_p999_from_whole_ms_times_is_brought_within_the_exact_max(tmp_path: Path):
    """ab -g rounds each time to whole ms (8.4 ms is 8): read from them, p99.9 can exceed the
    exact max of the -e file by that rounding; the true p99.9 cannot. Seen on real runs as
    "latency.max_ms: 4.756 is below p999_ms, 5"."""
    m = mutated(tmp_path, "ab", "2.3-nokeepalive", {".csv": (b"100,8.827", b"100,7.9")})
    assert m.latency.max_ms == 7.9 and m.latency.percentiles.p999_ms == 7.9  # not the -g file's 8
    assert any("p999_ms read from the per-request times, 8 ms" in note for note in m.notes)
    far = tmp_path / "far"
    far.mkdir()
    with pytest.raises(ParseError, match="below p999_ms"):  # beyond the rounding: refused, not hidden
        mutated(far, "ab", "2.3-nokeepalive", {".csv": (b"100,8.827", b"100,6.5")})


# ---- the engine ----



def test_engine_result_with_a_histogram_of_other_settings(tmp_path: Path):
    data = json.loads((FIXTURES / "engine" / "0.1.0-keepalive.json").read_text())
    payload = struct.pack(">IIIIQQd", 0x1C849313, 0, 0, 5, 1, 2 ** 60, 1.0) + bytes(16)
    packed = zlib.compress(payload)
    data["histogram"] = base64.b64encode(struct.pack(">II", 0x1C849314, len(packed)) + packed).decode()
    path = tmp_path / "0.1.0-keepalive.json"
    path.write_text(json.dumps(data))
    adapter = registry.get("engine")
    with pytest.raises(ParseError, match="histogram: not an HDR histogram of toolbench"):
        parse_checked(adapter, raw_from_files(adapter, "x", [path]))


# ---- Locust ----

def test_locust_failures_csv_with_a_200kb_field(tmp_path: Path):
    """A whole error page in one CSV field is beyond the csv module's default limit; it is read."""
    long_error = b"original=timed out" + b"x" * 200_000
    (tmp_path / "case").mkdir()
    m = mutated(tmp_path / "case", "locust", "2.47.0-timeout", {
        "_failures.csv": (b"original=timed out", long_error),
        ".stderr.txt": (b"Error report", b"Error list"),  # so the failures come from the CSV
    })
    assert m.counts.failures.timeout == 2






def test_locust_stats_csv_with_infinity(tmp_path: Path):
    mutated_csv = (FIXTURES / "locust" / "2.47.0-killed_stats.csv").read_bytes()
    row = mutated_csv.splitlines()[-1].split(b",")
    row[5] = b"inf"  # the Aggregated row's Average Response Time
    path = tmp_path / "k_stats.csv"
    path.write_bytes(b"\n".join(mutated_csv.splitlines()[:-1] + [b",".join(row)]) + b"\n")
    adapter = registry.get("locust")
    with pytest.raises(ParseError, match="Average Response Time: expected a number, got 'inf'"):
        parse_checked(adapter, RawOutput(files={"stats_csv": path}, source="k"))



# ---- the histogram module refuses what would crash the HDR library ----

@pytest.mark.parametrize("count", [-3, 2 ** 63, 2 ** 53 + 1])
def test_histogram_refuses_counts_the_library_cannot_encode(count: int):
    hist = histogram.new()
    with pytest.raises(ValueError, match="count"):
        histogram.record_ms(hist, 5.0, count)
    assert hist.get_total_count() == 0
    histogram.encode(hist)  # and encoding what is there does not crash the process


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_histogram_refuses_values_that_are_not_finite(value: float):
    with pytest.raises(ValueError, match="finite"):
        histogram.record_ms(histogram.new(), value)


def test_histogram_refuses_a_payload_larger_than_its_own():
    payload = struct.pack(">IIIIQQd", 0x1C849313, 0, 0, 3, 1, 3_600_000_000, 1.0) + bytes(10 ** 7)
    packed = zlib.compress(payload)  # 10 MB of zeros in 10 KB: a decompression bomb in small
    text = base64.b64encode(struct.pack(">II", 0x1C849314, len(packed)) + packed).decode()
    with pytest.raises(SchemaError, match="larger than such a histogram"):
        histogram.decode(text)


# ---- the invariants and the crash guard ----

def test_invariants_name_the_field():
    def broken(**changes) -> str:
        with pytest.raises(ParseError) as caught:
            invariants.check(Measurement(tool="t", **changes))
        return str(caught.value)

    from toolbench.record.schema import Counts, SecondSample, Timing
    assert "counts.requests_failed: requests_ok 5 + requests_failed 1 is not requests_total 5" in broken(
        counts=Counts(requests_total=5, requests_ok=5, requests_failed=1))
    assert "timing.duration_s: nan is not a finite number" in broken(timing=Timing(duration_s=float("nan")))
    assert "latency.percentiles.p99_ms: 3 is below p90_ms, 9" in broken(
        latency=Latency(percentiles=Percentiles(p90_ms=9.0, p99_ms=3.0), resolution_ms=0.001))
    assert "latency.max_ms: 2 is below min_ms, 4" in broken(latency=Latency(min_ms=4.0, max_ms=2.0))
    assert "counts.failures.read: -1 is negative" in broken(
        counts=Counts(failures=dataclass_replace_failures(read=-1)))
    assert "series: runs over 500 s" in broken(timing=Timing(duration_s=3.0),
                                               series=[SecondSample(0, 1), SecondSample(500, 1)])
    assert "counts.requests_total: 1.5 is not a whole number" in broken(counts=Counts(requests_total=1.5))


def dataclass_replace_failures(**changes):
    from toolbench.record.schema import Failures
    return Failures(**changes)


def test_rounding_within_the_step_is_not_a_broken_order():
    """ab's table rounds to whole ms: a mean of 0.146 ms beside a max of 0 ms is in order."""
    lat = Latency(min_ms=0.0, mean_ms=0.146, max_ms=0.0, resolution_ms=1.0)
    invariants.check(Measurement(tool="ab", latency=lat))


class CrashingAdapter:
    """A plug-in whose parser fails as no parser should: the runner and `toolbench parse`
    must turn it into a one-line reason, not a traceback."""

    name = "crashing"

    def parse(self, raw: RawOutput) -> Measurement:
        return {"not": "a measurement"}["missing"]  # type: ignore[return-value]


def test_any_parser_exception_is_a_one_line_parser_crash():
    with pytest.raises(ParserCrash) as caught:
        parse_checked(CrashingAdapter(), RawOutput())  # type: ignore[arg-type]
    assert str(caught.value) == "crashing: parser crashed: KeyError: 'missing'"


def test_the_runner_turns_a_parser_crash_into_a_reason():
    from toolbench.run import cell as cell_run
    measurement, reason = cell_run._parse(CrashingAdapter(), RawOutput())  # type: ignore[arg-type]
    assert measurement is None and reason == "crashing: parser crashed: KeyError: 'missing'"


# ---- `toolbench parse` as a user runs it ----

@pytest.mark.parametrize("tool, case, ending, old, new", [
    ("ab", "2.3-keepalive", ".txt", b"Complete requests:      20000", b"Complete requests:      1e5"),
    ("engine", "0.1.0-keepalive", ".json", b'"duration_s": 2.001915825', b'"duration_s": NaN'),
    ("locust", "2.47.0-timeout", ".txt", b'"1000": 4', b'"1000": -4'),  # once exit 134 in the HDR library
    ("jmeter", "5.6.3-xml", ".jtl", b'encoding="UTF-8"', b'encoding="x-no-such-encoding"'),
])
def test_parse_command_ends_on_one_line_for_broken_output(tmp_path: Path, tool: str, case: str, ending: str,
                                                          old: bytes, new: bytes):
    import subprocess

    from conftest import REPO
    source = FIXTURES / tool / f"{case}{ending}"
    data = source.read_bytes()
    assert old in data
    target = tmp_path / source.name
    target.write_bytes(data.replace(old, new, 1))
    done = subprocess.run([str(REPO / ".venv" / "bin" / "toolbench"), "parse", "--tool", tool, str(target)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stderr
    assert done.stdout == "" and "NaN" not in done.stdout
    assert done.stderr.startswith(f"toolbench: error: {tool}: cannot parse output") and done.stderr.count("\n") == 1
