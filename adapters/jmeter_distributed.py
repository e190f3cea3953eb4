"""JMeter's own distributed mode: a JMeter server (`jmeter -s`) started on each generator, the
controller here with `-R host1:port,host2:port -X` (the servers exit at the end), the result
from the controller's JTL, read by the JMeter adapter as a single run's.

Every RMI port is pinned, so that a firewall or a forwarded port can let it through: on
generator i, the registry at `server_port + i` and the server's objects at `rmi_port + i`; on
this machine, the controller's listeners from `client_rmi_port` (JMeter opens up to three).
RMI over SSL needs a keystore on every machine: `server.rmi.ssl.disable=true` is set
explicitly on both sides, and the result says so.

JMeter sends the same plan to every server, and each runs all of its threads: the plan is
built for the cell's concurrency divided by the generators (and a request budget likewise)."""
from __future__ import annotations

import csv
import dataclasses
import socket
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from toolbench import distributed
from toolbench.adapter import Found, Invocation, RawOutput, Support
from toolbench.adapters import jmeter
from toolbench.adapters.jmeter_runs import is_xml
from toolbench.distributed import Generator, Outcome, Part
from toolbench.distributed_cell import OwnDistribution
from toolbench.errors import HostError
from toolbench.hosts import Completed, LocalHost
from toolbench.scenario import StopSpec

if TYPE_CHECKING:
    from toolbench.plan import Cell

SERVER_PORT, RMI_PORT, CLIENT_RMI_PORT = 1099, 50000, 50100
SERVER_START_S = 120.0  # a JVM's start on a busy machine
SSL_NOTE = ("JMeter distributed: server.rmi.ssl.disable=true was set on the controller and every server: the RMI "
            "traffic between them (plan and samples) is not encrypted; run it on a trusted network only")


class JMeterDistributed(OwnDistribution):
    def supports(self, cell: "Cell", generators: int) -> Support:
        if cell.concurrency % generators:
            return Support(False, f"JMeter's distributed mode runs one plan on every server: a concurrency of "
                                  f"{cell.concurrency} does not divide among {generators} generators")
        if cell.stop.requests is not None and cell.stop.requests % generators:
            return Support(False, f"JMeter's distributed mode runs one plan on every server: {cell.stop.requests} "
                                  f"requests do not divide among {generators} generators")
        return jmeter.ADAPTER.supports(per_server(cell, generators))

    def run(self, cell: "Cell", workdir: Path, controller: Found, generators: Sequence[Generator]) -> Outcome:
        invocation = jmeter.ADAPTER.build(per_server(cell, len(generators)), workdir, controller)
        saved = [word for word in invocation.argv if word.startswith("-Jjmeter.save.saveservice.")]
        ports = [_option(cell, "server_port", SERVER_PORT) + i for i in range(len(generators))]
        servers = []
        try:
            for i, gen in enumerate(generators):
                argv = [gen.found.path, "-s", "-Jserver.rmi.ssl.disable=true", f"-Jserver_port={ports[i]}",
                        f"-Jserver.rmi.localport={_option(cell, 'rmi_port', RMI_PORT) + i}",
                        f"-Djava.rmi.server.hostname={distributed.host_address(gen)}", "-j", "server.log", *saved]
                servers.append(distributed.launch(gen, distributed.part_folder(workdir, i, gen), argv, {},
                                                  ["server.log"], invocation.env))
            for server, port in zip(servers, ports):
                _wait_ready(server, port)
            completed = self._control(cell, workdir, invocation, generators, ports)
        except BaseException:
            for server in servers:
                distributed.finish(server, 0)
            raise
        ended = tuple(distributed.finish(server, distributed.PART_GRACE_S) for server in servers)
        files = {role: workdir / name for role, name in invocation.outputs.items() if (workdir / name).exists()}
        raw = RawOutput(stdout=(workdir / "stdout.txt").read_text(errors="replace"),
                        stderr=(workdir / "stderr.txt").read_text(errors="replace"),
                        exit_code=completed.exit_code, files=files, source=str(workdir))
        samples = samples_by_server(files.get("jtl"))
        remotes = [f"{distributed.host_address(gen)}:{port}" for gen, port in zip(generators, ports)]
        ended = tuple(_silent(part, samples.get(remote, 0)) for part, remote in zip(ended, remotes))
        note = (f"JMeter distributed: a controller here and a server on each of {len(generators)} generators, "
                f"{cell.concurrency // len(generators)} threads each; samples by server: "
                + ", ".join(f"{remote}: {samples.get(remote, 0)}" for remote in remotes))
        return Outcome(completed, raw, ended, (note, SSL_NOTE))

    @staticmethod
    def _control(cell: "Cell", workdir: Path, invocation: Invocation, generators: Sequence[Generator],
                 ports: list[int]) -> Completed:
        reach = {distributed.reach_address(gen) for gen in generators}
        argv = [*invocation.argv, "-R", ",".join(f"{distributed.host_address(g)}:{p}" for g, p in zip(generators, ports)),
                "-X", "-Jserver.rmi.ssl.disable=true",
                f"-Jclient.rmi.localport={_option(cell, 'client_rmi_port', CLIENT_RMI_PORT)}"]
        # The servers call the controller back at this address: one that every generator reaches.
        argv += [f"-Djava.rmi.server.hostname={reach.pop()}"] if len(reach) == 1 else []
        for name, content in invocation.files.items():
            (workdir / name).write_text(content)
        (workdir / "command.txt").write_text(" ".join(argv) + "\n")
        return LocalHost().run(argv, cwd=workdir, stdout=workdir / "stdout.txt", stderr=workdir / "stderr.txt",
                               timeout_s=cell.timeout_s, env=invocation.env)


def per_server(cell: "Cell", generators: int) -> "Cell":
    """The cell as each server runs it: its share of the threads and of a request budget."""
    stop = cell.stop
    if stop.requests is not None:
        stop = StopSpec(requests=stop.requests // generators)
    return dataclasses.replace(cell, concurrency=max(1, cell.concurrency // generators), stop=stop)


def samples_by_server(jtl: Path | None) -> Counter[str]:
    """Samples in the controller's JTL by the server that ran them: JMeter names a remote
    thread `<host>:<port>-<thread group> <n>-<m>`."""
    counts: Counter[str] = Counter()
    if jtl is None or is_xml(jtl):
        return counts
    with open(jtl, newline="", errors="replace") as fh:
        for row in csv.DictReader(fh):
            name = row.get("threadName") or ""
            counts[name.split("-", 1)[0] if "-" in name else ""] += 1
    return counts


def _silent(part: Part, samples: int) -> Part:
    if part.error is None and samples == 0:
        return dataclasses.replace(part, error="its server ran no sample (none in the controller's JTL)")
    return part


def _wait_ready(server: distributed.Launched, port: int) -> None:
    """Until the server's RMI registry takes connections from here (it binds it once its object
    is exported). Its output is not watched: over SSH it arrives only when the part is waited for."""
    address = distributed.host_address(server.gen)
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((address, port), timeout=2):
                return
        except OSError:
            time.sleep(0.2)
    raise HostError(f"{server.gen.label}: the JMeter server's RMI registry at {address}:{port} took no connection "
                    f"within {SERVER_START_S:g}s (its output: {server.folder})")


def _option(cell: "Cell", key: str, default: int) -> int:
    return int(cell.options.get(key, default))


DISTRIBUTED = JMeterDistributed()
