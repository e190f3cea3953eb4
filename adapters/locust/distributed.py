"""Locust's own distributed mode: the master on this machine (headless, `--expect-workers`),
`--worker` processes on each generator (as many per host as it has cores, unless told), the
result from the master's JSON and CSVs, read by the Locust adapter as a single run's.

The workers get the same locustfile and cell parameters as the master (locust_params.json):
the master hands out the users, the workers send it their stats, and it merges them. Two
parameters differ: each worker process also keeps its own requests, for each generator's
figures (adapters/locust/workers.py); and the master's run time counts from the moment every
worker's users have started, since its --run-time runs from the order to spawn them, which
remote workers act on late (measured in namespaces: 1.7 s of load in a 3 s cell)."""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from toolbench.adapters.locust import adapter as locust
from toolbench.adapters.locust import workers as locust_workers
from toolbench.contract import distributed
from toolbench.contract.adapter import SUPPORTED, Found, RawOutput, Support, option
from toolbench.contract.distributed import Generator, Outcome, Part
from toolbench.contract.host import Host, free_port
from toolbench.errors import HostError, ParseError

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell

# How long the master waits for every worker to connect before it gives up (and exits 1).
WORKERS_WAIT_S = 60
# The master's run time counts from the moment every worker's users have started (the
# locustfile stops it then); its --run-time is this much longer, a backstop only.
SPAWN_WAIT_S = 10


class LocustDistributed:
    def supports(self, cell: "Cell", generators: int) -> Support:
        if cell.stop.duration_s is None:
            return Support(False, "Locust's distributed mode runs for a duration: its workers share no request "
                                  "budget")
        return SUPPORTED

    def run(self, cell: "Cell", workdir: Path, controller: Found, generators: Sequence[Generator], *,
            here: Host) -> Outcome:
        invocation = locust.ADAPTER.build(cell, workdir, controller)
        counts = [worker_count(gen, cell) for gen in generators]
        reach = [distributed.reach_address(gen) for gen in generators]
        bind = reach[0] if len(set(reach)) == 1 else "*"
        port = free_port(reach[0] if bind != "*" else "0.0.0.0")
        assert cell.stop.duration_s is not None, "supports() turns other stops away"
        run_s = int(cell.stop.duration_s)
        master_argv = [*_run_time(_without_processes(invocation.argv), run_s + SPAWN_WAIT_S), "--master",
                       "--master-bind-host", bind, "--master-bind-port", str(port), "--expect-workers",
                       str(sum(counts)), "--expect-workers-max-wait", str(WORKERS_WAIT_S)]
        params = json.loads(invocation.files[locust.PARAMS])
        for name, content in {**invocation.files, locust.PARAMS: _params(params, run_s_after_spawn=run_s)}.items():
            (workdir / name).write_text(content)
        (workdir / "command.txt").write_text(" ".join(master_argv) + "\n")
        master = here.start(master_argv, cwd=workdir, stdout=workdir / "stdout.txt",
                            stderr=workdir / "stderr.txt")
        parts: list[distributed.Launched] = []
        files = {**invocation.files, locust.PARAMS: _params(params, worker_stats=locust_workers.PREFIX)}
        try:
            for index, (gen, count, address) in enumerate(zip(generators, counts, reach)):
                argv = [gen.found.path, "-m", "locust", "-f", locust.LOCUSTFILE, "--worker", "--master-host",
                        address, "--master-port", str(port), "--loglevel", "WARNING"]
                argv += ["--processes", str(count)] if count > 1 else []
                parts.append(distributed.launch(gen, distributed.part_folder(workdir, index, gen), argv,
                                                files, locust_workers.names(count)))
        except BaseException:
            master.wait(0)
            distributed.finish_all(parts, None)
            raise
        completed = master.wait(cell.timeout_s)
        ended = distributed.finish_all(parts, completed)
        if option(cell, "locustfile", None):
            ended = tuple(dataclasses.replace(part, why_no_figures="the scenario's own locustfile ran: it keeps no "
                                              "requests per worker") for part in ended)
        else:
            ended = tuple(_figures(part, count) for part, count in zip(ended, counts))
        files = {role: workdir / name for role, name in invocation.outputs.items() if (workdir / name).exists()}
        raw = RawOutput(stdout=(workdir / "stdout.txt").read_text(errors="replace"),
                        stderr=(workdir / "stderr.txt").read_text(errors="replace"),
                        exit_code=completed.exit_code, files=files, source=str(workdir))
        note = (f"Locust distributed: a master here and {sum(counts)} workers on {len(generators)} generators "
                f"({', '.join(f'{gen.label}: {n}' for gen, n in zip(generators, counts))}); the master merged "
                f"their stats; its run time of {run_s}s counted from the moment every worker's users had started "
                "(Locust's spawning_complete), the spawning before it included in the figures")
        return Outcome(completed, raw, ended, (note,))


def _figures(part: Part, processes: int) -> Part:
    """The part with its own figures, from its worker processes' files; absent, said why."""
    try:
        measurement = locust_workers.read([part.folder / name for name in locust_workers.names(processes)])
    except ParseError as exc:
        return dataclasses.replace(part, why_no_figures=str(exc))
    return dataclasses.replace(part, measurement=measurement)


def _params(params: dict[str, object], **more: object) -> str:
    """The cell's parameters (adapters/locust/adapter.py) with what the master or the workers do in a
    distributed run: the workers keep their own requests (adapters/locust/workers.py); the
    master counts its run time from the moment every worker's users have started."""
    return json.dumps({**params, **more}, indent=2, sort_keys=True) + "\n"


def _run_time(argv: list[str], seconds: int) -> list[str]:
    """`argv` with its run time (-t) `seconds`: a backstop, should spawning never complete."""
    at = argv.index("-t")
    return [*argv[:at + 1], f"{seconds}s", *argv[at + 2:]]


def worker_count(gen: Generator, cell: "Cell") -> int:
    """Workers on a generator: told (`Generator.workers`, or `tools.locust.workers_per_host`),
    else one per core there."""
    told = gen.workers or cell.options.get("workers_per_host")
    if told:
        return int(told)
    try:
        return gen.host.facts().cpu_count
    except HostError:
        return 1


def _without_processes(argv: list[str]) -> list[str]:
    """The master's argv without `--processes N`: the workers are on the generators."""
    out: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
            continue
        if word == "--processes":
            skip = True
            continue
        out.append(word)
    return out


DISTRIBUTED = LocustDistributed()
