"""`toolbench prereq check|apply SCENARIO`: the scenario's ulimits and sysctls on this host."""
from __future__ import annotations

import argparse

from toolbench.cli.scenarios_cmd import scenario_arg
from toolbench.cli.terminal import safe

EXIT_UNMET = 1


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser("prereq", help="check or apply a scenario's prerequisites (ulimit, sysctl)",
                              epilog="examples:\n  toolbench prereq check scenarios/quickstart.yaml\n"
                                     "  sudo toolbench prereq apply scenarios/quickstart.yaml",
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("action", choices=("check", "apply"),
                   help="check: show found / wanted / ok; apply: set what is unmet (root or sudo)")
    p.add_argument("scenario", type=scenario_arg, help="a scenario file, or a bundled scenario's name (toolbench scenarios)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from toolbench.hosts import prereq
    from toolbench.hosts.local import LocalHost
    from toolbench.scenario import read as scenario

    loaded = scenario.load(args.scenario)
    host = LocalHost()
    if not loaded.generator.is_local or not loaded.target_host.is_local:
        print("note: remote hosts are not supported yet; checking this machine")
    if args.action == "apply":
        return _apply(prereq.apply(host, loaded.prerequisites))
    findings = prereq.check(host, loaded.prerequisites, max(loaded.matrix.concurrency))
    if not findings:
        print(safe(f"{args.scenario}: asks for no prerequisites"))
    for finding in findings:
        print(safe(f"{finding.host}: {prereq.describe(finding)}"))  # what the host answered
    unmet = prereq.blocking(findings)
    if unmet:
        print(f"{len(unmet)} required prerequisite(s) unmet: `toolbench prereq apply {args.scenario}` "
              "sets the sysctls (root or sudo)")
        return EXIT_UNMET
    return 0


def _apply(applied: "object") -> int:
    from toolbench.hosts.prereq import Applied

    assert isinstance(applied, Applied)
    for change in applied.changes:
        print(safe(f"changed {change.key}: {change.before} -> {change.after}   (undo: {change.undo})"))
    for line in applied.unchanged:
        print(safe(f"unchanged: {line}"))
    for line in applied.problems:
        print(safe(f"not applied: {line}"))
    if applied.changes:
        print("sysctl changes last until the next reboot; nothing was written to /etc/sysctl.d")
    return EXIT_UNMET if applied.problems else 0
