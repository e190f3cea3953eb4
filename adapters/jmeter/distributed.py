"""JMeter's own distributed mode: a JMeter server (`jmeter -s`) started on each generator, the
controller here with `-R host1:port,host2:port -X` (the servers exit at the end), the result
from the controller's JTL, read by the JMeter adapter as a single run's. Each server is also
started with `server.exitaftertest=true`: it ends when its test ends, even where the
controller's exit call does not reach it (on a loaded machine CI once saw both servers still
up 60 s after the controller ended).

Every RMI port is pinned, so that a firewall or a forwarded port can let it through: on
generator i, the registry at `server_port + i` and the server's objects at `rmi_port + i`; on
this machine, the controller's listeners from `client_rmi_port` (JMeter opens up to three).
RMI over SSL needs a keystore on every machine: `server.rmi.ssl.disable=true` is set
explicitly on both sides, and the result says so.

JMeter sends the same plan to every server, and each runs all of its threads: the plan is
built for the cell's concurrency divided by the generators (and a request budget likewise)."""
from __future__ import annotations

import contextlib
import csv
import dataclasses
import socket
import time
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from toolbench.adapters.jmeter import adapter as jmeter
from toolbench.adapters.jmeter.runs import is_xml
from toolbench.contract import distributed
from toolbench.contract.adapter import Found, Invocation, RawOutput, Support
from toolbench.contract.checked import parse_checked
from toolbench.contract.distributed import Generator, Outcome, Part
from toolbench.contract.host import Completed, Host
from toolbench.errors import HostError, ParseError
from toolbench.scenario.read import StopSpec

if TYPE_CHECKING:
    from toolbench.contract.cell import Cell

SERVER_PORT, RMI_PORT, CLIENT_RMI_PORT = 1099, 50000, 50100
SERVER_START_S = 120.0  # a JVM's start on a busy machine
# Each sample saved with the hostname of the machine that made it; the thread name says the server.
HOSTNAME = "-Jjmeter.save.saveservice.hostname=true"
PART_JTL = "samples.jtl"  # in each part's folder: its rows of the controller's JTL
SSL_NOTE = ("JMeter distributed: server.rmi.ssl.disable=true was set on the controller and every server: the RMI "
            "traffic between them (plan and samples) is not encrypted; run it on a trusted network only")


class JMeterDistributed:
    def supports(self, cell: "Cell", generators: int) -> Support:
        if cell.concurrency % generators:
            return Support(False, f"JMeter's distributed mode runs one plan on every server: a concurrency of "
                                  f"{cell.concurrency} does not divide among {generators} generators")
        if cell.stop.requests is not None and cell.stop.requests % generators:
            return Support(False, f"JMeter's distributed mode runs one plan on every server: {cell.stop.requests} "
                                  f"requests do not divide among {generators} generators")
        return jmeter.ADAPTER.supports(per_server(cell, generators))

    def run(self, cell: "Cell", workdir: Path, controller: Found, generators: Sequence[Generator], *,
            here: Host) -> Outcome:
        invocation = jmeter.ADAPTER.build(per_server(cell, len(generators)), workdir, controller)
        saved = [word for word in invocation.argv if word.startswith("-Jjmeter.save.saveservice.")] + [HOSTNAME]
        ports = [_option(cell, "server_port", SERVER_PORT) + i for i in range(len(generators))]
        servers = []
        try:
            for i, gen in enumerate(generators):
                argv = [gen.found.path, "-s", "-Jserver.rmi.ssl.disable=true", "-Jserver.exitaftertest=true",
                        f"-Jserver_port={ports[i]}",
                        f"-Jserver.rmi.localport={_option(cell, 'rmi_port', RMI_PORT) + i}",
                        f"-Djava.rmi.server.hostname={distributed.host_address(gen)}", "-j", "server.log", *saved]
                servers.append(distributed.launch(gen, distributed.part_folder(workdir, i, gen), argv, {},
                                                  ["server.log"], invocation.env))
            for server, port in zip(servers, ports):
                _wait_ready(server, port)
            completed = self._control(cell, workdir, invocation, generators, ports, here)
        except BaseException:
            distributed.finish_all(servers, None)
            raise
        ended = distributed.finish_all(servers, completed)
        files = {role: workdir / name for role, name in invocation.outputs.items() if (workdir / name).exists()}
        raw = RawOutput(stdout=(workdir / "stdout.txt").read_text(errors="replace"),
                        stderr=(workdir / "stderr.txt").read_text(errors="replace"),
                        exit_code=completed.exit_code, files=files, source=str(workdir))
        remotes = [f"{distributed.host_address(gen)}:{port}" for gen, port in zip(generators, ports)]
        samples, hostnames = split_by_server(files.get("jtl"), remotes, [part.folder / PART_JTL for part in ended])
        ended = tuple(_figures(part, samples[remote]) for part, remote in zip(ended, remotes))
        note = (f"JMeter distributed: a controller here and a server on each of {len(generators)} generators, "
                f"{cell.concurrency // len(generators)} threads each; samples by server: "
                + ", ".join(f"{remote}: {samples[remote]}" for remote in remotes))
        notes = [note, SSL_NOTE]
        if samples[""]:
            notes.append(f"{samples['']} samples of the controller's JTL name no server in their thread name: in "
                         "the merged figures, in no generator's")
        if any(hostnames.values()):
            notes.append("hostnames the samples were saved with, by server: " + "; ".join(
                f"{remote}: {', '.join(sorted(hostnames[remote]))}" for remote in remotes if hostnames[remote]))
        return Outcome(completed, raw, ended, tuple(notes))

    @staticmethod
    def _control(cell: "Cell", workdir: Path, invocation: Invocation, generators: Sequence[Generator],
                 ports: list[int], here: Host) -> Completed:
        reach = {distributed.reach_address(gen) for gen in generators}
        argv = [*invocation.argv, HOSTNAME, "-R", ",".join(f"{distributed.host_address(g)}:{p}" for g, p in zip(generators, ports)),
                "-X", "-Jserver.rmi.ssl.disable=true",
                f"-Jclient.rmi.localport={_option(cell, 'client_rmi_port', CLIENT_RMI_PORT)}"]
        # The servers call the controller back at this address: one that every generator reaches.
        argv += [f"-Djava.rmi.server.hostname={reach.pop()}"] if len(reach) == 1 else []
        for name, content in invocation.files.items():
            (workdir / name).write_text(content)
        (workdir / "command.txt").write_text(" ".join(argv) + "\n")
        return here.run(argv, cwd=workdir, stdout=workdir / "stdout.txt", stderr=workdir / "stderr.txt",
                        timeout_s=cell.timeout_s, env=invocation.env)


def per_server(cell: "Cell", generators: int) -> "Cell":
    """The cell as each server runs it: its share of the threads and of a request budget."""
    stop = cell.stop
    if stop.requests is not None:
        stop = StopSpec(requests=stop.requests // generators)
    return dataclasses.replace(cell, concurrency=max(1, cell.concurrency // generators), stop=stop)


def split_by_server(jtl: Path | None, remotes: Sequence[str],
                    into: Sequence[Path]) -> tuple[Counter[str], dict[str, set[str]]]:
    """The controller's JTL split by the server that ran each sample into one JTL per server
    (`into`, same header, rows as they were), for each part's own figures. JMeter names a
    remote thread `<host>:<port>-<thread group> <n>-<m>`, `<host>:<port>` as given in -R: the
    server's identity even where machines share a hostname. Says the samples by server ("":
    none named) and the hostnames each server's samples were saved with."""
    counts: Counter[str] = Counter({remote: 0 for remote in (*remotes, "")})
    hostnames: dict[str, set[str]] = {remote: set() for remote in remotes}
    if jtl is None or is_xml(jtl):
        return counts, hostnames
    with contextlib.ExitStack() as stack, open(jtl, newline="", errors="replace") as fh:
        rows = csv.reader(fh)
        header = next(rows, None)
        if header is None or "threadName" not in header:
            return counts, hostnames
        thread, host = header.index("threadName"), header.index("Hostname") if "Hostname" in header else None
        writers = {}
        for remote, path in zip(remotes, into):
            writers[remote] = csv.writer(stack.enter_context(open(path, "w", newline="")), lineterminator="\n")
            writers[remote].writerow(header)
        for row in rows:
            name = row[thread] if len(row) == len(header) else ""
            remote = next((r for r in remotes if name.startswith(r + "-")), "")
            counts[remote] += 1
            if remote:
                writers[remote].writerow(row)
                if host is not None:
                    hostnames[remote].add(row[host])
    return counts, hostnames


def _figures(part: Part, samples: int) -> Part:
    """The part with its own figures, read from its share of the controller's JTL."""
    if part.error is None and samples == 0:
        return dataclasses.replace(part, error="its server ran no sample (none in the controller's JTL)")
    path = part.folder / PART_JTL
    if not path.exists():
        return dataclasses.replace(part, why_no_figures="no JTL from the controller to split by server")
    raw = RawOutput(stdout="", stderr="", exit_code=0, files={"jtl": path}, source=str(path))
    try:
        measurement = parse_checked(jmeter.ADAPTER, raw)
    except ParseError as exc:
        return dataclasses.replace(part, why_no_figures=str(exc))
    note = "this server's samples: its rows of the controller's JTL (by the server named in each thread name)"
    return dataclasses.replace(part, measurement=dataclasses.replace(measurement, notes=[note, *measurement.notes]))


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
