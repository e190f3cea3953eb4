"""oha (Rust, `cargo install oha`): builds its command and reads the JSON it writes with
`--output-format json`.

What oha is, and what follows for its results (read from oha 1.16.0's source):
- `-c` connections, each sending its next request when the last one ends (a closed model),
  for `-n` requests or `-z` a duration; `-q` is one schedule for the whole run (request i
  is due i/q seconds after the start) that the `-c` connections serve as they come free: an
  open model as long as one is free. With `--latency-correction`, on by default in a rate
  cell (`tools.oha.latency_correction: false` turns it off), a request is timed from when
  it was due, so a wait for a free connection counts (coordinated omission corrected);
  otherwise, and in a closed cell, from its actual send;
- it times only requests that got a response, whatever the status, as f64 seconds of a
  monotonic clock; its percentiles p10 ... p99.99 are nearest-rank values of those times
  (reported, not derived); a request without a response is counted under its error text,
  untimed; its JSON has no per-request data;
- at the end of a `-z` run it aborts the requests still waiting ("aborted due to deadline"):
  toolbench leaves them out of the counts, as the other tools do, and says how many;
- it asks for compressed responses unless told not to: toolbench sends `--disable-compression`
  so that its requests are those of the other tools."""
from __future__ import annotations

import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolbench.contract import toolsdir
from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, RawOutput, Support,
                                        found_by_version, option)
from toolbench.contract.recipe import TESTS, Install, Script
from toolbench.errors import ParseError
from toolbench.record import failures
from toolbench.record.numbers import Numbers
from toolbench.record.schema import (Counts, Failures, Fidelity, Latency, Measurement, Omission, Percentiles, Rates,
                                     Timing, Transfer)

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

BODY_FILE = "body"
RESULT_FILE = "oha.json"
RESOLUTION_MS = 1e-6  # f64 seconds of std::time::Instant: nanoseconds
DEADLINE = "aborted due to deadline"
_VERSION = re.compile(r"^oha (\d+\.\d+\.\d+\S*)", re.MULTILINE)
_HEAD = re.compile(r'\A\s*\{\s*"summary":\s*\{\s*"successRate":')
_PCT_NAMES = {"p50": "p50_ms", "p75": "p75_ms", "p90": "p90_ms", "p95": "p95_ms", "p99": "p99_ms",
              "p99.9": "p999_ms"}
# The role of the JSON file says how the run timed its requests: oha's JSON does not.
ROLES = {Omission.CORRECTED.value: Omission.CORRECTED, Omission.NOT_CORRECTED.value: Omission.NOT_CORRECTED}
# hyper's and std::io's error texts to failure classes (toolbench.record.failures), first match wins.
FAILURE_TABLE: failures.Table = (
    ("timeout", ("timeout", "timed out")),
    ("connect", ("connection refused", "no route to host", "network is unreachable")),
    ("reset", ("connection reset",)),
    ("read", ("connection closed before message completed", "incomplete message", "broken pipe",
              "unexpected eof", "end of file")),
)


def candidates() -> list[str]:
    """Where oha is looked for: the newest <tools>/cargo/oha-*/ (`toolbench install oha`),
    then `oha` on PATH."""
    return toolsdir.newest("cargo", "oha", "bin/oha", complete=".toolbench-complete") + ["oha"]


class OhaAdapter(Adapter):
    name = "oha"
    # adapters/install_oha.sh: `cargo install --locked` from crates.io.
    install = Install((Script("install_oha.sh", "cargo/oha-1.16.0", package="toolbench.adapters", needs="cargo"),),
                      TESTS)
    # h2: HTTP/2 (cleartext, prior knowledge) with --http2; timeout_s: -t, per request;
    # latency_correction: time a rate cell's requests from when they were due (default true).
    option_types = {"h2": bool, "timeout_s": int, "latency_correction": bool}

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        where = path or next(filter(None, map(host.which, candidates())), "oha")
        return found_by_version(host, where, ["--version"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if not cell.keepalive and option(cell, "h2", False):
            return Support(False, "HTTP/2 has no keep-alive off: oha's --disable-keepalive is for HTTP/1")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None, "the runner resolves the URL before building"
        argv = [found.path, "--no-tui", "--output-format", "json", "-o", RESULT_FILE, "--disable-compression",
                "-c", str(cell.concurrency), "-t", f"{option(cell, 'timeout_s', 30)}s"]
        total = cell.stop.total_requests(cell.concurrency)
        if total is not None:
            argv += ["-n", str(total)]
        else:
            assert cell.stop.duration_s is not None
            argv += ["-z", f"{max(1, math.ceil(cell.stop.duration_s * 1000))}ms"]
        corrected = cell.rate_rps is not None and option(cell, "latency_correction", True)
        if cell.rate_rps is not None:
            argv += ["-q", repr(float(cell.rate_rps))]
        if corrected:
            argv.append("--latency-correction")
        if option(cell, "h2", False):
            argv.append("--http2")
        if not cell.keepalive:
            argv.append("--disable-keepalive")
        req = cell.request
        if req.method != "GET":
            argv += ["-m", req.method]
        for key, value in req.headers.items():
            argv += ["-H", f"{key}: {value}"]
        files: dict[str, str] = {}
        if req.body is not None:
            files[BODY_FILE] = req.body
            argv += ["-D", BODY_FILE]
            if "content-type" not in {k.lower() for k in req.headers}:
                argv += ["-T", req.content_type or "application/octet-stream"]
        argv.append(cell.url)
        role = (Omission.CORRECTED if corrected else Omission.NOT_CORRECTED).value
        return Invocation(argv=argv, files=files, outputs={role: RESULT_FILE})

    def recognizes(self, path: Path, text: str) -> bool:
        return _HEAD.match(text) is not None

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("oha", raw.source)
    role = next((r for r in ROLES if r in raw.files), None)
    text = raw.stdout if role is None else _read(raw.files[role], num)
    data = num.loads(text, "the JSON result", or_none=True) if text.strip() else None
    if not isinstance(data, dict) or not isinstance(data.get("summary"), dict):
        said = raw.stderr.strip().splitlines()[-1:] or ["nothing on stderr"]
        raise ParseError("oha", f"no JSON result in the output; oha said: {said[0][:200]}", raw.source)
    codes = _distribution(data.get("statusCodeDistribution"), "statusCodeDistribution", num, code=True)
    errors = _distribution(data.get("errorDistribution"), "errorDistribution", num)
    aborted = errors.pop(DEADLINE, 0)
    by_class = failures.tally(errors, FAILURE_TABLE)
    ok = sum(n for code, n in codes.items() if code < 400)
    http_4xx = sum(n for code, n in codes.items() if 400 <= code < 500)
    http_5xx = sum(n for code, n in codes.items() if code >= 500)
    total = sum(codes.values()) + sum(errors.values())
    summary = data["summary"]
    notes = ["figures from oha's JSON result: it times only requests that got a response; "
             "received bytes are response bodies"]
    if aborted:
        notes.append(f"{aborted} requests oha aborted at the end of its run are not counted")
    omission = ROLES[role] if role is not None else None
    if omission is None:
        notes.append("oha's JSON does not say whether --latency-correction was on: coordinated omission unknown")
    return Measurement(
        tool="oha",
        timing=Timing(duration_s=num.real(summary.get("total"), "summary.total")),
        counts=Counts(requests_total=total, requests_ok=ok, requests_failed=total - ok,
                      failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                        read=by_class["read"], reset=by_class["reset"], other=by_class["other"],
                                        http_4xx=http_4xx, http_5xx=http_5xx),
                      status_codes=codes),
        transfer=Transfer(received_bytes=num.whole(summary.get("totalData"), "summary.totalData")),
        # Its requestsPerSec counts the aborted requests too: toolbench derives the rate from the counts.
        rates=Rates(),
        latency=_latency(summary, data.get("latencyPercentiles"), sum(codes.values()), num),
        coordinated_omission=omission,
        fidelity={name: Fidelity.DERIVED for name in ("counts.requests_total", "counts.requests_ok",
                                                       "counts.requests_failed")},
        notes=notes,
    )


def _read(path: Path, num: Numbers) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise num.error(path.name, f"cannot be read: {exc.strerror}") from None


def _distribution(value: Any, what: str, num: Numbers, code: bool = False) -> dict[Any, int]:
    if not isinstance(value, dict):
        raise num.error(what, "expected an object of counts")
    found: dict[Any, int] = {}
    for key, count in value.items():
        if code and not re.fullmatch(r"[1-5]\d\d", key):
            raise num.error(what, f"{key[:40]!r} is not an HTTP status code")
        found[int(key) if code else key] = num.whole(count, f"{what}[{key[:40]!r}]")
    return {k: n for k, n in found.items() if n}


def _latency(summary: dict[str, Any], pcts_in: Any, timed: int, num: Numbers) -> Latency:
    """Seconds in oha's JSON; none is a time when no request got a response (oha writes null)."""
    if not timed:
        return Latency()
    if not isinstance(pcts_in, dict):
        raise num.error("latencyPercentiles", "expected an object")
    pcts = {name: num.real(pcts_in[key], f"latencyPercentiles.{key}") * 1000.0
            for key, name in _PCT_NAMES.items() if key in pcts_in}
    return Latency(min_ms=num.real(summary.get("fastest"), "summary.fastest") * 1000.0,
                   mean_ms=num.real(summary.get("average"), "summary.average") * 1000.0,
                   max_ms=num.real(summary.get("slowest"), "summary.slowest") * 1000.0,
                   percentiles=Percentiles(**pcts), resolution_ms=RESOLUTION_MS)


ADAPTER = OhaAdapter()
