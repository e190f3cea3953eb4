"""`toolbench claims RUN_DIR`: a study's claims checked on a stored run, printed as the Markdown
table the study pages (docs/studies/) carry; and `--claims-from SCENARIO`, shared with `report`,
for a run made before claims existed."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from toolbench.cli import examples
from toolbench.cli.scenarios_cmd import scenario_arg
from toolbench.cli.terminal import safe
from toolbench.errors import UsageError
from toolbench.record import store
from toolbench.scenario import claims as scenario_claims
from toolbench.scenario.claims import ClaimSet


def add_claims_from(p: argparse.ArgumentParser) -> None:
    p.add_argument("--claims-from", type=scenario_arg, metavar="SCENARIO",
                   help="the claims of this scenario file (or bundled scenario's name), instead of those stored "
                        "with the run (claims.json): for a run made before claims existed")


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser(
        "claims", help="print a study's claims checked on a stored run, as a Markdown table",
        description="Checks the claims stored with a run (or those of --claims-from) on its stored results and "
                    "prints them as a Markdown table: claim, the article's figure, ours with its noise, verdict. "
                    "The same table opens the run's report; runs nothing and changes nothing in the run folder.",
        epilog=examples.EXAMPLES["claims"], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    add_claims_from(p)
    p.set_defaults(func=claims)


def given(path: Path | None) -> ClaimSet | None:
    """The claims of `--claims-from`, read by the scenario's own parser; None when not given."""
    if path is None:
        return None
    from toolbench.scenario import read

    loaded = read.load(path)
    if not loaded.claims:
        raise UsageError(f"{path}: the scenario has no `claims:`")
    return ClaimSet(loaded.claims, str(path))


def claims(args: argparse.Namespace) -> int:
    from toolbench.report.claims_check import check_all
    from toolbench.report.claims_section import markdown

    run = store.RunDir.open(args.run_dir)
    found = given(args.claims_from) or scenario_claims.load(run.path)
    if found is None or not found.claims:
        raise UsageError(f"{run.path}: no claims stored with the run ({scenario_claims.FILE}); "
                         "give a scenario's with --claims-from SCENARIO")
    sys.stdout.write(safe(markdown(check_all(found.claims, run.results()))))
    return 0
