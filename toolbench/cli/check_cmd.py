"""`toolbench check RUN_DIR`, and the end of `toolbench run`: criteria evaluated, the
end-of-run summary, JUnit XML and the exit code a pipeline gates on.

Exit codes (README, "Exit codes"): 0 every criterion passed and every planned cell ran ok;
1 a criterion failed or is unknown; 2 a usage or scenario error; 3 a cell failed, timed out,
found no tool or did not run; 128 + the signal's number when a run was stopped (130 Ctrl-C).
When cells and criteria both failed, 3 wins: the figures the criteria read are incomplete.
A disturbed cell (foreign work on the machine while it ran) did not fail: it is said, and
left out of the criteria, which then may not find the cells they need (1)."""
from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable

import yaml

from toolbench.cli import examples
from toolbench.cli.commands import cell_summary, print_json
from toolbench.cli.outputs import json_quiet, output_file
from toolbench.cli.terminal import safe
from toolbench.export import junit
from toolbench.record import store, yamltext
from toolbench.record.manifest import RunStatus
from toolbench.record.schema import RunResult, Status
from toolbench.scenario import claims, criteria
from toolbench.scenario.claims import ClaimSet
from toolbench.scenario.criteria import Evaluation, Verdict, evaluate, spec

if TYPE_CHECKING:
    from toolbench.scenario.read import Scenario

EXIT_CRITERIA = 1
EXIT_CELLS = 3
FAIL_ON = ("any", "criteria", "cells", "none")
SHOWN_PER_CRITERION = 10  # the cells listed under a criterion not met; the rest are counted
MARKS = {Verdict.PASSED: "✓", Verdict.FAILED: "✗", Verdict.UNKNOWN: "?"}
ENDINGS = {RunStatus.INTERRUPTED: "the run was interrupted", RunStatus.FAILED: "the run failed"}


def add_gate_arguments(p: argparse.ArgumentParser) -> None:
    """What fails a pipeline: shared by `run` and `check`."""
    p.add_argument("--junit", type=Path, metavar="FILE", help="write the cells and criteria as JUnit XML")
    p.add_argument("--fail-on", choices=FAIL_ON, default="any",
                   help="what makes the exit code non-zero: failed criteria (1), failed cells (3), "
                        "any of them (the default) or none")


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """`run`'s gate: the shared options, and whether a failed cell ends the run."""
    add_gate_arguments(p)
    stop = p.add_mutually_exclusive_group()
    stop.add_argument("--keep-going", dest="fail_fast", action="store_false", default=False,
                      help="run every planned cell even after one failed (the default)")
    stop.add_argument("--fail-fast", dest="fail_fast", action="store_true",
                      help="end the run at the first cell that fails or times out; the cells not run count "
                           "as failed (exit 3)")


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    p = subparsers.add_parser(
        "check", help="evaluate a stored run's criteria again, and those given here",
        description="Evaluates the criteria of the scenario a run was made with (kept in its manifest) and "
                    "any given with --criteria on the run's stored results; runs nothing and changes nothing "
                    "in the run folder.",
        epilog=examples.EXAMPLES["check"], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("run_dir", type=Path, metavar="RUN_DIR")
    p.add_argument("--criteria", action="append", default=[], metavar="EXPR",
                   help="a criterion over every cell, e.g. 'p99_ms < 50' or 'engine.rps >= 0.95 * ab.rps' "
                        "(repeatable)")
    add_gate_arguments(p)
    json_quiet(p, "the verdicts as JSON on stdout (every cell's status and every criterion)",
               "print nothing; the exit code says it")
    p.set_defaults(func=check)


@dataclass(frozen=True)
class CellTally:
    results: list[RunResult]  # the latest record of each cell
    missing: list[str]  # planned cells without a record
    incomplete: str | None = None  # why the run as a whole did not end complete

    @property
    def bad(self) -> list[RunResult]:
        return [r for r in self.results if r.outcome.status not in (Status.OK, Status.UNSUPPORTED, Status.DISTURBED)]

    @property
    def disturbed(self) -> list[RunResult]:
        return [r for r in self.results if r.outcome.status is Status.DISTURBED]

    @property
    def failed(self) -> bool:
        return bool(self.bad or self.missing or self.incomplete)


def tally(results: list[RunResult], planned: Iterable[str] | None, status: RunStatus | None) -> CellTally:
    latest = list({r.identity.cell_id: r for r in results}.values())
    have = {r.identity.cell_id for r in latest}
    missing = [cell for cell in planned or () if cell not in have]
    incomplete = None if status in (None, RunStatus.COMPLETE) else ENDINGS.get(status, "the run never recorded its end")
    return CellTally(latest, missing, incomplete)


def exit_code(cells: CellTally, evaluations: list[Evaluation], fail_on: str) -> int:
    if fail_on in ("any", "cells") and cells.failed:
        return EXIT_CELLS
    if fail_on in ("any", "criteria") and any(e.verdict is not Verdict.PASSED for e in evaluations):
        return EXIT_CRITERIA
    return 0


def check(args: argparse.Namespace) -> int:
    run = store.RunDir.open(args.run_dir)
    manifest = run.manifest()
    results = run.results()
    declared = _declared(manifest.scenario.text)
    tools = {r.identity.label for r in results} | set(declared.get("tools", ()))
    targets = {r.identity.target_label for r in results if r.identity.target_label} | set(declared.get("targets", ()))
    source = manifest.scenario.source or f"{run.path}/manifest.json"
    given = spec.from_stored_scenario(manifest.scenario.text, source, tools, targets)
    given += spec.from_arguments(args.criteria, tools)
    evaluations = evaluate.evaluate(given, results)
    cells = tally(results, None, manifest.status)
    code = exit_code(cells, evaluations, args.fail_on)
    if args.junit:
        junit.write(output_file(args.junit, "--junit"), manifest.scenario.name, junit.Cells(cells.results, cells.missing), evaluations)
    if args.json:
        _print_verdicts(run.path, code, results, evaluations, missing=cells.missing)
    elif not args.quiet:
        for line in summary_lines(cells, evaluations, code):
            print(safe(line))  # a cell's error and a criterion's detail quote the stored run
    return code


def _declared(text: str | None) -> dict[str, list[str]]:
    """The tools and targets a stored scenario names, read loosely: a run stopped early may
    have no result of some, and its criteria may still name them."""
    try:
        top = yamltext.load(text) if text else None  # bounded: the stored text may come from anyone
    except yaml.YAMLError:
        return {}
    if not isinstance(top, dict):
        return {}
    matrix = top.get("matrix") if isinstance(top.get("matrix"), dict) else {}
    tools = matrix.get("tool", [])
    targets = top.get("targets") if isinstance(top.get("targets"), dict) else {}
    return {"tools": [str(t) for t in (tools if isinstance(tools, list) else [tools])],
            "targets": [str(t) for t in targets]}


def finish_run(args: argparse.Namespace, loaded: Scenario, run_dir: Path, planned: list[str], *,
               interrupted: bool = False) -> int:
    """After `run`: criteria evaluated and stored in the run folder with the scenario's claims, the
    report rendered (with them), the summary printed, ending on the report's path; the exit code returned."""
    from toolbench.report import render

    run = store.RunDir.open(run_dir)
    results = run.results()
    evaluations = evaluate.evaluate(loaded.criteria, results)
    if loaded.criteria:
        criteria.save(run.path, evaluations)
    else:
        criteria.forget(run.path)
    if loaded.claims:
        claims.save(run.path, ClaimSet(loaded.claims, loaded.source))
    else:
        claims.forget(run.path)
    report, data = render.render_with_data([run.path])
    cells = tally(results, planned, RunStatus.INTERRUPTED if interrupted else None)
    code = exit_code(cells, evaluations, args.fail_on)
    if args.junit:
        junit.write(output_file(args.junit, "--junit"), data.title, junit.Cells(cells.results, cells.missing), evaluations)
    if args.json:
        _print_verdicts(run.path, code, results, evaluations, report=str(report))
        return code
    if args.quiet:
        print(safe(report), flush=True)
        return code
    headline = data.verdicts[0].headline if data.verdicts else ""
    # An interrupted run exits 128 + the signal's number, which the CLI says on its own.
    lines = summary_lines(cells, evaluations, None if interrupted else code)
    print(safe("\n".join(([f"verdict: {headline}"] if headline else []) + lines)))
    print(safe(report), flush=True)
    return code


def _print_verdicts(run_dir: Path, code: int, results: list[RunResult], evaluations: list[Evaluation],
                    **extra: object) -> None:
    """`run --json` and `check --json`: one record of the cells, the criteria and the exit code."""
    print_json({"run_dir": str(run_dir.resolve()), **extra, "exit_code": code,
                "cells": [cell_summary(r) for r in results], "criteria": [e.to_dict() for e in evaluations]})


def summary_lines(cells: CellTally, evaluations: list[Evaluation], code: int | None) -> list[str]:
    lines = [_cells_line(cells)]
    lines += [f"  ✗ {r.identity.cell_id}: {r.outcome.status.value.replace('_', ' ')}"
              + (f": {r.outcome.error}" if r.outcome.error else "") for r in cells.bad[:SHOWN_PER_CRITERION]]
    lines += [f"  ~ {r.identity.cell_id}: disturbed, left out of the verdict: {r.outcome.error}"
              for r in cells.disturbed[:SHOWN_PER_CRITERION]]
    if evaluations:
        counts = {v: sum(1 for e in evaluations if e.verdict is v) for v in Verdict}
        lines.append("criteria: " + ", ".join(f"{n} {v.value}" for v, n in counts.items() if n)
                     + (" (unknown: a figure was absent, which is not a pass)" if counts[Verdict.UNKNOWN] else ""))
        lines += _criteria_lines(evaluations)
    else:
        lines.append("criteria: none given")
    if code is not None:
        lines.append(f"exit {code}: " + {0: "ok", EXIT_CRITERIA: "a criterion was not met",
                                         EXIT_CELLS: "cells failed or did not run"}[code])
    return lines


def _cells_line(cells: CellTally) -> str:
    ok = sum(1 for r in cells.results if r.outcome.status is Status.OK)
    skipped = sum(1 for r in cells.results if r.outcome.status is Status.UNSUPPORTED)
    parts = [f"{ok} ok", f"{len(cells.bad)} failed" if cells.bad else "",
             f"{len(cells.disturbed)} disturbed (by other work on the machine)" if cells.disturbed else "",
             f"{skipped} unsupported (skipped)" if skipped else "",
             f"{len(cells.missing)} not run" if cells.missing else "", cells.incomplete or ""]
    return f"cells: {len(cells.results) + len(cells.missing)}: " + ", ".join(p for p in parts if p)


def _criteria_lines(evaluations: list[Evaluation]) -> list[str]:
    by_criterion: dict[tuple[str, str, str], list[Evaluation]] = {}
    for e in evaluations:
        by_criterion.setdefault((e.where, e.criterion, e.selector), []).append(e)
    lines = []
    for (_, text, selector), found in by_criterion.items():
        worst = (Verdict.FAILED if any(e.verdict is Verdict.FAILED for e in found) else
                 Verdict.UNKNOWN if any(e.verdict is Verdict.UNKNOWN for e in found) else Verdict.PASSED)
        passed = sum(1 for e in found if e.verdict is Verdict.PASSED)
        where = f" ({selector})" if selector else ""
        lines.append(f"  {MARKS[worst]} {text}{where}: {passed} of {len(found)} passed")
        shown = [e for e in found if e.verdict is not Verdict.PASSED] or found[:1]
        lines += [f"      {MARKS[e.verdict]} {e.subject}: {e.detail}" for e in shown[:SHOWN_PER_CRITERION]]
        if len(shown) > SHOWN_PER_CRITERION:
            lines.append(f"      … and {len(shown) - SHOWN_PER_CRITERION} more")
    return lines
