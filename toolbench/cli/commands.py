"""The subcommands behind `toolbench`: each reads its arguments, calls the library, prints."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import sys
import warnings
from pathlib import Path

from toolbench.cli.outputs import output_file
from toolbench.cli.terminal import cell, safe
from toolbench.contract import registry
from toolbench.contract.adapter import Adapter, Found, RawOutput, raw_from_files
from toolbench.contract.checked import parse_checked
from toolbench.contract.recipe import Install, how
from toolbench.errors import Interrupted, Notice, ParserCrash, ToolbenchError, UsageError
from toolbench.record import derive, store
from toolbench.record.schema import Identity, Outcome, RunResult

EXIT_INVALID = 2  # a scenario that does not validate (README, "Exit codes")


def run(args: argparse.Namespace) -> int:
    from toolbench.cli.check_cmd import finish_run
    from toolbench.cli.progress import ProgressObserver
    from toolbench.cli.signals import StopOnSignals
    from toolbench.run import plan, runner
    from toolbench.scenario import read as scenario

    reports_dir = args.reports_dir
    if args.reports_dir_old is not None:
        warnings.warn(Notice("`run -o DIR` is now `run --reports-dir DIR` (-o names an output file "
                             "everywhere else); taken as --reports-dir this time"), stacklevel=1)
        reports_dir = args.reports_dir_old
    if args.junit:  # said before measuring, not after
        output_file(args.junit, "--junit")
    with StopOnSignals() as stop:
        loaded = scenario.load(args.scenario, args.profile)
        planned = [c.cell.id for c in plan.expand(loaded)]
        show = not (args.no_progress or args.quiet or args.json) and sys.stderr.isatty()
        try:
            with ProgressObserver(enabled=show, quiet=args.quiet or args.json) as observer:
                summary = runner.run(loaded, reports_dir, resume=args.resume, observer=observer,
                                     go_on=args.go_on, known_hosts=args.known_hosts,
                                     trust_new_key=args.trust_new_host_key, fail_fast=args.fail_fast,
                                     retry_disturbed=args.retry_disturbed,
                                     system_check=not args.no_system_check,
                                     allow_commands=args.allow_commands)
        except runner.StoppedEarly as exc:
            print(safe(f"toolbench: {exc}"), file=sys.stderr)
            return finish_run(args, loaded, exc.run_dir, planned)
        except Interrupted as exc:
            # What was measured before the stop is on disk: render it, then say how the run ended.
            by = stop.received.name if stop.received else None
            try:
                with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
                    finish_run(args, loaded, Path(str(exc.run_dir)), planned, interrupted=True)
            except ToolbenchError as problem:
                warnings.warn(Notice(f"the report was not rendered: {problem}"), stacklevel=1)
            raise Interrupted(exc.run_dir, by) from None
        if not (args.quiet or args.json):
            _print_results_table(store.RunDir.open(summary.run_dir).results())
        return finish_run(args, loaded, summary.run_dir, planned)


def cell_summary(r: RunResult) -> dict[str, object]:
    """A cell in `run --json`: what a pipeline checks first; `toolbench export` has the rest."""
    from toolbench.record.stats import throughput

    m = r.measurement
    return {"cell": r.identity.cell_id, "tool": r.identity.label, "status": r.outcome.status.value,
            "error": r.outcome.error, "requests_total": m.counts.requests_total,
            "requests_failed": m.counts.requests_failed, "rps_ok": throughput(r), "mean_ms": m.latency.mean_ms,
            "p99_ms": m.latency.percentiles.p99_ms}


def print_json(value: object) -> None:
    try:
        print(json.dumps(value, indent=2, allow_nan=False))
    except ValueError as exc:
        raise ToolbenchError(f"not JSON: {exc}") from None


def validate(args: argparse.Namespace) -> int:
    from toolbench.errors import ScenarioError
    from toolbench.run import plan, programs, workload_plan
    from toolbench.scenario import read as scenario

    try:
        loaded = scenario.load(args.scenario, args.profile)
        for other in loaded.profiles:  # a tool option in any profile is checked too, not only the one asked for
            plan.expand(scenario.load(args.scenario, other))
        cells = plan.expand(loaded)
    except ScenarioError as exc:
        if not args.json:
            raise
        print_json({"scenario": str(args.scenario), "ok": False, "errors": list(getattr(exc, "problems", [str(exc)]))})
        return EXIT_INVALID
    unsupported = [c for c in cells if not c.support.ok]
    if args.json:
        print_json({"scenario": str(args.scenario), "profile": loaded.profile, "ok": True, "errors": [],
                     "cells": [{"cell": c.cell.id, "runs": c.support.ok, "reason": c.support.reason or None}
                               for c in cells],
                     "programs": [{"where": p.where, "key": p.key, "program": p.what}
                                  for p in programs.started(loaded)],
                     "workload": workload_plan.as_json(workload_plan.table(loaded)) if loaded.workload else None})
        return 0
    if args.quiet:
        return 0
    for planned in cells:
        warm = f" after a {planned.cell.warmup_s:g}s warm-up" if planned.cell.warmup_s else ""
        state = f"run{warm}" if planned.support.ok else f"unsupported: {planned.support.reason}"
        print(safe(f"  {planned.cell.id:<32} {state}"))
    for line in workload_plan.table_lines(workload_plan.table(loaded)):  # what each tool makes of the workload
        print(safe(line))
    for said in plan.ramp_warnings(cells):
        warnings.warn(Notice(said), stacklevel=1)
    started = programs.started(loaded)
    if started:  # code the scenario brings: `run` starts it only with --allow-commands
        print(f"programs this scenario starts ({len(started)}; `run` needs --allow-commands):")
        for program in started:
            print(safe(f"  {program.line()}"))
    profile = f" (profile {loaded.profile})" if loaded.profile else ""
    print(safe(f"{args.scenario}{profile}: ok, {len(cells)} cells, {len(unsupported)} unsupported"))
    return 0


def parse(args: argparse.Namespace) -> int:
    from toolbench.contract.runs_found import runs

    tool = registry.get(args.tool) if args.tool else None
    results = [result for run in runs(args.files, registry.adapters(), tool)
               for result in results_of(run.adapter, run.name, run.paths, args.merge_runs,
                                        frozenset({"jmeter_subsamples"} if args.jmeter_subsamples else ()))]
    if args.format == "json":
        # NaN and Infinity are not JSON: the invariants keep them out, and if one ever got
        # through, this refuses to print it rather than write a file no reader accepts.
        try:
            text = json.dumps([r.to_dict() for r in results], indent=2, sort_keys=True, allow_nan=False)
        except ValueError as exc:
            raise ToolbenchError(f"the parsed result is not JSON: {exc}") from None
        print(text)
    elif args.format == "csv":
        from toolbench.export import formats as export
        from toolbench.export import rows

        text = io.StringIO()
        export.write(rows.frame([rows.flatten(r) for r in results]), "csv", None, text)
        sys.stdout.write(safe(text.getvalue()))
    else:
        _print_results_table(results)
    return 0


def results_of(adapter: Adapter, name: str, paths: list[Path], merge_runs: bool = False,
               read_options: frozenset[str] = frozenset()) -> list[RunResult]:
    """The result of each run the files hold: one, or one per part (a log of many runs), or
    those parts merged into one (`part` "all")."""
    try:
        raw = dataclasses.replace(raw_from_files(adapter, name, paths), read_options=read_options)
        parts = adapter.parts(raw)
    except OSError as exc:
        raise ToolbenchError(f"{name}: cannot read: {exc.strerror or exc}") from None
    except ToolbenchError:
        raise
    except Exception as exc:  # a plug-in's classify() or parts() may fail in any way
        raise ParserCrash(adapter.name, exc) from exc
    if not parts:
        return [_parse_group(adapter, name, raw)]
    if merge_runs:
        return [_parse_group(adapter, name, dataclasses.replace(raw, part="all"))]
    return [_parse_group(adapter, f"{name}-{part}", dataclasses.replace(raw, part=part, source=f"{name} ({part})"))
            for part in parts]


def _parse_group(adapter: Adapter, name: str, raw: RawOutput) -> RunResult:
    measurement = parse_checked(adapter, raw)
    status, error = derive.cell_status(measurement, 0, timed_out=False, interrupted=False, timeout_s=0,
                                 stderr=raw.stderr)
    identity = Identity(scenario="parsed", cell_id=Path(name).name, tool=measurement.tool,
                        tool_version=measurement.tool_version, url=measurement.url,
                        concurrency=measurement.concurrency)
    return RunResult(identity, Outcome(status, error=error), measurement)


def tools(args: argparse.Namespace) -> int:
    from toolbench.hosts.local import LocalHost

    host = LocalHost()
    listed = []
    for name, adapter in registry.adapters().items():
        found = adapter.detect(host)
        if isinstance(found, Found):
            listed.append({"tool": name, "found": True, "version": found.version, "path": str(found.path),
                           "reason": None, "install": None})
        else:
            listed.append({"tool": name, "found": False, "version": None, "path": None, "reason": found.reason,
                           "install": _install_command(name, adapter.install)})
    for name, why in registry.broken().items():
        listed.append({"tool": name, "found": False, "version": None, "path": None, "reason": f"adapter broken: {why}",
                       "install": None})
    if args.json:
        print_json(listed)
    for tool in listed if not args.json else ():
        if args.quiet:
            if tool["found"]:
                print(safe(tool["tool"]))
            continue
        if tool["found"]:
            shown = f"{tool['version']}  {tool['path']}"
        else:
            shown = f"- ({tool['reason']})" + (f"; install: {tool['install']}" if tool["install"] else "")
        print(safe(f"{tool['tool']:<12} {shown}"))
    return 0


def _install_command(name: str, install: Install) -> str:
    """The exact command that installs a missing tool, with what it comes to, from its adapter's
    declaration; for a tool toolbench does not install, the adapter's reason."""
    if install.impossible is not None:
        return f"not by toolbench: {install.impossible}"
    return f"toolbench install {name}  ({'; '.join(how(s) for s in install.steps)})"


def report(args: argparse.Namespace) -> int:
    from toolbench.cli.claims_cmd import given
    from toolbench.report import render

    if len(args.runs) > 1 and args.output is None:
        raise UsageError("several runs render into one file: give it with -o")
    output = output_file(args.output) if args.output else None
    print(safe(render.render_runs(args.runs, output, claims=given(args.claims_from))))
    return 0


def publish(args: argparse.Namespace) -> int:
    from toolbench.cli.outputs import output_folder
    from toolbench.report import site

    if args.site_old is not None:
        raise UsageError(f"publish: the site's folder is given with --site now (-o names an output file): "
                         f"--site {args.site_old}")
    if args.site is not None:
        output_folder(args.site, "--site")
    published = site.publish(args.runs_dir, args.site, with_raw=args.with_raw, redact=args.redact,
                             compare=[tuple(pair) for pair in args.compare], private_addresses=args.private_addresses)
    for problem in published.problems:
        print(safe(f"toolbench: warning: not rendered: {problem}"), file=sys.stderr)
    print(safe(published.index))
    return 1 if published.problems else 0


def _print_results_table(results: list[RunResult]) -> None:
    from rich.console import Console
    from rich.table import Table

    from toolbench.cli.progress import no_color
    from toolbench.record.stats import throughput
    from toolbench.report.fmt import number

    table = Table(show_edge=False, header_style="bold")
    for column in ("cell", "status", "requests", "failed", "ok req/s", "mean ms", "p99 ms"):
        # A long cell name folds rather than ends in "…": appended runs differ only at the end (-run2).
        table.add_column(column, justify="left" if column in ("cell", "status") else "right",
                         overflow="fold" if column == "cell" else "ellipsis")
    for r in results:  # the cell's name may be a file's name or a stored run's: taken as text, made safe
        table.add_row(cell(r.identity.cell_id), cell(r.outcome.status.value),
                      number(r.measurement.counts.requests_total), number(r.measurement.counts.requests_failed),
                      number(throughput(r)),
                      number(r.measurement.latency.mean_ms, r.measurement.latency.resolution_ms),
                      number(r.measurement.latency.percentiles.p99_ms, r.measurement.latency.resolution_ms))
    Console(file=sys.stdout, color_system=None if no_color() else "auto").print(table)
