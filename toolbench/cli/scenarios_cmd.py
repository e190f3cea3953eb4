"""`toolbench scenarios`: the bundled scenarios by name; and the SCENARIO argument of run,
validate, prereq and setup, which takes a file or a bundled scenario's name."""
from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from toolbench.cli.terminal import safe
from toolbench.scenario import bundled

EPILOG = """examples:
  toolbench scenarios                    # the bundled scenarios, a line each
  toolbench run quickstart               # run one by name, from anywhere
  toolbench validate studies/000-flask-tuning"""


def scenario_arg(text: str) -> Path:
    """A scenario file that exists, else a bundled scenario of that name; else a usage error
    naming both ways."""
    given = Path(text)
    if given.exists() or given.suffix in (".yaml", ".yml"):
        return given
    found = bundled.find(text)
    if found is not None:
        return found
    if "/" in text:
        return given  # a path that does not exist: the scenario's loader says so, with the path
    names = ", ".join(b.name for b in bundled.listed())
    raise argparse.ArgumentTypeError(f"{text!r}: no such file, and no bundled scenario of that name "
                                     f"(bundled: {names or 'none'})")


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser("scenarios", help="list the bundled scenarios, which run and validate take by name",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--json", action="store_true", help="the list as JSON on stdout")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    every = bundled.listed()
    if args.json:
        print(json.dumps([{"name": b.name, "path": str(b.path), "description": b.description} for b in every],
                         indent=2))
        return 0
    width = max((len(b.name) for b in every), default=0)
    for b in every:
        print(safe(f"{b.name:<{width}}  {_gist(b.description)}".rstrip()))
    return 0


def _gist(text: str, most: int = 100) -> str:
    """The description's first sentence, cut at `most` characters: a listing, a line each."""
    first = re.split(r"(?<=[.?!])\s", text, maxsplit=1)[0]
    return first if len(first) <= most else first[:most - 1].rstrip() + "…"
