"""Apache JMeter: finds it, writes a test plan (JMX) for the cell, runs it in non-GUI
mode and reads its JTL (CSV or XML) and its console summariser.

What JMeter is, and what follows for its results:
- it exits 0 even when every sample failed, and also when it could not run the plan at
  all (Debian 12's JMeter 2.13 prints `Error in NonGUIDriver ...ForbiddenClassException`
  and writes no JTL): a run without samples is an error here, never an empty result;
- its times are whole milliseconds (resolution 1 ms): 0 means "under a millisecond";
- a sample's `bytes` on a connection failure is the size of the Java stack trace
  JMeter stores as the response: only samples with an HTTP status count as received;
- a stop after N requests is a loop count per thread: ceil(N / threads) loops, so a
  count that is not a multiple of the threads is rounded up (the plan says so);
- it evaluates `${...}` in every string of a test plan as a variable or a function
  (`${__groovy(...)}` runs code): every value reaches the plan through one filter,
  `jmeter_plan.jmx_value`, which escapes it for XML and makes it literal for JMeter; the
  body goes in a file JMeter sends as it is;
- HTTP/1.1 in clear or over TLS (the URL's scheme is the sampler's protocol, HttpClient4); JMeter
  5.6 has no HTTP/2 without a plugin. Its HTTPS trusts any certificate (no check, and no CA to
  give it short of a keystore of its own): a JTL whose URL is https says so in a note."""
from __future__ import annotations

import dataclasses
import os
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from toolbench.adapters.jmeter import workload_plan
from toolbench.adapters.jmeter.agg import Aggregate, Batch, Jtl
from toolbench.adapters.jmeter.labels import with_labels
from toolbench.adapters.jmeter.layout import is_csv_jtl
from toolbench.adapters.jmeter.plan import BODY, NOT_XML, test_plan
from toolbench.adapters.jmeter.reader import read_jtl
from toolbench.adapters.jmeter.runs import MIN_GAP_S, count_runs, read_merged, read_run, run_windows
from toolbench.adapters.jmeter.summary import SUMMARY, measurement_of, summary_of
from toolbench.contract import toolsdir
from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, Missing, RawOutput, Support,
                                        Threads, missing_program, option)
from toolbench.contract.recipe import TESTS, Apt, Install, Script
from toolbench.errors import HostError, ParseError
from toolbench.record.schema import Counts, Fidelity, Latency, Measurement, Omission, Rates, Timing, Transfer
from toolbench.record.timings import SecondTally

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.distributed import DistributedTool
    from toolbench.contract.host import Host

PLAN, JTL, LOG = "plan.jmx", "results.jtl", "jmeter.log"
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
DEBIAN_213 = ("Debian's JMeter 2.13 cannot run test plans on Debian 12 (xstream ForbiddenClassException); "
              "run `toolbench install jmeter`")
# Every column the parser reads, saved whatever a user's jmeter.properties says.
SAVE = ("time", "timestamp_format=ms", "label", "response_code", "response_message", "successful",
        "thread_name", "data_type", "assertion_results_failure_message", "bytes", "sent_bytes",
        "thread_counts", "url", "latency", "idle_time", "connect_time")
_BANNER_VERSION = re.compile(r"\\_\\\s+(\d+(?:\.\d+)+)")  # the last line of the ASCII banner
_LINE_VERSION = re.compile(r"^Version (\d+\.\d+(?:\.\d{1,3})?)\b", re.MULTILINE)  # 2.x: "Version 2.13.19691222"
JIT_RAMP_S = 2.0  # see JMeterAdapter.ramp_s
C2_RAMP_S = 8.0  # with `jit: default`: the steady rate after 5 to 8 s (ramp_s)
TRUSTS_ALL = "JMeter: certificate not verified (its HTTPS trusts any certificate)"
# Only the quick (C1) compiler: with C2 as well the samplers ran at about interpreted speed for
# most of a 10 s cell on 2 busy cores (study 001: 183/s at a mean 44.5 ms, as with -Xint here: 149-193/s at 43-53 ms);
# C1 reached the steady rate by the 3rd second and ran 1.2x to 11x more requests in 10 s cells,
# interleaved with the default, 5 of 5 times (docs/studies/001.md, JMeter).
JIT = "-XX:TieredStopAtLevel=1"
_HEAP = re.compile(r"^\d+[kmgKMG]$")


class JMeterAdapter(Adapter):
    name = "jmeter"
    # install.sh beside this module builds a JMeter home from its artifacts on Maven Central.
    install = Install((Apt(("openjdk-17-jdk-headless",), program="java"),
                       Apt(("maven",), program="mvn", build_only=True),  # resolves the artifacts from Maven Central
                       Script("install.sh", "jmeter-5.6.3", package="toolbench.adapters.jmeter")), TESTS)
    threads = Threads.ALL  # a Java thread per user
    # heap: the JVM heap (-Xms and -Xmx), e.g. "1g"; timeout_s: connect and response timeouts;
    # server_port, rmi_port, client_rmi_port: the pinned RMI ports of its distributed mode
    # (adapters/jmeter/distributed.py); jit: "c1" (the default: the JVM's quick compiler only,
    # -XX:TieredStopAtLevel=1, see JIT) or "default" (the JVM's own tiered C1 + C2).
    option_types = {"heap": str, "timeout_s": int, "server_port": int, "rmi_port": int, "client_rmi_port": int,
                    "jit": str}
    option_choices = {"jit": ("c1", "default")}
    workload_features = workload_plan.FEATURES
    protocols = frozenset({"http1", "https"})
    protocol_refusals = {protocol: "JMeter 5.6's HTTP sampler (HttpClient4) speaks HTTP/1.1 only: HTTP/2 needs a "
                                   "plugin (such as jmeter-http2-plugin), which toolbench does not install"
                         for protocol in ("h2", "h2c")}
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = TRUSTS_ALL

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        """The JMeter that build() will run on this host: at `path`, else the first of
        candidates(). One that is there but cannot run (no Java, Debian's 2.13) is Missing,
        with the reason."""
        where = host.which(path) if path else locate(host)
        if where is None:
            return missing_program(host, path or "jmeter")
        java_home = None if host.remote else os.environ.get("JAVA_HOME")  # this process's, so this machine's
        if host.which("java") is None and not (java_home and Path(java_home, "bin", "java").exists()):
            return Missing(f"JMeter at {where} needs Java: no `java` on the PATH of {host.label} and no "
                           "JAVA_HOME (install a JRE, e.g. apt-get install default-jre-headless)")
        try:
            captured = host.capture([where, "--version", "-j", "/dev/null"], timeout_s=60)
        except HostError as exc:
            return Missing(str(exc))
        version = parse_version(captured.stdout + captured.stderr)
        if version is None:
            last = (captured.stderr.strip() or captured.stdout.strip()).splitlines()[-1:] or ["no output"]
            return Missing(f"{where} --version exited {captured.exit_code} without a version: {last[0][:200]}")
        if int(version.split(".")[0]) < 3:
            return Missing(f"{where} is JMeter {version}: {DEBIAN_213}")
        return Found(where, version)

    def ramp_s(self, cell: "Cell") -> float:
        """The plan starts every thread at once (ramp-up 0), but the JVM runs its samplers
        interpreted until the JIT has compiled them: measured here (c20, keep-alive, 8 s
        against nginx-static, 2 cores under load), the first second ran at 9% and 60% of the
        steady rate and the steady rate came after 1 to 4 s; issue 12's 2.9x lower rate in a 3 s
        cell than in a 5 s one means about 2.5 s lost. That was with the C2 compiler too; with
        it, c10 on the machine loaded by other work, the steady rate came after 5 to 8 s or not
        within 10 s, with C1 alone (JIT) by the 3rd second. The JVM's start itself is outside the
        measured duration (it runs from the first sample)."""
        return JIT_RAMP_S if option(cell, "jit", "c1") == "c1" else C2_RAMP_S

    def supports(self, cell: "Cell") -> Support:
        if cell.rate_rps is not None:
            return Support(False, "JMeter runs a closed model here (threads without timers); "
                                  "it has no fixed-rate (open model) plan")
        duration = cell.stop.duration_s
        if duration is not None and (duration != int(duration) or duration < 1):
            return Support(False, f"JMeter's scheduler takes whole seconds, not {duration:g}s")
        if cell.workload is not None:
            said = workload_plan.supports(cell, cell.workload)
            if not said.ok:
                return said
        req = cell.request
        if req.method not in METHODS:
            return Support(False, f"the HTTP sampler here sends {', '.join(METHODS)}, not {req.method}")
        if req.body is not None and req.method not in ("POST", "PUT", "PATCH", "DELETE"):
            return Support(False, f"JMeter sends a body with POST, PUT, PATCH or DELETE, not {req.method}")
        texts = [req.path, *req.headers.keys(), *req.headers.values()]
        if any(NOT_XML.search(text) for text in texts):
            return Support(False, "a JMeter test plan (XML) cannot carry control characters in the path or headers")
        if not _HEAP.match(str(option(cell, "heap", "1g"))):
            return Support(False, f"tools.jmeter.heap must be a size like 512m or 2g, "
                                  f"not {option(cell, 'heap', '1g')!r}")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None, "the runner resolves the URL before building"
        heap = option(cell, "heap", "1g")
        jit = f" {JIT}" if option(cell, "jit", "c1") == "c1" else ""
        jvm_heap = f"-Xms{heap} -Xmx{heap} -XX:MaxMetaspaceSize=256m{jit}"
        argv = [found.path, "-n", "-t", PLAN, "-l", JTL, "-j", LOG,
                "-Jjmeter.save.saveservice.output_format=csv",
                "-Jjmeter.save.saveservice.print_field_names=true",
                "-Jjmeter.save.saveservice.default_delimiter=,",
                *(f"-Jjmeter.save.saveservice.{key}" if "=" in key else f"-Jjmeter.save.saveservice.{key}=true"
                  for key in SAVE),
                "-Jsummariser.interval=5",
                # No UDP port for shutdown messages: runs side by side must not compete for one.
                "-Jjmeterengine.nongui.port=0"]
        if cell.workload is not None:
            url = urlsplit(cell.url)
            files = workload_plan.files(cell, cell.workload, url.hostname or "",
                                        url.port or (443 if url.scheme == "https" else 80), url.scheme)
        else:
            files = {PLAN: test_plan(cell)}
            if cell.request.body is not None:
                files[BODY] = cell.request.body
        return Invocation(argv=argv, files=files, outputs={"jtl": JTL, "log": LOG},
                          # The wrapper of install.sh (beside this module) reads JMETER_HEAP, JMeter's own script HEAP.
                          env={"JMETER_HEAP": jvm_heap, "HEAP": jvm_heap})

    def distributed(self) -> "DistributedTool":
        from toolbench.adapters.jmeter.distributed import DISTRIBUTED

        return DISTRIBUTED

    def classify(self, path: Path, text: str) -> str:
        head = text.lstrip("\ufeff")[:300]
        if "<jmeterTestPlan" in head or path.suffix == ".jmx":
            return "plan"
        if "<testResults" in head or is_csv_jtl(text):
            return "jtl"
        if path.suffix == ".log":
            return "log"
        return "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        if path.suffix == ".log" and re.search(r" (INFO|WARN|ERROR) +(- )?(o\.a\.j|jmeter)\.", text):
            return True  # jmeter.log
        return self.classify(path, text) in ("plan", "jtl") or SUMMARY.search(text) is not None

    def parts(self, raw: RawOutput) -> list[str]:
        """A JTL appended to by run after run (CSV or XML): one result per run (runs.py)."""
        path = raw.files.get("jtl")
        if path is None:
            return []
        windows = run_windows(path)
        return [f"run{n}" for n in range(1, len(windows) + 1)] if len(windows) > 1 else []

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)

    def timings(self, raw: RawOutput) -> SecondTally | None:
        path = raw.files.get("jtl")
        if path is None:
            return None
        timed = _Timed()
        read_jtl(path, timed)
        return timed.tally


def parse_version(text: str) -> str | None:
    match = _BANNER_VERSION.search(text) or _LINE_VERSION.search(text)
    return match.group(1) if match else None


# ---- where JMeter is ----

def candidates() -> list[str]:
    """Where JMeter is looked for, in order: $TOOLBENCH_JMETER_HOME, the newest complete
    <tools>/jmeter-*/ (`toolbench install jmeter`), then `jmeter` on PATH."""
    found = []
    if os.environ.get("TOOLBENCH_JMETER_HOME"):
        found.append(str(Path(os.environ["TOOLBENCH_JMETER_HOME"], "bin", "jmeter")))
    found += toolsdir.newest("", "jmeter", "bin/jmeter", complete="bin/ApacheJMeter.jar")
    found.append("jmeter")
    return found


def locate(host: "Host") -> str | None:
    """The first of candidates() that is on this host (the paths are checked there)."""
    for candidate in candidates():
        path = host.which(candidate)
        if path is not None:
            return path
    return None


# ---- reading a run ----

class _Timed(Aggregate):
    """The sums of a JTL and each sample's start second and elapsed time (whole ms)."""

    def __init__(self) -> None:
        super().__init__()
        self.tally = SecondTally()

    def add(self, b: Batch) -> None:
        super().add(b)  # checks the batch first
        self.tally.add(b.ts_ms // 1000, b.elapsed_ms)


def parse(raw: RawOutput) -> Measurement:
    _refuse_failed_start(raw)
    summary = summary_of(raw.stdout, raw.source)
    if summary is None and raw.files.get("log") is not None:
        summary = summary_of(_read_log(raw.files["log"], raw.source), raw.source)
    path = raw.files.get("jtl")
    if path is not None and raw.part == "all":
        return _from_runs(path)
    if path is not None and raw.part:
        return _from_run(path, raw.part)
    if path is not None and "jmeter_subsamples" in raw.read_options:
        agg = Aggregate()
        agg.subsamples = True
        return _from_jtl(read_jtl(path, agg), None)
    if path is not None:
        jtl = _read_one_run(path)
        return with_labels(_from_jtl(jtl, summary), path, jtl)  # per request name, failed checks
    if summary is not None:
        return measurement_of(summary)
    raise ParseError("jmeter", "no JTL and no summariser line (`summary =`) on stdout or in jmeter.log"
                     + _last_words(raw), raw.source)


def _read_one_run(path: Path) -> Jtl:
    try:
        return read_jtl(path)
    except ParseError:
        if (runs := count_runs(path)) > 1:
            raise ParseError("jmeter", f"the JTL holds {runs} test runs, appended days apart: `toolbench parse` "
                             f"reads each as a result of its own", str(path)) from None
        raise


def _from_run(path: Path, part: str) -> Measurement:
    """One run of a JTL that holds several; the console output is no run's in particular."""
    n = int(part.removeprefix("run"))
    jtl, runs = read_run(path, n)
    agg = jtl.aggregate
    measurement = _from_jtl(jtl, None)
    first = datetime.fromtimestamp((agg.ts_min or 0) / 1000, timezone.utc).isoformat(timespec="seconds")
    if any(note.startswith("timeStamp is a date") for note in jtl.notes):
        first = first.removesuffix("+00:00") + " (JMeter's local time)"
    measurement.notes.append(f"run {n} of the {runs} in the JTL, started {first}: the JTL's samples "
                             f"fall into runs apart by silences of more than {MIN_GAP_S} s")
    return measurement


def _from_runs(path: Path) -> Measurement:
    """The runs of a JTL that holds several, merged (parse --merge-runs): their samples summed,
    their durations added; no per-second series, as the runs lie days apart."""
    merged, durations = read_merged(path)
    measurement = _from_jtl(merged, None)
    notes = [*measurement.notes, f"{len(durations)} runs of the JTL merged: the duration is the sum of theirs "
             f"({', '.join(f'{d:g} s' for d in durations)}); no per-second series across runs days apart"]
    return dataclasses.replace(measurement, timing=Timing(duration_s=sum(durations)), series=[], notes=notes)


def _refuse_failed_start(raw: RawOutput) -> None:
    """JMeter exits 0 when it cannot load the plan; these runs have no result to read."""
    for line in raw.stdout.splitlines() + raw.stderr.splitlines():
        if "Error in NonGUIDriver" in line:
            why = f"; {DEBIAN_213}" if "ForbiddenClassException" in line else ""
            raise ParseError("jmeter", f"JMeter could not run the test plan: {line.strip()[:300]}{why}", raw.source)
        if line.startswith("An error occurred:"):
            raise ParseError("jmeter", f"JMeter could not start: {line.strip()[:300]}", raw.source)


def _last_words(raw: RawOutput) -> str:
    lines = [line for line in (raw.stderr + "\n" + raw.stdout).splitlines()
             if line.strip() and not line.startswith("WARN StatusConsoleListener")]
    return f" (last output: {lines[-1].strip()[:200]})" if lines else ""


def _read_log(path: Path, source: str | None) -> str:
    try:
        return path.read_text(errors="replace")
    except OSError as exc:
        raise ParseError("jmeter", f"cannot read {path}: {exc.strerror or exc}", source) from None


def _from_jtl(jtl: Jtl, summary: dict[str, float] | None) -> Measurement:
    agg = jtl.aggregate
    notes = [f"figures from the JTL ({jtl.kind}, {agg.rows} samples); times are whole milliseconds", *jtl.notes]
    if agg.subsamples:
        notes.append(f"sub-samples counted instead of their parents ({agg.sub_rows} sub-samples; "
                     f"{agg.transaction_rows} transaction controller samples not counted)")
    elif agg.sub_rows or agg.transaction_rows:
        notes.append(f"top-level samples only: {agg.sub_rows} sub-results (redirects followed, embedded "
                     f"resources) and {agg.transaction_rows} transaction controller samples are not counted "
                     f"as requests of their own")
    if agg.in_parents:
        notes.append(f"{agg.in_parents} requests nested in transaction controllers' parent samples (\"generate "
                     f"parent sample\") are counted as requests: JMeter's summariser skips a transaction's sample, "
                     f"and the requests in it with it")
    derived = ["timing.duration_s", "histogram", "series", "transfer.received_bytes", "transfer.sent_bytes",
               "latency.min_ms", "latency.max_ms", "latency.mean_ms", "latency.stdev_ms",
               "latency.ttfb_mean_ms", "latency.connect_mean_ms"]
    derived += [f"counts.failures.{name}" for name in agg.classes]
    if summary is not None and summary["count"] != agg.rows:
        why = (" (the summariser skips transaction controllers' samples, and with \"generate parent sample\" the "
               "requests in them too)") if agg.transaction_rows else ""
        notes.append(f"the summariser counted {summary['count']} samples, the JTL has {agg.rows}{why}")
    stats = agg.elapsed_stats() or {}
    return Measurement(
        tool="jmeter",
        coordinated_omission=Omission.NOT_CORRECTED,  # each request timed from its actual send
        timing=Timing(duration_s=agg.duration_s()),
        counts=Counts(requests_total=agg.rows, requests_ok=agg.ok, requests_failed=agg.rows - agg.ok,
                      failures=agg.failures(), status_codes=agg.status_codes()),
        rates=Rates(rps=summary["rate"] if summary else None),
        transfer=Transfer(received_bytes=agg.received, sent_bytes=agg.sent),
        latency=Latency(**stats, ttfb_mean_ms=agg.latency_mean_ms(), connect_mean_ms=agg.connect_mean_ms(),
                        resolution_ms=1.0),
        histogram=agg.histogram(),
        histogram_resolution_ms=1.0,  # JMeter times whole milliseconds
        series=agg.series(),
        fidelity={name: Fidelity.DERIVED for name in derived},
        notes=notes + ([TRUSTS_ALL] if (jtl.url or "").startswith("https://") else []),
        url=jtl.url,
        concurrency=agg.threads_max,
    )


ADAPTER = JMeterAdapter()
