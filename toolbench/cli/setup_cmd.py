"""`toolbench setup SCENARIO`: prepares the scenario's remote generator and target hosts over SSH."""
from __future__ import annotations

import argparse
from pathlib import Path

from toolbench.cli.scenarios_cmd import scenario_arg
from toolbench.cli.terminal import safe

EXIT_UNMET = 1
EXAMPLES = """examples:
  toolbench setup lab.yaml
  toolbench setup my.yaml --root /opt/toolbench --known-hosts lab_known_hosts
  toolbench setup my.yaml --trust-new-host-key      # record a machine's key seen for the first time"""


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser(
        "setup", help="install what a scenario needs on its remote hosts, over SSH",
        description="Installs the scenario's tools on every remote generator and target host (apt; Locust and "
                    "toolbench into a venv; a copy of JMeter), applies its prerequisites with root or sudo, and "
                    "records each change with the command that undoes it. A second run changes nothing.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario", type=scenario_arg, help="a scenario file, or a bundled scenario's name (toolbench scenarios)")
    p.add_argument("--root", metavar="DIR", help="toolbench's folder on each host (default: $HOME/.toolbench there)")
    p.add_argument("--record-dir", type=Path, default=Path("reports/setup"), metavar="DIR",
                   help="where the record of the changes is kept here (default: reports/setup/)")
    p.add_argument("--known-hosts", type=Path, metavar="FILE",
                   help="SSH known_hosts to check the hosts' keys against, besides ~/.ssh/known_hosts")
    p.add_argument("--trust-new-host-key", action="store_true", help="accept a key never seen before, and record it")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from toolbench.install import setup
    from toolbench.scenario import read as scenario

    loaded = scenario.load(args.scenario)
    results = setup.setup_scenario(loaded, args.record_dir, args.root, known_hosts=args.known_hosts,
                                   trust_new_key=args.trust_new_host_key)
    if not results:
        print(f"{args.scenario}: every host is local: nothing to set up over SSH (scripts/install.sh sets up this one)")
    for result in results:
        for line in setup.lines(result):
            print(safe(line))  # a remote host's words
    return EXIT_UNMET if any(result.done.lacks for result in results) else 0
