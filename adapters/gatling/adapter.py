"""Gatling 3.x (Maven Central, install.sh beside this module): runs one fixed Java-DSL simulation
with the cell's values as data, and reads its simulation.log (`toolbench parse`: that of any
Gatling from 2.0 to 3.12, each version's layout, see layouts.py).

What Gatling is, and what follows for its results:
- toolbench installs Gatling 3.10.5, whose simulation.log is tab-separated text (3.13 and later
  write a binary log); its records give each request's start and end in
  epoch milliseconds and OK or KO with Gatling's message, nothing more: times are whole
  milliseconds (resolution 1 ms), and there are no bytes, no status of a successful response and
  no connect time. Duration is from the first request's start to the last one's end;
- the simulation (templates/ToolbenchSimulation.java) is the same file for every cell, compiled
  once by the launcher and cached by its hash; the cell's URL, method, headers and body are read
  at run time from gatling_params.json and reach Gatling as session functions and byte arrays,
  never as strings, which Gatling would evaluate as its Expression Language (`#{...}`);
- a rate cell is Gatling's open model, `constantUsersPerSec(rate).during(d)`: a new virtual user
  for each request, injected on schedule whatever the responses do, so a slow response does not
  hold back the next send, and no bound is put on the users in flight (the cell's concurrency
  is not used); each request is still timed from its actual send, so a stalled generator's
  delay is not counted (coordinated omission not corrected). A concurrency cell is
  the closed model, `constantConcurrentUsers(c).during(d)`: a user for each request, replaced as
  it ends; with keep-alive these users share one connection pool (`shareConnections`). A request
  count in the closed model runs c users that loop, each on a connection of its own, over a
  shared budget (`requests`) or N times each (`requests_per_connection`); in the open model it
  injects that many users at the rate. Without keep-alive every request says `Connection: close`;
- a response of 400 or more is a failure (the simulation's check), a redirect is not followed;
- the JVM starts for every cell, with C1 alone as JMeter here (jmeter.JIT): 7 to 13 s from the
  launcher's start to the run's start, and about 1 s more to the first request, on 2 cores shared
  with other work; that is outside the measured duration, not outside the cell's time limit;
- HTTP/1.1 in clear or over TLS, and HTTP/2 over TLS (`enableHttp2()`: by ALPN, through Netty and
  the BoringSSL it ships); no HTTP/2 in clear. Its HTTPS trusts any certificate (a trust store is
  a JKS or PKCS12 file, not the target's PEM): the simulation prints a line saying so, which the
  parser turns into a note."""
from __future__ import annotations

import json
import os
import re
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolbench.adapters.gatling import layouts as gatling_layouts
from toolbench.adapters.gatling import log as gatling_log
from toolbench.adapters.gatling import names as gatling_names
from toolbench.adapters.gatling import workload as gatling_workload
from toolbench.adapters.jmeter.adapter import JIT
from toolbench.contract import toolsdir
from toolbench.contract.adapter import (CLASSIFY_CHARS, SUPPORTED, Adapter, Detection, Found, Invocation, Missing,
                                        RawOutput, Support,
                                        missing_program, option)
from toolbench.contract.recipe import TESTS, Apt, Install, Script
from toolbench.errors import HostError, ParseError
from toolbench.record.schema import Counts, Failures, Fidelity, Latency, Measurement, Omission, Timing
from toolbench.record.timings import SecondTally

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Host

SOURCE, PARAMS, RESULTS, LOG = "ToolbenchSimulation.java", "gatling_params.json", "gatling-results", "simulation.log"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
MAX_USERS = 2 ** 31 - 1  # Gatling counts injected users in a Java int
_VERSION = re.compile(r"^Gatling (\d+)\.(\d+)\.(\d+)[^\S\n]*$", re.MULTILINE)  # within its line
_HEAP = re.compile(r"^\d+[kmgKMG]$")
# The first lines of Gatling's console output (2.0 to 3.13 alike), or its end-of-run summary.
_CONSOLE = re.compile(r"^Simulation \S+ started\.\.\.$|^---- Global Information -{20,}$", re.MULTILINE)
HEAP = "512m"  # the default of tools.gatling.heap
TRUSTS_ALL = "Gatling: certificate not verified (its HTTPS trusts any certificate)"
# What the simulation prints of a TLS cell (templates/ToolbenchSimulation.java), before Gatling's own output.
_SAID_TLS = re.compile(r"^toolbench simulation: over TLS(, HTTP/2 enabled)?;", re.MULTILINE)
JIT_RAMP_S = 2.0  # as JMeter (jmeter.JIT_RAMP_S): a JVM runs its code interpreted until C1 compiles it


def candidates() -> list[str]:
    """Where Gatling is looked for: $TOOLBENCH_GATLING_HOME, then the newest complete
    <tools>/gatling-*/ (`toolbench install gatling`). A `gatling` on the PATH is Gatling's own
    bundle script, which cannot run toolbench's simulation: it is not looked for."""
    found = []
    if os.environ.get("TOOLBENCH_GATLING_HOME"):
        found.append(str(Path(os.environ["TOOLBENCH_GATLING_HOME"], "bin", "gatling")))
    return found + toolsdir.newest("", "gatling", "bin/gatling", complete=".toolbench-complete")


class GatlingAdapter(Adapter):
    name = "gatling"
    # install.sh beside this module builds a Gatling home; a JDK, as javac compiles the fixed
    # simulation once per install.
    install = Install((Apt(("openjdk-17-jdk-headless",), program="javac"),
                       Apt(("maven",), program="mvn", build_only=True),  # resolves the artifacts from Maven Central
                       Script("install.sh", "gatling-3.10.5", package="toolbench.adapters.gatling")), TESTS)
    # heap: the JVM heap (-Xms and -Xmx), e.g. "512m"; timeout_s: each request's timeout.
    option_types = {"heap": str, "timeout_s": int}
    protocols = frozenset({"http1", "https", "h2"})
    protocol_refusals = {"h2c": "Gatling 3.10 speaks HTTP/2 only over TLS, by ALPN (enableHttp2): it has no HTTP/2 "
                                "in clear (prior knowledge)"}
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = TRUSTS_ALL
    workload_features = gatling_workload.FEATURES

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        where = host.which(path) if path else next(filter(None, map(host.which, candidates())), None)
        if where is None:
            if path:
                return missing_program(host, path)
            return Missing(f"Gatling is not installed on {host.label} (run toolbench install gatling)")
        if host.which("javac") is None:
            return Missing(f"Gatling at {where} compiles its simulation with javac: no `javac` on the PATH of "
                           f"{host.label} (install a JDK, e.g. apt-get install openjdk-17-jdk-headless)")
        try:
            captured = host.capture([where, "--version"])
        except HostError as exc:
            return Missing(str(exc))
        said = _VERSION.search(captured.stdout)
        if said is None:
            return Missing(f"{host.label}: {where} --version names no Gatling version: it is not the launcher "
                           "of `toolbench install gatling`")
        version = ".".join(said.groups())
        if (int(said.group(1)), int(said.group(2))) >= (3, 13):
            return Missing(f"{where} is Gatling {version}, whose simulation.log is binary; toolbench reads "
                           f"the text log of {gatling_layouts.TEXT_LINES} (toolbench install gatling)")
        return Found(where, version)

    def ramp_s(self, cell: "Cell") -> float:
        return JIT_RAMP_S

    def supports(self, cell: "Cell") -> Support:
        req = cell.request
        if cell.workload is not None:
            said = gatling_workload.supports(cell, cell.workload)
            if not said.ok:
                return said
        elif req.method not in METHODS:
            return Support(False, f"the simulation here sends {', '.join(METHODS)}, not {req.method}")
        heap = option(cell, "heap", HEAP)
        if not _HEAP.match(str(heap)):
            return Support(False, f"tools.gatling.heap must be a size like 512m or 2g, not {heap!r}")
        total = cell.stop.total_requests(cell.concurrency)
        if total is not None and total > MAX_USERS:
            return Support(False, f"Gatling injects at most {MAX_USERS} users, not {total}")
        duration = cell.stop.duration_s
        if duration is not None and round(duration * 1000) < 1:
            return Support(False, f"Gatling's injection lasts whole milliseconds, not {duration:g}s")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        heap = option(cell, "heap", HEAP)
        if cell.workload is not None:  # a simulation of its own, the workload as its data
            files = {gatling_workload.SOURCE: gatling_workload.simulation_source(),
                     gatling_workload.PARAMS: gatling_workload.params(cell, cell.workload)}
        else:
            files = {SOURCE: simulation_source(), PARAMS: params(cell)}
        return Invocation(argv=[found.path, "run", *files, RESULTS], files=files,
                          outputs={"log": LOG},
                          env={"GATLING_JVM": f"-Xms{heap} -Xmx{heap} -XX:MaxMetaspaceSize=256m {JIT}"})

    def classify(self, path: Path, text: str) -> str:
        # A binary log too, so that parsing it says what it is.
        if gatling_layouts.is_text_log(text.split("\n", 1)[0]) or gatling_layouts.binary_version(text):
            return "log"
        return "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        return gatling_layouts.is_text_log(text.split("\n", 1)[0])

    def unread_form(self, path: Path, text: str) -> str | None:
        version = gatling_layouts.binary_version(text)
        if version is not None:
            return gatling_layouts.binary_refusal(version)
        if console_output(text):
            return ("Gatling's console output, which toolbench does not read: give the run's simulation.log "
                    f"(in its results folder; the text log of {gatling_layouts.TEXT_LINES})")
        return None

    def parts(self, raw: RawOutput) -> list[str]:
        """Logs of several runs put together (`cat`): one result per RUN record."""
        path = raw.files.get("log")
        runs = gatling_log.run_count(path) if path is not None else 0
        return [f"run{n}" for n in range(1, runs + 1)] if runs > 1 else []

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)

    def timings(self, raw: RawOutput) -> SecondTally | None:
        path = raw.files.get("log")
        if path is None or raw.part == "all":  # merged runs may lie days apart: no seconds across them
            return None
        return gatling_log.read(path, raw.source, per_second=True, part=raw.part).tally


def simulation_source() -> str:
    return resources.files("toolbench.adapters.gatling").joinpath(f"templates/{SOURCE}").read_text()


def params(cell: "Cell") -> str:
    """The cell as the simulation reads it: JSON, every value as data."""
    assert cell.url is not None, "the runner resolves the URL before building"
    req = cell.request
    headers = dict(req.headers)
    lowered = {k.lower() for k in headers}
    if req.body is not None and "content-type" not in lowered:
        headers["Content-Type"] = req.content_type or "application/octet-stream"
    duration = cell.stop.duration_s
    data: dict[str, Any] = {
        "url": cell.url, "method": req.method, "headers": sorted(headers.items()), "body": req.body,
        "keepalive": cell.keepalive, "connection_header_given": "connection" in lowered,
        "concurrency": cell.concurrency, "rate_rps": cell.rate_rps,
        "duration_ms": round(duration * 1000) if duration is not None else None,
        "requests": cell.stop.total_requests(cell.concurrency),
        "per_user": cell.stop.requests_per_connection if cell.rate_rps is None else None,
        "timeout_ms": int(option(cell, "timeout_s", 30)) * 1000,
        "http2": cell.protocol == "h2",
    }
    return json.dumps(data, indent=1) + "\n"


def parse(raw: RawOutput) -> Measurement:
    path = raw.files.get("log")
    if path is None:
        raise ParseError("gatling", _no_log(raw), raw.source)
    log = gatling_log.read(path, raw.source, part=raw.part)
    by_class = gatling_log.classes(log)
    durations = log.durations_s()
    merged = raw.part == "all"
    derived = ["timing.duration_s", "histogram", "latency.min_ms", "latency.max_ms", "latency.mean_ms",
               "latency.stdev_ms", *(["series"] if not merged else []),
               *(f"counts.failures.{name}" for name, n in by_class.items() if n)]
    versions = {run.version if run.layout.names_version else None for run in log.runs}
    by_request = gatling_names.by_request(log, sum(durations) if durations else None)
    return Measurement(
        tool="gatling",
        timing=Timing(duration_s=sum(durations) if durations else None),
        counts=Counts(requests_total=log.requests, requests_ok=log.ok, requests_failed=log.failed,
                      failures=Failures(**by_class)),
        latency=Latency(**(log.times.stats_ms() or {}), resolution_ms=1.0),
        histogram=log.times.encoded(),
        histogram_resolution_ms=1.0,
        series=log.times.series() if log.requests and not merged else [],
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity={name: Fidelity.DERIVED for name in derived},
        notes=_notes(log, raw.part) + _tls_notes(raw.stdout)
        + (["figures per request name from the simulation.log's request names"] if by_request else []),
        tool_version=versions.pop() if len(versions) == 1 else None,
        by_request=by_request,
    )


def _no_log(raw: RawOutput) -> str:
    """Why there is nothing to read: Gatling's own last words on stderr, or what was given."""
    said = raw.stderr.strip().splitlines()[-1:]
    if said:
        return f"no simulation.log; Gatling said: {said[0][:200]}"
    given = " (Gatling's console output, which toolbench does not read)" if console_output(raw.stdout) else ""
    return (f"no simulation.log among the files{given}: toolbench reads Gatling's text simulation.log "
            f"({gatling_layouts.TEXT_LINES}), in the run's results folder")


def _notes(log: gatling_log.Log, part: str | None) -> list[str]:
    layouts_read = sorted({run.layout.name for run in log.runs})
    notes = [f"figures from Gatling's simulation.log ({log.requests} requests; the layout of "
             f"{' and '.join(layouts_read)}): times are whole milliseconds, from each request's actual send; "
             "the log has no bytes and no status of a successful response"]
    if any(run.layout.unread_times for run in log.runs):
        notes.append("each request's time is from its send to its response's end (the log's first and fourth times); "
                     "its other two, when the request was sent whole and when the response began, are not read")
    if not all(run.layout.names_version for run in log.runs):
        notes.append("the log names its format (2.0), not the Gatling version that wrote it")
    if part is not None:
        notes.append(_part_note(log, part))
    if log.cut_off():
        notes.append(f"the run was cut off: {log.users_started - log.users_ended} of {log.users_started} users "
                     f"never ended" + ("; the log's last line was torn and is not read" if log.torn else ""))
    unread = [f"{n} {what}" for n, what in (
        (log.groups, "GROUP records (the times of groups of requests)"),
        (log.extra_info, "REQUEST records' extra columns (the simulation's extraInfo)"),
        (log.assertions, "ASSERTION records (the simulation's assertions)")) if n]
    if unread:
        notes.append("not read: " + "; ".join(unread))
    if log.errors:
        notes.append(f"{sum(log.errors.values())} crashed user actions (Gatling's ERROR records), not requests: "
                     + "; ".join(f"{m[:120]} ({n})" for m, n in sorted(log.errors.items(), key=lambda kv: -kv[1])[:3]))
    if log.messages:
        notes.append("Gatling's failure messages: " + "; ".join(
            f"{m[:160]} ({n})" for m, n in sorted(log.messages.items(), key=lambda kv: -kv[1])[:5]))
    return notes


def _tls_notes(stdout: str) -> list[str]:
    """What the simulation said of a TLS cell: Gatling's trust in any certificate, and HTTP/2 asked."""
    said = _SAID_TLS.search(stdout[:CLASSIFY_CHARS])
    if said is None:
        return []
    http2 = "HTTP/2 enabled (enableHttp2: by ALPN, HTTP/1.1 where the server offers only that)"
    return [http2, TRUSTS_ALL] if said.group(1) else [TRUSTS_ALL]


def _part_note(log: gatling_log.Log, part: str) -> str:
    if part == "all":
        spans = ", ".join(f"{d:g} s" for d in log.durations_s())
        return (f"the {log.run_count} runs of the log merged: the duration is the sum of theirs ({spans}); "
                "no per-second series across runs")
    run = log.runs[0]
    started = datetime.fromtimestamp(run.start_ms / 1000, timezone.utc).isoformat(timespec="seconds")
    return f"{part[:3]} {part[3:]} of the {log.run_count} in the log (RUN record of {started})"


def console_output(text: str) -> bool:
    """Whether a text is Gatling's console output (its stdout), from its head."""
    return _CONSOLE.search(text[:CLASSIFY_CHARS]) is not None


ADAPTER = GatlingAdapter()
