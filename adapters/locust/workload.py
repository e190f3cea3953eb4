"""A cell's workload (toolbench.scenario.workload) for Locust: what Locust can express of one,
and the files that make it run.

The locustfile (templates/workload_locustfile.py) is the same for every workload: the requests,
checks, data and stages are JSON beside it (WORKLOAD), and the data file is copied beside it
(DATA), so no value of a scenario is written into code. Sequence is a SequentialTaskSet, a mix
the user's tasks with whole weights in the asked proportion, think time `constant`/`between`,
stages a LoadTestShape; a failed check is marked with `catch_response` under CHECK_PREFIX, which
the parser (output.classify_errors) counts as the `check` class."""
from __future__ import annotations

import json
from dataclasses import asdict
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING

from toolbench.adapters import workload_requests
from toolbench.contract.adapter import SUPPORTED, Found, Invocation, Support, option
from toolbench.contract.workload import FeatureSupport, honoured
from toolbench.errors import AdapterError
from toolbench.scenario.workload import Workload, WorkloadRequest

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell

LOCUSTFILE, WORKLOAD, DATA = "locustfile.py", "locust_workload.json", "workload_data.csv"
CHECK_PREFIX = "toolbench check failed: "
# Locust repeats each task as often as its weight in the list it picks from: weights are made
# whole numbers in the same proportion, up to this many entries in all.
MAX_WEIGHT_SUM = 1000

FEATURES: dict[str, FeatureSupport] = {
    "sequence": honoured(),  # a SequentialTaskSet
    "mix": honoured(),  # task weights
    "data": honoured(),  # the CSV's rows, shared by one process's users
    "extract": honoured(),  # response.json() / re, into the user's own variables
    "think": honoured(),  # constant() / between(): Locust waits after each request
    "checks": honoured(),  # catch_response, marked as failed with CHECK_PREFIX
    "stages": honoured(),  # a LoadTestShape, users only (an open-model rate is refused by supports)
    "per_request": honoured(),  # a stats entry per name
}


def supports(cell: "Cell", workload: Workload) -> Support:
    """What of a workload cell Locust here cannot run (the feature table aside)."""
    if cell.stop.duration_s is None:
        return Support(False, "a Locust workload runs for a duration (stop.duration or its stages); its users "
                              "do not share a request budget")
    if option(cell, "locustfile", None):
        return Support(False, "a locustfile of the scenario's own and a workload exclude each other: the "
                              "workload is toolbench's locustfile")
    if option(cell, "workers", "locust") == "engine":
        return Support(False, "engine workers send one request, not a workload")
    if workload.data is not None and option(cell, "processes", 1) != 1:
        return Support(False, "each Locust worker process would read the data file from its first row: "
                              "a workload with data runs in one process")
    if workload.stages and workload.stages[0].users is None:
        return Support(False, "Locust runs a closed model (users): stages of a request rate are not supported")
    return SUPPORTED


def whole_weights(requests: tuple[WorkloadRequest, ...]) -> list[int]:
    """The weights as whole numbers in the same proportion (to 1/1000 of each), smallest terms."""
    return workload_requests.whole_weights(requests, 1000, MAX_WEIGHT_SUM, "locust")


def workload_json(cell: "Cell", workload: Workload, user_class: str) -> str:
    """The workload as the locustfile reads it."""
    weights = whole_weights(workload.requests)
    requests = []
    for request, weight in zip(workload.requests, weights):
        headers = dict(request.headers)
        requests.append({
            "name": request.name, "method": request.method, "path": request.path, "query": dict(request.query),
            "headers": headers, "body": request.body, "weight": weight,
            "extract": [asdict(e) for e in request.extract],
            "checks": asdict(request.checks) if request.checks is not None else None})
    data = workload.data
    return json.dumps({
        "cell": cell.id, "user_class": user_class, "order": workload.order, "requests": requests,
        "data": {"file": DATA, "per": data.per, "at_end": data.at_end} if data is not None else None,
        "think": asdict(workload.think) if workload.think is not None else None,
        "stages": [{"duration_s": s.duration_s, "users": s.users} for s in workload.stages],
        "timeout_s": float(option(cell, "timeout_s", 30)),
        "extra_headers": {} if cell.keepalive else {"Connection": "close"},
        "check_prefix": CHECK_PREFIX, "ca_file": cell.ca_file if cell.tls else None,
    }, indent=2, sort_keys=True) + "\n"


def files(cell: "Cell", workload: Workload, user_class: str) -> dict[str, str]:
    """The locustfile, its JSON, and the data file's text."""
    out = {LOCUSTFILE: locustfile(), WORKLOAD: workload_json(cell, workload, user_class)}
    if workload.data is not None:
        try:
            out[DATA] = Path(workload.data.path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise AdapterError(f"locust: cannot read the data file {workload.data.given}: {exc}") from None
    return out


def invocation(cell: "Cell", found: Found, host: str, csv_prefix: str, outputs: dict[str, str]) -> Invocation:
    """A workload's run: this locustfile, its JSON and data; output as for any Locust cell."""
    assert cell.workload is not None
    user_class = option(cell, "user_class", "FastHttpUser")
    args = ["-f", LOCUSTFILE, "--headless", *load_args(cell, cell.workload), "--host", host,
            "--csv", csv_prefix, "--csv-full-history", "--json", "--only-summary", "--loglevel", "WARNING",
            "--exit-code-on-error", "0"]
    processes = option(cell, "processes", 1)
    if processes == -1 and cell.cpus:
        args += ["--processes", str(cell.cpus)]
    elif processes != 1:
        args += ["--processes", str(processes)]
    return Invocation(argv=[found.path, "-m", "locust", *args], files=files(cell, cell.workload, user_class),
                      outputs=dict(outputs))


def load_args(cell: "Cell", workload: Workload) -> list[str]:
    """Users, spawn rate and run time; none with stages, whose LoadTestShape sets them."""
    if workload.stages:
        return []
    assert cell.stop.duration_s is not None, "supports() refuses a workload without a duration"
    return ["-u", str(cell.concurrency), "-r", f"{float(cell.concurrency):g}", "-t", f"{int(cell.stop.duration_s)}s"]


def locustfile() -> str:
    return resources.files("toolbench.adapters.locust").joinpath("templates/workload_locustfile.py").read_text()
