"""A scenario's workload as the engine's `--workload` JSON file (its form: toolbench.engine.workload,
which this layer may not import, so the form is written here and read, strictly, there), and what
of a workload the engine honours. The data file's rows are inlined, so that the file alone is
enough on a remote generator; every value goes in through json.dumps, never pasted as text."""
from __future__ import annotations

import csv
import io
import json
from typing import Any

from toolbench.contract.workload import FeatureSupport, honoured
from toolbench.errors import AdapterError
from toolbench.scenario.workload import Checks, DataFile, Workload, WorkloadRequest

WORKLOAD_FILE = "workload.json"
FORM_VERSION = 1  # toolbench.engine.workload.VERSION
MAX_ROWS = 200_000  # toolbench.engine.workload.MAX_ROWS
MAX_DATA_BYTES = 24 << 20  # the JSON file is capped at 32 MiB by the engine

# Everything a workload can ask: the engine runs it on its Python path (engine/workload_load.py).
# Stages in users ramp the running users; in rate_rps, the arrival rate, each arrival a new user
# that runs one iteration (a mix's one request, or the whole sequence once).
WORKLOAD_FEATURES: dict[str, FeatureSupport] = {
    "sequence": honoured(),
    "mix": honoured(),  # seeded weighted choice per user (option `seed`, default the repetition)
    "data": honoured(),
    "extract": honoured(),
    "think": honoured(),
    "checks": honoured(),
    "stages": honoured(),
    "per_request": honoured(),
}


def workload_json(workload: Workload, seed: int) -> str:
    """The engine's workload file for `workload`."""
    form: dict[str, Any] = {
        "version": FORM_VERSION,
        "order": workload.order,
        "seed": seed,
        "requests": [_request(r) for r in workload.requests],
        "data": _data(workload.data) if workload.data is not None else None,
        "think": ({"min_s": workload.think.min_s, "max_s": workload.think.max_s}
                  if workload.think is not None else None),
        "stages": [{"duration_s": s.duration_s, **({"users": s.users} if s.users is not None
                                                   else {"rate_rps": s.rate_rps})}
                   for s in workload.stages],
    }
    return json.dumps(form, ensure_ascii=False, indent=1) + "\n"


def _request(r: WorkloadRequest) -> dict[str, Any]:
    return {
        "name": r.name, "method": r.method, "path": r.path, "query": dict(r.query), "headers": dict(r.headers),
        "body": r.body, "weight": r.weight,
        "extract": [{"variable": e.variable, **({"json_path": e.json_path} if e.json_path is not None
                                                else {"regex": e.regex})} for e in r.extract],
        "checks": _checks(r.checks) if r.checks is not None else None,
    }


def _checks(c: Checks) -> dict[str, Any]:
    out: dict[str, Any] = {"status": list(c.status)}
    if c.contains is not None:
        out["contains"] = c.contains
    if c.json_path is not None:
        out["json_path"] = c.json_path
        out["json_equals"] = c.json_equals
    if c.max_bytes is not None:
        out["max_bytes"] = c.max_bytes
    return out


def _data(data: DataFile) -> dict[str, Any]:
    """The data file's rows (its header row checked at the boundary, skipped here)."""
    try:
        with open(data.path, newline="", encoding="utf-8") as handle:
            text = handle.read(MAX_DATA_BYTES + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise AdapterError(f"engine: cannot read the workload's data file {data.given}: {exc}") from None
    if len(text) > MAX_DATA_BYTES:
        raise AdapterError(f"engine: the workload's data file {data.given} is over {MAX_DATA_BYTES >> 20} MiB")
    try:  # read as the scenario's boundary read it (toolbench.scenario.workload_read)
        rows = list(csv.reader(io.StringIO(text, newline=""), strict=True))
    except csv.Error as exc:
        raise AdapterError(f"engine: the workload's data file {data.given} is not CSV: {exc}") from None
    header, body = (rows[0], rows[1:]) if rows else ([], [])
    if tuple(header) != tuple(data.columns) or len(body) != data.rows or not 0 < len(body) <= MAX_ROWS \
            or any(len(row) != len(header) for row in body):
        raise AdapterError(f"engine: the workload's data file {data.given} changed since the scenario was read, "
                           f"or has more than {MAX_ROWS:,} rows")
    return {"columns": list(data.columns), "rows": body, "per": data.per, "at_end": data.at_end}
