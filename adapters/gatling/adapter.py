"""Gatling 3.x (Maven Central, install.sh beside this module): runs one fixed Java-DSL simulation
with the cell's values as data, and reads its simulation.log.

What Gatling is, and what follows for its results:
- toolbench installs Gatling 3.10.5, the last line that writes simulation.log as tab-separated
  text (3.11 and later write a binary log); its records give each request's start and end in
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
  with other work; that is outside the measured duration, not outside the cell's time limit."""
from __future__ import annotations

import json
import os
import re
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolbench.adapters.gatling import log as gatling_log
from toolbench.adapters.jmeter.adapter import JIT
from toolbench.contract import toolsdir
from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, Missing, RawOutput, Support,
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
HEAP = "512m"  # the default of tools.gatling.heap
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
        if (int(said.group(1)), int(said.group(2))) >= (3, 11):
            return Missing(f"{where} is Gatling {version}, whose simulation.log is binary; toolbench reads "
                           "the text log of 3.10 and earlier (toolbench install gatling)")
        return Found(where, version)

    def ramp_s(self, cell: "Cell") -> float:
        return JIT_RAMP_S

    def supports(self, cell: "Cell") -> Support:
        req = cell.request
        if req.method not in METHODS:
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
        return Invocation(argv=[found.path, "run", SOURCE, PARAMS, RESULTS],
                          files={SOURCE: simulation_source(), PARAMS: params(cell)},
                          outputs={"log": LOG},
                          env={"GATLING_JVM": f"-Xms{heap} -Xmx{heap} -XX:MaxMetaspaceSize=256m {JIT}"})

    def classify(self, path: Path, text: str) -> str:
        if gatling_log.RUN.match(text.split("\n", 1)[0]) or text.startswith("ASSERTION\t"):
            return "log"
        return "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        return self.classify(path, text) == "log"

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)

    def timings(self, raw: RawOutput) -> SecondTally | None:
        path = raw.files.get("log")
        if path is None:
            return None
        return gatling_log.read(path, raw.source, per_second=True).tally


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
    }
    return json.dumps(data, indent=1) + "\n"


def parse(raw: RawOutput) -> Measurement:
    path = raw.files.get("log")
    if path is None:
        said = (raw.stderr.strip() or raw.stdout.strip()).splitlines()[-1:] or ["nothing"]
        raise ParseError("gatling", f"no simulation.log; Gatling said: {said[0][:200]}", raw.source)
    log = gatling_log.read(path, raw.source)
    by_class = gatling_log.classes(log)
    notes = [f"figures from Gatling's simulation.log ({log.requests} requests): times are whole milliseconds, "
             "from each request's actual send; the log has no bytes and no status of a successful response"]
    if log.cut_off():
        notes.append(f"the run was cut off: {log.users_started - log.users_ended} of {log.users_started} users "
                     f"never ended" + ("; the log's last line was torn and is not read" if log.torn else ""))
    if log.errors:
        notes.append(f"{sum(log.errors.values())} crashed user actions (Gatling's ERROR records), not requests: "
                     + "; ".join(f"{m[:120]} ({n})" for m, n in sorted(log.errors.items(), key=lambda kv: -kv[1])[:3]))
    if log.messages:
        notes.append("Gatling's failure messages: " + "; ".join(
            f"{m[:160]} ({n})" for m, n in sorted(log.messages.items(), key=lambda kv: -kv[1])[:5]))
    stats = log.times.stats_ms() or {}
    duration = (log.last_ms - log.first_ms) / 1000.0 if log.first_ms is not None and log.last_ms is not None else None
    derived = ["timing.duration_s", "histogram", "series", "latency.min_ms", "latency.max_ms", "latency.mean_ms",
               "latency.stdev_ms", *(f"counts.failures.{name}" for name, n in by_class.items() if n)]
    return Measurement(
        tool="gatling",
        timing=Timing(duration_s=duration),
        counts=Counts(requests_total=log.requests, requests_ok=log.ok, requests_failed=log.failed,
                      failures=Failures(**by_class)),
        latency=Latency(**stats, resolution_ms=1.0),
        histogram=log.times.encoded(),
        histogram_resolution_ms=1.0,
        series=log.times.series() if log.requests else [],
        coordinated_omission=Omission.NOT_CORRECTED,
        fidelity={name: Fidelity.DERIVED for name in derived},
        notes=notes,
        tool_version=log.version,
    )


ADAPTER = GatlingAdapter()
