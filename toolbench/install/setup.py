"""The setup of one host, and of every remote host of a scenario: its steps in order, then a
record of what changed and how to undo it, kept there and here. Idempotent: a host whose
needs are met is left as it is and said to have nothing to do."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from toolbench.errors import HostError
from toolbench.hosts import ssh
from toolbench.install import needs as needs_of
from toolbench.install import setup_steps as steps
from toolbench.install.needs import HostNeeds
from toolbench.install.setup_steps import Lack, Steps
from toolbench.record import store
from toolbench.scenario.read import Scenario

RECORD = "setup-record.json"


@dataclass(frozen=True)
class HostSetup:
    label: str
    done: Steps
    records: tuple[str, ...] = ()  # where the record of the changes was written: there, here
    tool_paths: dict[str, str] = field(default_factory=dict)  # program -> path there, for hosts.*.tools


def setup_host(host: ssh.SSHHost, wanted: HostNeeds, record_dir: Path, root: str | None = None) -> HostSetup:
    done = Steps()
    done.lacks += [Lack(why, "") for why in wanted.cannot]
    m = steps.machine(host, root)
    steps.packages(m, wanted.packages, done)
    paths = {}
    python = steps.venv(m, wanted.python_tools, _locust_version(), done) if not _blocked(done, "python3-venv") else None
    if python:
        paths["python"] = python
    if wanted.jmeter:
        launcher = steps.jmeter(m, done)
        if launcher:
            paths["jmeter"] = launcher
    steps.prerequisites(m, wanted.prerequisites, done)
    records = _record(m, done, record_dir) if done.changes else ()
    return HostSetup(host.label, done, records, paths)


def setup_scenario(scenario: Scenario, record_dir: Path, root: str | None = None, *,
                   known_hosts: Path | None = None, trust_new_key: bool = False) -> list[HostSetup]:
    """Every remote host of the scenario in turn; one that cannot be reached or read is a
    setup that lacks the connection, with the reason, and the others go on."""
    results = []
    for wanted in needs_of.of_scenario(scenario):
        try:
            with ssh.SSHHost(wanted.spec, known_hosts=known_hosts, trust_new_key=trust_new_key) as host:
                results.append(setup_host(host, wanted, record_dir, root))
        except HostError as exc:
            results.append(HostSetup(wanted.label, Steps(lacks=[Lack(str(exc), "")])))
    return results


def lines(result: HostSetup) -> list[str]:
    """What to print for a host: one line when it cannot be set up, else its changes with their
    undo commands, or that it had nothing to do."""
    done = result.done
    if done.lacks:
        commands = [lack.command for lack in done.lacks if lack.command]
        said = f"{result.label}: cannot set up: {'; '.join(lack.what for lack in done.lacks)}"
        return [said + (f"; run there: {' && '.join(dict.fromkeys(commands))}" if commands else "")]
    if not done.changes:
        out = [f"{result.label}: nothing to do ({len(done.unchanged)} checks met)"]
    else:
        out = [f"{result.label}: changed: {change.what}   (undo: {change.undo})" for change in done.changes]
        out.append(f"{result.label}: recorded in {' and '.join(result.records)}")
    if result.tool_paths:
        paths = ", ".join(f"{name}: {path}" for name, path in sorted(result.tool_paths.items()))
        out.append(f"{result.label}: give the scenario this host's tools: {{{paths}}}")
    return out


def _blocked(done: Steps, package: str) -> bool:
    return any(lack.what.startswith(package) or f", {package}" in lack.what.split(":", 1)[0] for lack in done.lacks)


def _locust_version() -> str | None:
    """The Locust installed here, so that the workers there speak the master's protocol."""
    try:
        return metadata.version("locust")
    except metadata.PackageNotFoundError:
        return None


def _record(m: steps.Machine, done: Steps, record_dir: Path) -> tuple[str, ...]:
    """Appends this setup's changes to the record there (<root>/setup-record.json) and here
    (<record_dir>/<host>.json); a record that cannot be written there is still kept here."""
    at = store.utc_now()
    entries = [{"at": at, "host": m.host.label, "what": c.what, "undo": c.undo} for c in done.changes]
    remote = f"{m.root}/{RECORD}"
    local = record_dir / (re.sub(r"[^A-Za-z0-9_.-]", "_", m.host.label) + ".json")
    record_dir.mkdir(parents=True, exist_ok=True)
    earlier = json.loads(local.read_text()) if local.is_file() else []
    local.write_text(json.dumps(earlier + entries, indent=2) + "\n")
    try:
        there = steps.read_text(m, remote)
        steps.write_text(m, remote, json.dumps((json.loads(there) if there else []) + entries, indent=2) + "\n")
    except (HostError, ValueError) as exc:
        done.unchanged.append(f"the record could not be written there: {exc}")
        return (str(local),)
    return (f"{m.host.label}:{remote}", str(local))
