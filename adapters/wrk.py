"""wrk 4.x: builds its command, reads its text summary and the JSON that toolbench's fixed
`done()` script (templates/wrk_done.lua) writes with wrk's own figures.

What wrk is, and what follows for its results:
- a closed model only (N connections kept busy), for a duration only: no request count,
  no fixed rate (that is wrk2); other cells are planned as unsupported;
- it sends a plain GET with our headers; a method or body would need a Lua script made
  from the scenario, and toolbench's script is fixed: those cells are unsupported too;
- it times each request from its send on its connection, so a stalled connection's wait
  is not counted (coordinated omission not corrected); times are whole microseconds;
- HTTP/1.1, in clear or over TLS for an https:// URL (its output is the same); no HTTP/2. It
  never checks the server's certificate and has no option to (`WrkAdapter.TLS_TRUST`);
- its summary counts complete responses; connect, read and write errors and timeouts are
  counted apart, as socket errors, and "Non-2xx or 3xx responses" are those of status 400
  and above (a 3xx is a success to wrk, as here).

The same text is wrk2's (giltene/wrk2, a fixed-rate fork of wrk 3), which toolbench reads but
does not run: its HdrHistogram sections are read by wrk_text; a file of several runs appended
one after another is split by wrk_runs."""
from __future__ import annotations

import math
import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolbench.adapters import wrk_runs, wrk_text, wrk_workload
from toolbench.adapters.wrk_text import ERROR_KINDS, Summary
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
_PCT_NAMES = {"50": "p50_ms", "66": "p66_ms", "75": "p75_ms", "80": "p80_ms", "90": "p90_ms", "95": "p95_ms",
              "98": "p98_ms", "99": "p99_ms", "99.9": "p999_ms"}
# wrk's error counters to failure classes (toolbench.record.failures); a write error is none of them.
FAILURE_TABLE: failures.Table = (
    ("connect", ("connect",)),
    ("timeout", ("timeout",)),
    ("read", ("read",)),
)
# A run's head, anywhere in the file: an appended file may start with a heading. [^\S\n] is white
# space within a line, so no match spans more than the two lines it reads.
_SUMMARY_HEAD = re.compile(r"^Running \S+ test @ [^\n]*\n[^\S\n]+\d+ threads and \d+ connections", re.MULTILINE)
_DONE_UNUSED = ("toolbench's done() JSON beside this output is one run's, and which of the runs it holds is not "
                "known: not used")


class WrkAdapter(Adapter):
    name = "wrk"
    install = Install((Apt(("wrk",), program="wrk"),), TESTS)
    # threads: wrk's -t (at most the connections); timeout_s: its --timeout, whole seconds.
    option_types = {"threads": int, "timeout_s": int}
    protocols = frozenset({"http1", "https"})
    protocol_refusals = {protocol: "wrk speaks HTTP/1.1 (over TLS too): no HTTP/2" for protocol in ("h2", "h2c")}
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = "wrk never checks the server's certificate: it has no option to trust a CA file"
    workload_features = wrk_workload.FEATURES

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        return found_by_version(host, path or "wrk", ["-v"], _VERSION)

    def supports(self, cell: "Cell") -> Support:
        if cell.rate_rps is not None:
            return Support(False, "wrk has no fixed-rate (open model) mode (that is wrk2)")
        if cell.stop.duration_s is None:
            return Support(False, "wrk runs for a duration only: it has no request count")
        if cell.workload is not None:
            return wrk_workload.supports(cell) or SUPPORTED
        req = cell.request
        if req.method != "GET" or req.body is not None:
            return Support(False, "wrk sends a method or body only from a Lua script; toolbench's is fixed and "
                                  "sends wrk's plain GET")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None and cell.stop.duration_s is not None, "supports() and the runner see to both"
        if cell.workload is not None:
            return _workload_invocation(cell, found)
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
        if text.lstrip().startswith(wrk_workload.REQUESTS_HEAD):
            return "requests"
        return "json" if text.lstrip().startswith('{"toolbench_wrk_done"') else "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        # The engine prints a wrk-like head too, with "workers" where wrk says "threads".
        return text.lstrip().startswith('{"toolbench_wrk_done"') or bool(_SUMMARY_HEAD.search(text))

    def parts(self, raw: RawOutput) -> list[str]:
        runs = wrk_runs.split(raw.stdout)
        return [run.name for run in runs] if len(runs) > 1 else []

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def _workload_invocation(cell: "Cell", found: Found) -> Invocation:
    """A workload: one thread per connection, each a user (adapters/wrk_workload.py)."""
    assert cell.workload is not None and cell.stop.duration_s is not None
    argv = [found.path, "-t", str(cell.concurrency), "-c", str(cell.concurrency),
            "-d", f"{max(1, math.ceil(cell.stop.duration_s))}s", "--latency",
            "--timeout", f"{option(cell, 'timeout_s', 30)}s", "-s", wrk_workload.SCRIPT, cell.url or ""]
    files = {wrk_workload.SCRIPT: wrk_workload.script(cell)}
    data = wrk_workload.data_text(cell.workload)
    if data is not None:
        files[wrk_workload.DATA_FILE] = data
    return Invocation(argv=argv, files=files, outputs={"json": RESULT_FILE, "requests": wrk_workload.REQUESTS_FILE})


def done_script() -> str:
    return resources.files("toolbench.adapters").joinpath("templates", SCRIPT).read_text(encoding="utf-8")


def parse(raw: RawOutput) -> Measurement:
    num = Numbers("wrk", raw.source)
    runs = wrk_runs.split(raw.stdout)
    if raw.part == "all":
        return _merged(runs, raw, num)
    if raw.part:
        return _part(runs, raw, num)
    if len(runs) > 1:
        raise ParseError("wrk", f"the output holds {len(runs)} runs ({wrk_runs.listed(runs)}): "
                         "`toolbench parse` reads each alone, or all merged with --merge-runs", raw.source)
    run = runs[0] if runs else None
    summary = wrk_text.read(run.text, num) if run else None
    done = _done(raw.files.get("json"), num)
    if summary is None and done is None:
        raise ParseError("wrk", f"no summary in the output; {_said(raw)}", raw.source)
    notes = list(run.notes) if run else []
    if done is not None:
        summary = _from_done(done, summary, num)
    assert summary is not None
    m = measurement(summary, notes, num)
    if done is not None and "requests" in raw.files:
        m = wrk_workload.with_requests(m, raw.files["requests"], num)
    return m


def _said(raw: RawOutput) -> str:
    """What wrk wrote to stderr (its last line), or its error lines merged into the output."""
    said = raw.stderr.strip().splitlines()[-1:]
    if said:
        return f"wrk said: {said[0][:200]}"
    merged = wrk_runs.strays(raw.stdout)
    if merged:
        return f"the output holds wrk's error line: {merged[-1][:200]}"
    return "nothing on stderr"


def _part(runs: list[wrk_runs.Run], raw: RawOutput, num: Numbers) -> Measurement:
    run = next((r for r in runs if r.name == raw.part), None)
    if run is None:
        raise ParseError("wrk", f"the output holds the runs {wrk_runs.listed(runs) or 'none'}, "
                         f"not {raw.part}", raw.source)
    summary = wrk_text.read(run.text, num)
    if summary is None:
        raise ParseError("wrk", f"{run.name} has no summary line (N requests in T, B read)", raw.source)
    notes = [*run.notes, *([_DONE_UNUSED] if "json" in raw.files else [])]
    if run.name == wrk_runs.heading_name(run.heading):
        notes.append(f"named from its heading in the output: {run.heading.strip()[:80]!r}")
    return measurement(summary, notes, num)


def _merged(runs: list[wrk_runs.Run], raw: RawOutput, num: Numbers) -> Measurement:
    summaries = [wrk_text.read(run.text, num) for run in runs]
    if not summaries or any(s is None for s in summaries):
        raise ParseError("wrk", "--merge-runs: not every run of the output has a summary line", raw.source)
    merged = wrk_runs.merge([s for s in summaries if s is not None], [run.name for run in runs])
    notes = wrk_runs.compact([note for run in runs for note in run.notes])
    return measurement(merged, notes + ([_DONE_UNUSED] if "json" in raw.files else []), num)


def measurement(s: Summary, notes: list[str], num: Numbers) -> Measurement:
    """The Measurement of one run's figures (or of runs merged)."""
    fidelity: dict[str, Fidelity] = {}
    notes = [*notes, *s.notes]
    return Measurement(
        tool="wrk",
        timing=Timing(duration_s=s.duration_s),
        counts=_counts(s, num, notes, fidelity),
        rates=Rates(rps=s.rps),
        transfer=Transfer(received_bytes=s.bytes),
        latency=s.latency,
        latency_uncorrected=s.uncorrected,
        coordinated_omission=Omission.CORRECTED if s.wrk2 else Omission.NOT_CORRECTED,
        fidelity=fidelity,
        notes=notes,
        url=s.url,
        concurrency=s.connections,
    )


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
        "errors": {kind: num.whole(errors.get(kind), f"errors.{kind}") for kind in ERROR_KINDS},
        "status": num.whole(errors.get("status"), "errors.status"),
        "latency_us": lat,
    }


def _from_done(done: dict[str, Any], text: Summary | None, num: Numbers) -> Summary:
    """wrk's own figures from the done() script, with what only the text says (its rate, URL,
    connections)."""
    return Summary(requests=done["requests"], duration_s=done["duration_s"], errors=done["errors"],
                   status=done["status"], bytes=done["bytes"], rps=text.rps if text else None,
                   latency=_done_latency(done, num), url=text.url if text else None,
                   connections=text.connections if text else None,
                   notes=["latency from wrk's own figures, written by toolbench's done() script: whole microseconds"])


def _counts(s: Summary, num: Numbers, notes: list[str], fidelity: dict[str, Fidelity]) -> Counts:
    """wrk's requests are complete responses; each connect, read or write error and each
    timeout is an attempt that got none, so they are added to the total as failures. wrk
    also counts a response slower than --timeout as a timeout: such a one is counted twice.
    wrk2 counts its timeouts otherwise (below): they are not requests."""
    complete, errors, status = s.requests, dict(s.errors), s.status
    if status > complete:
        raise num.error("Non-2xx or 3xx responses", f"{status} of {complete} requests")
    timeouts = errors["timeout"]
    if s.wrk2 and timeouts:
        notes.append(f"wrk2 counted {timeouts} timeouts: each is a connection found waiting longer than --timeout at "
                     "one of its checks every 2 s (one request can be counted at several), so they are not counted "
                     "as requests")
        errors["timeout"] = 0
    elif timeouts:
        notes.append(f"wrk counted {timeouts} timeouts (requests unanswered for --timeout, or answered "
                     "later than it); each is counted as a failed request")
    by_class = failures.tally({kind: n for kind, n in errors.items()}, FAILURE_TABLE)
    unanswered = sum(errors.values())
    for name in ("counts.requests_total", "counts.requests_ok", "counts.requests_failed"):
        fidelity[name] = Fidelity.DERIVED
    return Counts(requests_total=complete + unanswered, requests_ok=complete - status,
                  requests_failed=status + unanswered,
                  failures=Failures(connect=by_class["connect"], timeout=None if s.wrk2 else by_class["timeout"],
                                    read=by_class["read"], other=by_class["other"], http=status))


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


ADAPTER = WrkAdapter()
