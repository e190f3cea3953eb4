"""`toolbench install TOOL...`: installs tools the way the project does: each as its adapter
declares (Adapter.install), the targets and test helpers as toolbench.install.recipes lists."""
from __future__ import annotations

import argparse
import sys

from toolbench.cli.terminal import safe
from toolbench.contract.recipe import PURPOSES

EPILOG = """examples:
  toolbench install wrk bombardier       # apt packages as root, go modules and scripts into the tools folder
  toolbench install --for quickstart     # what scenarios/quickstart.yaml needs
  toolbench install --for tests          # everything the tests use
  toolbench install --all                # every load tool toolbench can install"""


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser("install", help="install load tools the way toolbench does (apt, go, scripts)",
                              description="Install tools into the checkout's .tools/ ($TOOLBENCH_TOOLS if set; "
                                          "for an installed toolbench, $XDG_DATA_HOME/toolbench/tools), and "
                                          "their Debian packages with apt when root; not root, it prints the apt "
                                          "command and exits 1. A second call changes nothing and says so.",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("tools", nargs="*", metavar="TOOL")
    p.add_argument("--all", action="store_true", help="every load tool toolbench can install")
    p.add_argument("--for", dest="purpose", choices=PURPOSES,
                   help="what the quickstart scenario, or the test suite, needs (targets and test helpers too)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from toolbench.install import tools as install

    def say(line: str) -> None:
        print(safe(f"install: {line}"), file=sys.stderr, flush=True)  # a package manager's words

    done = install.install(install.choose(args.tools, args.all, args.purpose), say)
    for d in done:
        print(safe(f"{d.name:<12} {'installed' if d.changed else 'in place '}  {d.what}"))
    if not any(d.changed for d in done):
        print("nothing to do: everything asked for is installed")
    return 0
