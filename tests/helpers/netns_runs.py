"""toolbench run inside the control namespace of tests/helpers/netns.py, against its machines."""
from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path

from helpers import netns
from toolbench.record import store
from toolbench.record.schema import RunResult

TOOLBENCH = [sys.executable, "-m", "toolbench.cli.main"]


def scenario(testnet: netns.TestNet, folder: Path, tool: str, stop: str, extra: str = "") -> Path:
    target = testnet.machines["target"].address
    generators = "".join(
        f"    - {{name: {role}, address: {m.address}, user: {m.sshd.user}, key: {json.dumps(str(m.sshd.client_key))}}}\n"
        for role, m in testnet.machines.items() if role.startswith("gen") and m.sshd is not None)
    path = folder / f"{tool}.yaml"
    path.write_text(f"""\
name: scaleout-{tool}
target: {{url: "http://{target}:{PORT}/"}}
hosts:
  generators:
{generators}matrix: {{tool: [{tool}], concurrency: [4], keepalive: [true]}}
stop: {stop}
probe: {{interval: 500ms, baseline: 3}}
{extra}""")
    return path


def run_in_ctl(testnet: netns.TestNet, path: Path, reports: Path,
               known_hosts: Path | None = None) -> tuple[subprocess.CompletedProcess[bytes], list[RunResult], str]:
    """toolbench run in the `ctl` machine: its results and its report's text."""
    done = testnet.run("ctl", [*TOOLBENCH, "run", str(path), "--reports-dir", str(reports), "--quiet",
                               "--known-hosts", str(known_hosts or testnet.known_hosts())], timeout_s=300)
    runs = [p for p in reports.iterdir() if p.is_dir()] if reports.is_dir() else []
    assert len(runs) == 1, (done.stdout + done.stderr).decode()
    report = runs[0] / "report.html"
    return done, store.RunDir.open(runs[0]).results(), report.read_text() if report.exists() else ""


def by_client(log: Path, since: int) -> collections.Counter[str]:
    lines = log.read_bytes()[since:].decode().splitlines()
    return collections.Counter(line.split()[0] for line in lines)


PORT = netns.NGINX_PORT
