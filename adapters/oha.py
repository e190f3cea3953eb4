"""oha (Rust, `cargo install oha`): builds its command and reads the JSON it writes with
`--output-format json`; `toolbench parse` reads its text summary too (adapters/oha_text.py), and
names its per-request CSV, which it does not read.

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
  so that its requests are those of the other tools;
- every protocol (hyper, rustls): HTTP/1.1 in clear or over TLS, HTTP/2 with `--http2`, over TLS
  by ALPN (h2) or in clear with prior knowledge (h2c; `tools.oha.h2: true` asks the same of an
  http1 cell, as scenarios did before the protocol axis). Its `--disable-keepalive` is for
  HTTP/1 only: an HTTP/2 cell without keep-alive is not run. It checks the server's certificate,
  trusting the target's own (`--cacert`) besides the system's. Its output says nothing of the
  protocol spoken."""
from __future__ import annotations

import dataclasses
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolbench.adapters import oha_text
from toolbench.contract import toolsdir
from toolbench.adapters import workload_single
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
_SPACE = re.compile(r"\s*")
CSV_HEADER = "request-start,DNS,DNS+dialup,Response-delay,request-duration,bytes,status"
# The summary's lines toolbench reads (oha_text.NOT_KEPT: those it does not keep).
_TEXT_KEYS = ("Success rate", "Total", "Slowest", "Fastest", "Average", "Total data", *oha_text.NOT_KEPT)
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
    workload_features = workload_single.one_request("oha sends one URL with one method and body")
    # adapters/install_oha.sh: `cargo install --locked` from crates.io.
    install = Install((Script("install_oha.sh", "cargo/oha-1.16.0", package="toolbench.adapters", needs="cargo"),),
                      TESTS)
    # h2: an http1 cell in HTTP/2 (cleartext, prior knowledge), as protocol h2c; timeout_s: -t, per request;
    # latency_correction: time a rate cell's requests from when they were due (default true).
    option_types = {"h2": bool, "timeout_s": int, "latency_correction": bool}
    protocols = frozenset({"http1", "https", "h2", "h2c"})
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = "oha checks the server's certificate, trusting the target's own (--cacert) and the system's"

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        where = path or next(filter(None, map(host.which, candidates())), "oha")
        return found_by_version(host, where, ["--version"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if cell.protocol == "https" and option(cell, "h2", False):
            return Support(False, "tools.oha.h2 asks for HTTP/2 in clear, and this cell is HTTP/1.1 over TLS: "
                                  "the protocol axis says which (h2 or h2c)")
        if not cell.keepalive and _http2(cell):
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
        if _http2(cell):
            argv.append("--http2")  # by ALPN over TLS, with prior knowledge in clear
        if cell.tls and cell.ca_file:
            argv += ["--cacert", cell.ca_file]
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

    def classify(self, path: Path, text: str) -> str:
        # Its per-request CSV is a file of its own; its JSON and its text summary are what it printed.
        return "csv" if text.startswith(CSV_HEADER) else "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        return _HEAD.match(text) is not None or oha_text.is_summary(text) or text.startswith(CSV_HEADER)

    def parts(self, raw: RawOutput) -> list[str]:
        """The runs of one file that oha's output was appended to, run after run (`>>`)."""
        if any(role in raw.files for role in ROLES):
            return []
        if oha_text.is_summary(raw.stdout):
            return oha_text.parts(raw.stdout)
        spans = _documents(raw.stdout, Numbers("oha", raw.source))
        return [f"run{n}" for n in range(1, len(spans) + 1)] if len(spans) > 1 else []

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def _http2(cell: "Cell") -> bool:
    return cell.protocol in ("h2", "h2c") or (cell.protocol == "http1" and bool(option(cell, "h2", False)))


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("oha", raw.source)
    role = next((r for r in ROLES if r in raw.files), None)
    text = raw.stdout if role is None else _read(raw.files[role], num)
    if role is None and oha_text.is_summary(text):
        return _from_text(oha_text.read(oha_text.chosen(text, raw.part, raw.source)), num)
    data = _document(text, raw.part, num)
    if not isinstance(data, dict) or not isinstance(data.get("summary"), dict):
        if "csv" in raw.files:
            raise ParseError("oha", "this is oha's per-request CSV (--output-format csv), which toolbench cannot "
                             "read: it lists only the requests that got a response, not those that failed; "
                             "toolbench reads oha's text summary or its JSON (--output-format json)", raw.source)
        said = raw.stderr.strip().splitlines()[-1:]
        raise ParseError("oha", "no JSON result and no text summary in the output; "
                         + (f"oha said: {said[0][:200]}" if said else "nothing on its stderr"), raw.source)
    codes = _distribution(data.get("statusCodeDistribution"), "statusCodeDistribution", num, code=True)
    errors = _distribution(data.get("errorDistribution"), "errorDistribution", num)
    summary = data["summary"]
    omission = ROLES[role] if role is not None else None
    notes = ["figures from oha's JSON result: it times only requests that got a response; "
             "received bytes are response bodies"]
    if omission is None:
        notes.append("oha's JSON does not say whether --latency-correction was on: coordinated omission unknown")
    return _measurement(codes, errors, Timing(duration_s=num.real(summary.get("total"), "summary.total")),
                        Transfer(received_bytes=num.whole(summary.get("totalData"), "summary.totalData")),
                        _latency(summary, data.get("latencyPercentiles"), sum(codes.values()), num),
                        omission, notes)


def _measurement(codes: dict[int, int], errors: dict[str, int], timing: Timing, transfer: Transfer,
                 latency: Latency, omission: Omission | None, notes: list[str]) -> Measurement:
    """The counts by status and by error, as oha's JSON and its text both give them."""
    errors = dict(errors)
    aborted = errors.pop(DEADLINE, 0)
    by_class = failures.tally(errors, FAILURE_TABLE)
    ok = sum(n for code, n in codes.items() if code < 400)
    http_4xx = sum(n for code, n in codes.items() if 400 <= code < 500)
    http_5xx = sum(n for code, n in codes.items() if code >= 500)
    total = sum(codes.values()) + sum(errors.values())
    if aborted:
        notes = [*notes, f"{aborted} requests oha aborted at the end of its run are not counted"]
    return Measurement(
        tool="oha",
        timing=timing,
        counts=Counts(requests_total=total, requests_ok=ok, requests_failed=total - ok,
                      failures=Failures(connect=by_class["connect"], timeout=by_class["timeout"],
                                        read=by_class["read"], reset=by_class["reset"], other=by_class["other"],
                                        http_4xx=http_4xx, http_5xx=http_5xx),
                      status_codes=codes),
        transfer=transfer,
        # Its requests/sec counts the aborted requests too: toolbench derives the rate from the counts.
        rates=Rates(),
        latency=latency,
        coordinated_omission=omission,
        fidelity={name: Fidelity.DERIVED for name in ("counts.requests_total", "counts.requests_ok",
                                                       "counts.requests_failed")},
        notes=notes,
    )


def _documents(text: str, num: Numbers) -> list[tuple[int, int]]:
    """Where each JSON document of an output lies: several when oha's JSON was appended to a
    file run after run; none when the text is not JSON documents only."""
    decoder, spans, at = num.decoder(), [], 0
    while (at := _SPACE.match(text, at).end()) < len(text):  # type: ignore[union-attr]
        try:
            document, end = decoder.raw_decode(text, at)
        except (ValueError, RecursionError, ParseError):
            return []
        if not isinstance(document, dict):
            return []
        spans.append((at, end))
        at = end
    return spans


def _document(text: str, part: str | None, num: Numbers) -> Any:
    """The JSON result `part` names (run<N>), or the only one; None when the text holds none."""
    spans = _documents(text, num) if text.strip() else []
    if part == "all":
        raise num.error("the JSON results", "the results of several oha runs cannot be merged: each is one run's "
                                            "summary; each is read as a result of its own")
    if part:
        index = int(part[3:]) - 1 if part.startswith("run") and part[3:].isdigit() else -1
        if not 0 <= index < len(spans):
            raise num.error("the JSON results", f"the output holds {len(spans)}, not {part}")
        text = text[slice(*spans[index])]
    elif len(spans) > 1:
        raise num.error("the JSON results", f"the output holds {len(spans)} of them, of as many runs: "
                                            "`toolbench parse` reads each as a result of its own")
    return num.loads(text, "the JSON result", or_none=True) if text.strip() else None


def _from_text(summary: oha_text.Summary, num: Numbers) -> Measurement:
    codes = oha_text.status_codes(summary.codes, num)
    errors = oha_text.counted(summary.errors, "Error distribution", num)
    fields = summary.fields
    if "Total" not in fields:
        raise num.error("the text summary", "no Total line")
    duration_ms, _ = oha_text.time_ms(fields["Total"], num, "Total")
    received, rounded = oha_text.size_bytes(fields["Total data"], num) if "Total data" in fields else (None, None)
    _check_success_rate(fields.get("Success rate"), codes, errors, num)
    latency, unread = _text_latency(summary, sum(codes.values()), num)
    notes = ["figures from oha's text summary, its times as printed; it times only requests that got a "
             "response; received bytes are response bodies",
             "oha's text does not say whether --latency-correction was on: coordinated omission unknown"]
    notes += [rounded] if rounded else []
    unread += [f"{key} ({why})" for key, why in oha_text.NOT_KEPT.items() if key in fields]
    unread += [key for key in fields if key not in _TEXT_KEYS]
    unread += [f"the section `{name}`" for name in summary.unread]
    notes += [f"not read from the text summary: {'; '.join(unread)}"] if unread else []
    m = _measurement(codes, errors, Timing(duration_s=duration_ms / 1000.0), Transfer(received_bytes=received),
                     latency, None, notes)
    return dataclasses.replace(m, fidelity=m.fidelity | {"transfer.received_bytes": Fidelity.DERIVED}) if rounded else m


def _check_success_rate(said: str | None, codes: dict[int, int], errors: dict[str, int], num: Numbers) -> None:
    """oha's success rate: responses over responses and failures, those aborted at a -z deadline left out."""
    answered = sum(codes.values())
    attempted = answered + sum(n for text, n in errors.items() if text != DEADLINE)
    if said is None or not attempted:
        return
    # In percent with two decimals; up to oha 0.5.8 a ratio with four: either to 0.0001 of a ratio.
    value = num.decimal(said.removesuffix("%"), "Success rate") / (100.0 if said.endswith("%") else 1.0)
    if abs(value - answered / attempted) > 0.00005 + 1e-12:
        raise num.error("Success rate", f"{said} is not its counts' {answered} answered of {attempted}")


def _text_latency(summary: oha_text.Summary, timed: int, num: Numbers) -> tuple[Latency, list[str]]:
    """The summary's times, and the percentiles it printed that toolbench has no place for. Without
    a response oha prints NaN and inf for them: no time."""
    if not timed:
        return Latency(), []
    fields, steps = summary.fields, []
    values: dict[str, float] = {}
    for key, name in (("Fastest", "min_ms"), ("Average", "mean_ms"), ("Slowest", "max_ms")):
        if key in fields:
            values[name], step = oha_text.time_ms(fields[key], num, key)
            steps.append(step)
    pcts, unread = {}, []
    for printed, said in summary.percentiles:
        p = printed.rstrip("0").rstrip(".") if "." in printed else printed  # 99.90 is 99.9, 50.00 and 50 are 50
        if p in oha_text.PCT_NAMES:
            pcts[oha_text.PCT_NAMES[p]], step = oha_text.time_ms(said, num, f"{printed}%")
            steps.append(step)
        else:
            unread.append(f"p{p}")
    unread = [f"the percentiles {', '.join(unread)} (toolbench has no place for them)"] if unread else []
    return Latency(**values, percentiles=Percentiles(**pcts), resolution_ms=max(steps, default=None)), unread


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
