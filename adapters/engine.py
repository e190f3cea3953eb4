"""The bundled engine (toolbench.engine): runs it as a subprocess like any other tool,
and reads the RunResult it writes natively (--json-out). It speaks HTTP/1.1, in clear and over
TLS (https: the cell's CA file trusted, sessions resumed unless `tls_resume: false`; TLS runs on
the engine's Python path, its C path being plain HTTP only). A workload (several named requests,
data, extracted values, think time, checks, stages) goes to the engine as a JSON file
(engine_workload.py) and runs on its Python path too: its C paths send one request."""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolbench.adapters.engine_workload import WORKLOAD_FEATURES, WORKLOAD_FILE, workload_json
from toolbench.contract.adapter import Adapter, Detection, Found, Invocation, RawOutput, Threads, found_python, option
from toolbench.contract.recipe import BOTH, Install, Venv
from toolbench.errors import ParseError, SchemaError
from toolbench.record.numbers import Numbers
from toolbench.record.schema import Measurement, RunResult

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell
    from toolbench.contract.host import Captured, Host

RESULT_FILE = "engine.json"
BODY_FILE = "body"


class EngineAdapter(Adapter):
    name = "engine"
    install = Install((Venv("toolbench.engine"),), BOTH)
    threads = Threads.PER_PROCESS  # one asyncio worker process per core
    # workers: processes (default one per CPU); timeout_s: per request; warmup_s: excluded start;
    # tls_resume: https, a new connection resumes its slot's last TLS session (default true).
    # seed: a workload's mix and uniform think times (default: the cell's repetition).
    option_types = {"workers": int, "timeout_s": int, "warmup_s": int, "tls_resume": bool, "seed": int}
    workload_features = WORKLOAD_FEATURES
    protocols = frozenset({"http1", "https"})
    protocol_refusals = {
        protocol: ("the engine speaks HTTP/1.1 only (in clear and over TLS): each connection slot has one "
                   "request in flight, and its framing (in C, _churn_framing.c) is HTTP/1.1's; HTTP/2's "
                   "streams multiplexed on one connection do not fit that design")
        for protocol in ("h2", "h2c")}
    program = "python"  # run as `python -m toolbench.engine`: the path is the Python's

    def detect(self, host: "Host", path: str | None = None) -> Detection:
        return found_python(host, path, "toolbench.engine", _version)

    # supports(): any method, body, keep-alive either way, closed or open model (the default)

    def build(self, cell: "Cell", workdir: Path, found: Found) -> Invocation:
        assert cell.url is not None, "the runner resolves the URL before building"
        # A workload's requests carry their own paths: the URL gives the scheme, host and port.
        url = cell.base_url + "/" if cell.workload is not None and cell.base_url is not None else cell.url
        argv = [found.path, "-m", "toolbench.engine", url, "-c", str(cell.concurrency),
                "--json-out", RESULT_FILE, "--no-progress"]
        # Per connection: c x N in total. The engine shares its budget among a worker's
        # connections, so the total is exact and a connection may send more or fewer than N.
        total = cell.stop.total_requests(cell.concurrency)
        if total is not None:
            argv += ["-n", str(total)]
        else:
            assert cell.stop.duration_s is not None
            argv += ["-d", f"{cell.stop.duration_s:g}s"]
        if cell.rate_rps is not None:
            argv += ["--rate", f"{cell.rate_rps:g}"]
        if not cell.keepalive:
            argv.append("--no-keepalive")
        if cell.tls:
            if cell.ca_file is not None:
                argv += ["--cacert", cell.ca_file]
            if not option(cell, "tls_resume", True):
                argv.append("--tls-no-resume")
        for key, flag in (("workers", "-w"), ("timeout_s", "--timeout"), ("warmup_s", "--warmup")):
            value = option(cell, key, None)
            if value is not None:
                argv += [flag, str(value)]
        if cell.workload is not None:
            seed = option(cell, "seed", cell.repetition)
            files = {WORKLOAD_FILE: workload_json(cell.workload, seed)}
            return Invocation(argv=argv + ["--workload", WORKLOAD_FILE], files=files, outputs={"json": RESULT_FILE})
        request, files = request_args(cell)
        return Invocation(argv=argv + request, files=files, outputs={"json": RESULT_FILE})

    def classify(self, path: Path, text: str) -> str:
        return "json" if text.lstrip().startswith("{") else "stdout"

    def recognizes(self, path: Path, text: str) -> bool:
        if text.lstrip().startswith("{"):
            return re.search(r'"tool":\s*"engine"', text) is not None
        # [^\S\n], not \s: from each of thousands of blank lines, \s+ would run over all those after it.
        return re.search(r"^[^\S\n]+\d+ workers? and \d+ connections, keep-alive (on|off)", text,
                         re.MULTILINE) is not None

    def parse(self, raw: RawOutput) -> Measurement:
        return parse(raw)


def request_args(cell: "Cell") -> tuple[list[str], dict[str, str]]:
    """The engine's flags for the cell's request (method, headers, body), and the body's file."""
    argv: list[str] = []
    files: dict[str, str] = {}
    req = cell.request
    if req.method != "GET":
        argv += ["--method", req.method]
    for key, value in req.headers.items():
        argv += ["-H", f"{key}: {value}"]
    if req.content_type and "content-type" not in {k.lower() for k in req.headers}:
        argv += ["-H", f"Content-Type: {req.content_type}"]
    if req.body is not None:
        files[BODY_FILE] = req.body
        argv += ["--body", BODY_FILE]
    return argv, files


def _version(captured: "Captured") -> str | None:
    words = captured.stdout.split()
    if captured.exit_code != 0 or len(words) < 2 or words[0] != "toolbench-engine":
        return None
    return words[1]


def parse(raw: RawOutput) -> Measurement:
    """The engine's RunResult (from --json-out, or from stdout with --json) as a Measurement."""
    text = _result_text(raw)
    data: Any = Numbers("engine", raw.source).loads(text, "the result")
    try:
        result = RunResult.from_dict(data)
    except (ValueError, SchemaError) as exc:
        raise ParseError("engine", f"not an engine result: {exc}", raw.source) from None
    except (TypeError, AttributeError) as exc:
        raise ParseError("engine", f"not an engine result: {type(exc).__name__}: {exc}", raw.source) from None
    if result.identity.tool != "engine":
        raise ParseError("engine", f"a result of {result.identity.tool!r}, not of the engine", raw.source)
    notes = result.all_notes
    if result.outcome.error and result.outcome.error not in notes:
        notes.append(f"engine: {result.outcome.error}")
    try:
        return dataclasses.replace(result.measurement, tool="engine", notes=notes, url=result.identity.url,
                                   concurrency=result.identity.concurrency,
                                   tool_version=result.identity.tool_version)
    except SchemaError as exc:  # e.g. a fidelity entry for a metric the schema does not have
        raise ParseError("engine", f"not an engine result: {exc}", raw.source) from None


def _result_text(raw: RawOutput) -> str:
    path = raw.files.get("json")
    if path is not None:
        try:
            return path.read_bytes().decode("utf-8")
        except OSError as exc:
            raise ParseError("engine", f"cannot read {path}: {exc.strerror}", raw.source) from None
        except UnicodeDecodeError as exc:
            raise ParseError("engine", f"{path} is not UTF-8 text (byte {exc.start}): not an engine result",
                             raw.source) from None
    if raw.stdout.lstrip().startswith("{"):
        return raw.stdout
    last = raw.stderr.strip().splitlines()[-1:] or ["no result file and no JSON on stdout"]
    raise ParseError("engine", last[0], raw.source)


ADAPTER = EngineAdapter()
