"""wrk 4.x: builds its command, reads its text summary and the JSON that toolbench's fixed
`done()` script (templates/wrk_done.lua) writes with wrk's own figures.

What wrk is, and what follows for its results:
- a closed model only (N connections kept busy), for a duration only: no request count,
  no fixed rate (that is wrk2); other cells are planned as unsupported;
- it sends a plain GET with our headers; a method or body would need a Lua script made
  from the scenario, and toolbench's script is fixed: those cells are unsupported too;
- it times each request from its send on its connection, so a stalled connection's wait
  is not counted (coordinated omission not corrected); times are whole microseconds;
- its summary counts complete responses; connect, read and write errors and timeouts are
  counted apart, as socket errors, and "Non-2xx or 3xx responses" are those of status 400
  and above (a 3xx is a success to wrk, as here)."""
from __future__ import annotations

import math
import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolbench.adapters import units
from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, RawOutput, Support,
                                        found_by_version, option)
from toolbench.contract.recipe import TESTS, Apt, Install
from toolbench.errors import ParseError
from toolbench.record import failures
from toolbench.record.numbers import Numbers
from toolbench.record.schema import (Counts, Failures, Fidelity, Latency, Measurement, Omission, Percentiles, Rates,
                                     Timing, Transfer)

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

SCRIPT = "wrk_done.lua"
RESULT_FILE = "wrk.json"  # the name the script writes, in the working directory
RESOLUTION_MS = 0.001  # wrk records whole microseconds
# "wrk debian/4.1.0-3+b2 [epoll]"; the version starts where a run of digits does, so that a long
# run is tried once, not from each of its digits.
_VERSION = re.compile(r"^wrk \S*?(?<!\d)(\d+\.\d+[\w.+~-]*)", re.MULTILINE)
# [^\S\n] is white space within a line: `\s` runs on across line ends, and from each of thousands
# of blank lines over all those after it (quadratic). No match here spans two lines.
_REQUESTS = re.compile(r"^[^\S\n]*(\d+) requests in (\S+), (\S+) read[^\S\n]*$", re.MULTILINE)
_SOCKET = re.compile(r"^[^\S\n]*Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)[^\S\n]*$",
                     re.MULTILINE)
_NON2XX = re.compile(r"^[^\S\n]*Non-2xx or 3xx responses: (\d+)[^\S\n]*$", re.MULTILINE)
_CONNECTIONS = re.compile(r"^[^\S\n]*\d+ threads and (\d+) connections[^\S\n]*$", re.MULTILINE)
_RPS = re.compile(r"^Requests/sec:[^\S\n]+(\S+)[^\S\n]*$", re.MULTILINE)
_LATENCY = re.compile(r"^[^\S\n]*Latency[^\S\n]+(\S+)[^\S\n]+(\S+)[^\S\n]+(\S+)[^\S\n]+\S+[^\S\n]*$", re.MULTILINE)
_DISTRIBUTION = re.compile(r"^[^\S\n]*(50|75|90|99)%[^\S\n]+(\S+)[^\S\n]*$", re.MULTILINE)
_PCT_NAMES = {"50": "p50_ms", "66": "p66_ms", "75": "p75_ms", "80": "p80_ms", "90": "p90_ms", "95": "p95_ms",
              "98": "p98_ms", "99": "p99_ms", "99.9": "p999_ms"}
# wrk's error counters to failure classes (toolbench.record.failures); a write error is none of them.
FAILURE_TABLE: failures.Table = (
    ("connect", ("connect",)),
    ("timeout", ("timeout",)),
    ("read", ("read",)),
)
_ERROR_KINDS = ("connect", "read", "write", "timeout")


_SUMMARY_HEAD = re.compile(r"Running \S+ test @ [^\n]*\n[^\S\n]+\d+ threads and \d+ connections")


class WrkAdapter(Adapter):
    name = "wrk"
    install = Install((Apt(("wrk",), program="wrk"),), TESTS)
    # threads: wrk's -t (at most the connections); timeout_s: its --timeout, whole seconds.
    option_types = {"threads": int, "timeout_s": int}

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        return found_by_version(host, path or "wrk", ["-v"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if cell.rate_rps is not None:
            return Support(False, "wrk has no fixed-rate (open model) mode (that is wrk2)")
        if cell.stop.duration_s is None:
            return Support(False, "wrk runs for a duration only: it has no request count")
        req = cell.request
        if req.method != "GET" or req.body is not None:
            return Support(False, "wrk sends a method or body only from a Lua script; toolbench's is fixed and "
                                  "sends wrk's plain GET")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None and cell.stop.duration_s is not None, "supports() and the runner see to both"
        # By default one thread per CPU the placement gave it (2 where it was not placed).
        threads = max(1, min(cell.concurrency, option(cell, "threads", cell.cpus or 2)))
        argv = [found.path, "-t", str(threads), "-c", str(cell.concurrency),
                "-d", f"{max(1, math.ceil(cell.stop.duration_s))}s", "--latency",
                "--timeout", f"{option(cell, 'timeout_s', 30)}s", "-s", SCRIPT]
        headers = dict(cell.request.headers)
        if not cell.keepalive and "connection" not in {k.lower() for k in headers}:
            headers["Connection"] = "close"  # wrk reconnects after each response that says so
        for key, value in headers.items():
            argv += ["-H", f"{key}: {value}"]
        argv.append(cell.url)
        return Invocation(argv=argv, files={SCRIPT: done_script()}, outputs={"json": RESULT_FILE})

    def classify(self, path: Path, text: str) -> str:
        return "json" if text.lstrip().startswith('{"toolbench_wrk_done"') else "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        # The engine prints a wrk-like head too, with "workers" where wrk says "threads".
        head = text.lstrip()
        return head.startswith('{"toolbench_wrk_done"') or bool(_SUMMARY_HEAD.match(head))

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def done_script() -> str:
    return resources.files("toolbench.adapters").joinpath("templates", SCRIPT).read_text(encoding="utf-8")


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("wrk", raw.source)
    summary = _text(raw.stdout, num)
    done = _done(raw.files.get("json"), num)
    if summary is None and done is None:
        said = raw.stderr.strip().splitlines()[-1:] or ["nothing on stderr"]
        raise ParseError("wrk", f"no summary in the output; wrk said: {said[0][:200]}", raw.source)
    notes: list[str] = []
    fidelity: dict[str, Fidelity] = {}
    figures = done if done is not None else summary
    assert figures is not None
    counts = _counts(figures, num, notes, fidelity)
    if done is not None:
        latency = _done_latency(done, num)
        notes.append("latency from wrk's own figures, written by toolbench's done() script: whole microseconds")
    else:
        latency = _text_latency(raw.stdout, num, figures["requests"])
        notes.append("latency from wrk's text summary (rounded to two decimals of its unit)")
    duration_s = figures["duration_s"]
    return Measurement(
        tool="wrk",
        timing=Timing(duration_s=duration_s),
        counts=counts,
        rates=Rates(rps=summary["rps"] if summary and "rps" in summary else None),
        transfer=Transfer(received_bytes=round(figures["bytes"]) if "bytes" in figures else None),
        latency=latency,
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity=fidelity,
        notes=notes,
        url=_url(raw.stdout),
        concurrency=num.integer(c.group(1), "connections") if (c := _CONNECTIONS.search(raw.stdout)) else None,
    )


def _text(stdout: str, num: Numbers) -> dict[str, Any] | None:
    m = _REQUESTS.search(stdout)
    if m is None:
        return None
    found: dict[str, Any] = {
        "requests": num.integer(m.group(1), "requests"),
        "duration_s": units.time_ms(num, m.group(2), "requests in") / 1000.0,
        "errors": dict.fromkeys(_ERROR_KINDS, 0),
        "status": 0,
    }
    if s := _SOCKET.search(stdout):
        found["errors"] = {kind: num.integer(v, f"socket errors, {kind}") for kind, v in zip(_ERROR_KINDS, s.groups())}
    if s := _NON2XX.search(stdout):
        found["status"] = num.integer(s.group(1), "non-2xx or 3xx responses")
    if s := _RPS.search(stdout):
        found["rps"] = num.decimal(s.group(1), "Requests/sec")
    return found


def _done(path: Path | None, num: Numbers) -> dict[str, Any] | None:
    if path is None:
        return None
    data = num.loads(path.read_text(errors="replace"), "the done() script's JSON")
    if not isinstance(data, dict) or data.get("toolbench_wrk_done") != 1:
        raise num.error("the done() script's JSON", "not the document toolbench's wrk script writes")
    errors, lat = data.get("errors"), data.get("latency_us")
    if not isinstance(errors, dict) or not isinstance(lat, dict) or not isinstance(lat.get("percentiles"), dict):
        raise num.error("the done() script's JSON", "errors or latency_us missing")
    return {
        "requests": num.whole(data.get("requests"), "requests"),
        "duration_s": num.real(data.get("duration_us"), "duration_us") / 1e6,
        "bytes": num.whole(data.get("bytes"), "bytes"),
        "errors": {kind: num.whole(errors.get(kind), f"errors.{kind}") for kind in _ERROR_KINDS},
        "status": num.whole(errors.get("status"), "errors.status"),
        "latency_us": lat,
    }


def _counts(figures: dict[str, Any], num: Numbers, notes: list[str], fidelity: dict[str, Fidelity]) -> Counts:
    """wrk's requests are complete responses; each connect, read or write error and each
    timeout is an attempt that got none, so they are added to the total as failures. wrk
    also counts a response slower than --timeout as a timeout: such a one is counted twice."""
    complete, errors, status = figures["requests"], figures["errors"], figures["status"]
    if status > complete:
        raise num.error("Non-2xx or 3xx responses", f"{status} of {complete} requests")
    by_class = failures.tally({kind: n for kind, n in errors.items()}, FAILURE_TABLE)
    unanswered = sum(errors.values())
    if errors["timeout"]:
        notes.append(f"wrk counted {errors['timeout']} timeouts (requests unanswered for --timeout, or answered "
                     "later than it); each is counted as a failed request")
    for name in ("counts.requests_total", "counts.requests_ok", "counts.requests_failed"):
        fidelity[name] = Fidelity.DERIVED
    return Counts(requests_total=complete + unanswered, requests_ok=complete - status,
                  requests_failed=status + unanswered,
                  failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"], read=by_class["read"],
                                    other=by_class["other"], http=status))


def _done_latency(done: dict[str, Any], num: Numbers) -> Latency:
    if done["requests"] == 0:
        return Latency()  # wrk's min is then 2^64 - 1 and every other figure 0: none is a time
    lat = done["latency_us"]
    pcts = {name: num.real(lat["percentiles"][key], f"latency_us.percentiles.{key}") / 1000.0
            for key, name in _PCT_NAMES.items() if key in lat["percentiles"]}
    return Latency(min_ms=num.real(lat.get("min"), "latency_us.min") / 1000.0,
                   mean_ms=num.real(lat.get("mean"), "latency_us.mean") / 1000.0,
                   max_ms=num.real(lat.get("max"), "latency_us.max") / 1000.0,
                   stdev_ms=num.real(lat.get("stdev"), "latency_us.stdev") / 1000.0,
                   percentiles=Percentiles(**pcts), resolution_ms=RESOLUTION_MS)


def _text_latency(stdout: str, num: Numbers, requests: int) -> Latency:
    m = _LATENCY.search(stdout)
    if m is None or requests == 0:
        return Latency()
    pcts = {_PCT_NAMES[p]: units.time_ms(num, v, f"{p}% latency") for p, v in _DISTRIBUTION.findall(stdout)}
    mean, stdev, top = (units.time_ms(num, v, f"latency {what}")
                        for v, what in zip(m.groups(), ("avg", "stdev", "max")))
    # Two decimals of the unit printed: 10 µs at most where the unit is ms, 10 ms where it is s.
    step = 10.0 if any(v.endswith("s") and not v.endswith(("ms", "us")) for v in m.groups()) else 0.01
    return Latency(mean_ms=mean, stdev_ms=stdev, max_ms=top, percentiles=Percentiles(**pcts), resolution_ms=step)


def _url(stdout: str) -> str | None:
    m = re.search(r"^Running \S+ test @ (\S+)$", stdout, re.MULTILINE)
    return m.group(1) if m else None


ADAPTER = WrkAdapter()
