"""A run's workload (issue 32), read back from the scenario text its manifest keeps, with the
profile the run applied merged in as the scenario reader merges it (toolbench.scenario.profiles).

The report reads only the run folder, and a workload's files (its CSV data, its body files) are
the scenario's, not the run's. What the report needs of a workload is its shape, not those files'
contents, so the scenario's own reader reads it in its shape-only mode (no folder: no file
opened), and a stage or a duration means here what it meant to the run. A text that does not read
is no workload (None): the sections that need one are then left out."""
from __future__ import annotations

import functools
import re

import yaml

from toolbench.errors import ScenarioError
from toolbench.record import yamltext
from toolbench.record.observed import TargetRequests
from toolbench.report.context import RunView
from toolbench.scenario import profiles, workload_read
from toolbench.scenario.read import TOP_KEYS
from toolbench.scenario.workload import VARIABLE, Workload
from toolbench.scenario.yamlread import Node

LABEL = "the stored scenario"


def stored_workload(text: str | None, profile: str | None) -> Workload | None:
    """The workload of the scenario `text` under `profile`; None without one, or when it does not read."""
    if not isinstance(text, str) or "workload" not in text:
        return None
    return _cached(text, profile)


def of_run(run: RunView) -> Workload | None:
    """The workload the run ran, from its manifest's scenario text and profile."""
    return stored_workload(run.manifest.scenario.text, run.manifest.scenario.profile)


@functools.lru_cache(maxsize=16)
def _cached(text: str, profile: str | None) -> Workload | None:
    try:
        composed = yamltext.compose(text)
        if composed is None:
            return None
        top = Node(composed, LABEL, "").items(TOP_KEYS)
        if profile is not None:
            top = profiles.merged(top, profiles.declared(top, TOP_KEYS), profile, LABEL)
        return workload_read.parse(top["workload"], None) if "workload" in top else None
    except (ScenarioError, yaml.YAMLError, ValueError, TypeError):
        return None


def asked_shares(workload: Workload) -> dict[str, float]:
    """Each request's asked share of all requests, in percent: equal in a sequence (each user sends
    each once a loop), weight over the weights' sum in a mix."""
    if workload.order == "sequence":
        return {r.name: 100.0 / len(workload.requests) for r in workload.requests}
    total = sum(r.weight for r in workload.requests)
    return {r.name: 100.0 * r.weight / total if total > 0 else 0.0 for r in workload.requests}


def path_pattern(path: str) -> re.Pattern[str]:
    """A request's path as the target logs it: each `${variable}` any one path segment's text."""
    parts, at = [], 0
    for match in VARIABLE.finditer(path):
        parts += [re.escape(path[at:match.start()]), "[^/]*"]
        at = match.end()
    parts.append(re.escape(path[at:]))
    return re.compile("".join(parts))


def logged_by_name(workload: Workload, logged: TargetRequests) -> dict[str, int | None]:
    """The requests the target logged for each request name (its method and path); None for names
    whose method and path another name shares, since the log cannot tell them apart."""
    keys = {r.name: (r.method, r.path) for r in workload.requests}
    shared = {key for key in keys.values() if list(keys.values()).count(key) > 1}
    out: dict[str, int | None] = {}
    for request in workload.requests:
        if (request.method, request.path) in shared:
            out[request.name] = None
            continue
        pattern = path_pattern(request.path)
        out[request.name] = sum(p.count for p in logged.paths
                                if p.method == request.method and pattern.fullmatch(p.path))
    return out


def logged_per_second(workload: Workload, logged: TargetRequests) -> list[int]:
    """The requests to the workload's methods and paths the target logged in each second of the cell."""
    patterns = [(r.method, path_pattern(r.path)) for r in workload.requests]
    series: list[int] = []
    for p in logged.paths:
        if any(p.method == method and pattern.fullmatch(p.path) for method, pattern in patterns):
            series += [0] * (len(p.per_second) - len(series))
            for second, n in enumerate(p.per_second):
                series[second] += n
    return series
