"""Locust: writes a locustfile for the cell, runs it headless, reads its JSON
(stdout), its final summary tables (stderr) and its CSV set.

Keep-alive off is a `Connection: close` request header: both FastHttpUser and
HttpUser then open one connection per request (checked against a server that
counts connections), so HttpUser keeps its one session per user rather than
paying for a new session per request.

Locust has no stop after N requests; the locustfile counts them itself (see
templates/locustfile.py). Across `--processes` workers that count would have to be
shared, so such cells are planned as unsupported.

The locustfile is the same file for every cell; the cell's request is data in a JSON
file beside it (PARAMS), so no value from a scenario is ever written into code.

`workers: engine` runs the master alone with the engine's Locust workers instead of
Locust's own (toolbench.engine.locust_cell): the master's output is read as always.

Protocols: HTTP/1.1 in clear or over TLS (the --host's scheme); both user classes' clients,
requests/urllib3 (HttpUser) and geventhttpclient (FastHttpUser), speak HTTP/1.1 only. Over TLS
the locustfile checks the server's certificate against the target's own (`ca_file` in PARAMS:
HttpUser's `verify`, FastHttpUser's SSL context, which by default checks nothing)."""
from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from toolbench.adapters.engine import request_args
from toolbench.adapters.locust import output as out
from toolbench.adapters.locust import workload as locust_workload
from toolbench.adapters.locust.measure import NOTE_PREFIX, parse
from toolbench.contract.adapter import (SUPPORTED, Adapter, Detection, Found, Invocation, RawOutput, Support, Threads,
                                        found_python, group_by_suffix, option)
from toolbench.contract.recipe import TESTS, Install, Venv
from toolbench.record.schema import Measurement

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.distributed import DistributedTool
    from toolbench.contract.host import Host

USER_CLASSES = ("FastHttpUser", "HttpUser")
WORKER_KINDS = ("locust", "engine")
CSV_PREFIX = "stats"
OUTPUTS = {
    "stats_csv": f"{CSV_PREFIX}_stats.csv",
    "history_csv": f"{CSV_PREFIX}_stats_history.csv",
    "failures_csv": f"{CSV_PREFIX}_failures.csv",
    "exceptions_csv": f"{CSV_PREFIX}_exceptions.csv",
}
GROUP_SUFFIXES = ("_stats_history.csv", "_stats.csv", "_failures.csv", "_exceptions.csv", "_requests.csv",
                  "_distribution.csv", ".stderr.txt",
                  ".txt", ".json")
# A run stopped by a request budget still gets a run time, so that a budget the
# target never serves cannot outlive the cell's hard limit without any output.
BUDGET_MARGIN_S = 10
# ... and it stops earlier when no request has succeeded for this long, while some failed.
STALL_S = 5.0
LOCUSTFILE, PARAMS = "locustfile.py", "locust_params.json"
ENGINE_WORKERS_LOG = "engine_workers.txt"  # toolbench.engine.locust_cell.WORKERS_LOG


class LocustAdapter(Adapter):
    name = "locust"
    install = Install((Venv("locust"),), TESTS)
    threads = Threads.PER_PROCESS  # gevent greenlets under the GIL, per process
    # processes: 1 runs one process; N >= 2 runs a master and N workers on this
    # machine (--processes N); -1 is one worker per core.
    # locustfile: a file beside the scenario whose own User classes run instead of the bundled
    # one; it is copied into the cell's folder as is, and reads the cell from locust_params.json.
    # workers_per_host: worker processes on each generator in its distributed mode (default: one per core).
    # workers: whose workers run the users, Locust's own (`locust`) or the engine's (`engine`,
    # `processes` of them: one when it is 1).
    option_types = {"user_class": str, "processes": int, "timeout_s": int, "locustfile": Path,
                    "workers_per_host": int, "workers": str}
    option_choices = {"workers": WORKER_KINDS}

    program = "python"  # run as `python -m locust`: the path is the Python's
    workload_features = locust_workload.FEATURES
    protocols = frozenset({"http1", "https"})
    protocol_refusals = {protocol: "Locust's clients speak HTTP/1.1 only: requests/urllib3 (HttpUser) and "
                                   "geventhttpclient (FastHttpUser) have no HTTP/2"
                         for protocol in ("h2", "h2c")}
    # The contract's TLS_TRUST: a TLS cell of a tool that does not check the certificate says it in a note.
    TLS_TRUST = ("Locust checks the server's certificate, trusting the target's own (toolbench's locustfile sets "
                 "HttpUser's verify or FastHttpUser's SSL context)")

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        return found_python(host, path, "locust", lambda captured: out.version(captured.stdout + captured.stderr))

    def ramp_s(self, cell: "Cell") -> float:
        """Locust spawns its users at the spawn rate (-r): users / rate seconds. Measured here
        (c20, FastHttpUser, 8 s against nginx-static) the first second ran at 40% and 60% of the
        steady rate."""
        return cell.concurrency / spawn_rate(cell)

    def supports(self, cell: "Cell") -> Support:
        user_class = option(cell, "user_class", "FastHttpUser")
        if user_class not in USER_CLASSES:
            return Support(False, f"tools.locust.user_class must be one of {', '.join(USER_CLASSES)}, "
                                  f"not {user_class!r}")
        processes = option(cell, "processes", 1)
        if processes == 0 or processes < -1:
            return Support(False, f"tools.locust.processes must be 1, a count of worker processes or -1 "
                                  f"(one per core), not {processes}")
        if cell.rate_rps is not None:
            return Support(False, "Locust runs a closed model here (no wait between requests); "
                                  "it has no fixed-rate (open model) mode")
        if cell.workload is not None:
            said = locust_workload.supports(cell, cell.workload)
            if not said.ok or cell.workload.stages:  # stages: the shape times the run, not --run-time
                return said
        if cell.stop.requests_per_connection is not None:
            return Support(False, "Locust's users share one request budget here; none stops after its own "
                                  "N requests, so a stop per connection is not supported")
        if option(cell, "locustfile", None) and cell.stop.duration_s is None:
            return Support(False, "a locustfile of the scenario's own times its requests itself; it runs "
                                  "for a duration (its users do not share toolbench's request budget)")
        if option(cell, "workers", "locust") == "engine":
            if cell.stop.duration_s is None:
                return Support(False, "engine workers run until the master's run time ends; a stop after N "
                                      "requests is not supported with them")
            if option(cell, "locustfile", None):
                return Support(False, "engine workers send the scenario's request, not a locustfile's tasks")
            if cell.tls:
                return Support(False, "engine workers in a Locust run send plain HTTP: not over TLS")
        if cell.stop.requests is not None and processes != 1:
            return Support(False, "a stop after N requests is counted inside one Locust process; "
                                  "with several worker processes it is not supported")
        duration = cell.stop.duration_s
        if duration is not None and duration != int(duration):
            return Support(False, f"Locust's --run-time takes whole seconds, not {duration:g}s")
        return SUPPORTED

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None, "the runner resolves the URL before building"
        url = urlsplit(cell.url)
        if cell.workload is not None:
            return locust_workload.invocation(cell, found, f"{url.scheme}://{url.netloc}", CSV_PREFIX, OUTPUTS)
        path = cell.url[len(f"{url.scheme}://{url.netloc}"):] or "/"
        if cell.stop.requests is not None:
            run_time = max(1, int(cell.timeout_s) - BUDGET_MARGIN_S)
        else:
            assert cell.stop.duration_s is not None
            run_time = int(cell.stop.duration_s)
        users = str(cell.concurrency)
        args = ["-f", "locustfile.py", "--headless", "-u", users, "-r", f"{spawn_rate(cell):g}",
                "-t", f"{run_time}s",
                "--host", f"{url.scheme}://{url.netloc}", "--csv", CSV_PREFIX, "--csv-full-history",
                "--json", "--only-summary", "--loglevel", "WARNING",
                # A failed request is counted, not turned into exit code 1: the cell is judged
                # on its counts, as for every other tool.
                "--exit-code-on-error", "0"]
        processes = option(cell, "processes", 1)
        files = {PARAMS: parameters(cell, path)}
        if option(cell, "workers", "locust") == "engine":
            engine, body = engine_worker_args(cell)
            return Invocation(argv=[found.path, "-m", "toolbench.engine.locust_cell", str(processes), *engine,
                                    "--", *args],
                              files={LOCUSTFILE: locustfile(), **files, **body},
                              outputs={**OUTPUTS, "engine_workers_log": ENGINE_WORKERS_LOG})
        if processes == -1 and cell.cpus:  # one per CPU it was given: Locust's own -1 counts the host's
            args += ["--processes", str(cell.cpus)]
        elif processes != 1:
            args += ["--processes", str(processes)]
        given = option(cell, "locustfile", None)
        source = Path(given).read_text(encoding="utf-8") if given else locustfile()
        return Invocation(argv=[found.path, "-m", "locust", *args], files={LOCUSTFILE: source, **files},
                          outputs=dict(OUTPUTS))

    def distributed(self) -> "DistributedTool":
        from toolbench.adapters.locust.distributed import DISTRIBUTED

        return DISTRIBUTED

    def classify(self, path: Path, text: str) -> str:
        return out.classify(text)

    def recognizes(self, path: Path, text: str) -> bool:
        return out.recognizes(text)

    def group_name(self, path: Path) -> str:
        """The run a file belongs to: `--csv X` names Locust's CSVs X_stats.csv and so on."""
        return group_by_suffix(path, GROUP_SUFFIXES)

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def spawn_rate(cell: "Cell") -> float:
    """Users started per second: all of them within the first second."""
    return float(cell.concurrency)


def engine_worker_args(cell: "Cell") -> tuple[list[str], dict[str, str]]:
    """`toolbench engine`'s arguments for a Locust worker sending the cell's request (the
    master adds --locust-master), and the body's file."""
    assert cell.url is not None, "the runner resolves the URL before building"
    request, files = request_args(cell)
    argv = [cell.url, "--timeout", str(option(cell, "timeout_s", 30)), *request]
    if not cell.keepalive:
        argv.append("--no-keepalive")
    return argv, files


def locustfile() -> str:
    return resources.files("toolbench.adapters.locust").joinpath(f"templates/{LOCUSTFILE}").read_text()


def parameters(cell: "Cell", path: str) -> str:
    """The cell's request as JSON, for the locustfile to read."""
    user_class = option(cell, "user_class", "FastHttpUser")
    assert user_class in USER_CLASSES, "supports() turns other classes away"
    req = cell.request
    headers = dict(req.headers)
    if req.body is not None and req.content_type:
        headers["Content-Type"] = req.content_type
    if not cell.keepalive:
        headers["Connection"] = "close"
    return json.dumps({"cell": cell.id, "user_class": user_class, "method": req.method, "path": path,
                       "headers": headers, "body": req.body, "timeout_s": float(option(cell, "timeout_s", 30)),
                       "budget": cell.stop.requests, "stall_s": STALL_S, "note_prefix": NOTE_PREFIX,
                       "ca_file": cell.ca_file if cell.tls else None},
                      indent=2, sort_keys=True) + "\n"


ADAPTER = LocustAdapter()
