"""The subcommands behind `toolbench`: each reads its arguments, calls the library, prints."""
from __future__ import annotations

import argparse
import contextlib
import csv
import dataclasses
import json
import sys
import warnings
from pathlib import Path

from toolbench import derive, invariants, registry, store
from toolbench.adapter import Adapter, Found, RawOutput, raw_from_files
from toolbench.errors import Interrupted, Notice, ParserCrash, ToolbenchError
from toolbench.schema import Identity, Outcome, RunResult

def run(args: argparse.Namespace) -> int:
    from toolbench import runner, scenario
    from toolbench.cli.progress import ProgressObserver
    from toolbench.cli.signals import StopOnSignals
    from toolbench.report import render

    with StopOnSignals() as stop:
        loaded = scenario.load(args.scenario, args.profile)
        show = not args.no_progress and sys.stderr.isatty()
        try:
            with ProgressObserver(enabled=show) as observer:
                summary = runner.run(loaded, args.reports, resume=args.resume, observer=observer,
                                     go_on=args.go_on, known_hosts=args.known_hosts,
                                     trust_new_key=args.trust_new_host_key)
        except Interrupted as exc:
            # What was measured before the stop is on disk: render it, then say how the run ended.
            by = stop.received.name if stop.received else None
            try:
                report = render.render_run(Path(str(exc.run_dir)))
            except ToolbenchError as problem:
                warnings.warn(Notice(f"the report was not rendered: {problem}"), stacklevel=1)
            else:
                with contextlib.suppress(OSError):  # after SIGHUP the terminal may be gone
                    print(report, flush=True)
            raise Interrupted(exc.run_dir, by) from None
        _print_results_table(store.RunDir.open(summary.run_dir).results())
        print(render.render_run(summary.run_dir))
    return 0


def validate(args: argparse.Namespace) -> int:
    from toolbench import plan, scenario

    loaded = scenario.load(args.scenario, args.profile)
    for other in loaded.profiles:  # a tool option in any profile is checked too, not only the one asked for
        plan.expand(scenario.load(args.scenario, other))
    cells = plan.expand(loaded)
    unsupported = [c for c in cells if not c.support.ok]
    for planned in cells:
        state = "run" if planned.support.ok else f"unsupported: {planned.support.reason}"
        print(f"  {planned.cell.id:<32} {state}")
    profile = f" (profile {loaded.profile})" if loaded.profile else ""
    print(f"{args.scenario}{profile}: ok, {len(cells)} cells, {len(unsupported)} unsupported")
    return 0


def parse(args: argparse.Namespace) -> int:
    from toolbench.runs_found import runs

    tool = registry.get(args.tool) if args.tool else None
    results = [result for run in runs(args.files, registry.adapters(), tool)
               for result in results_of(run.adapter, run.name, run.paths)]
    if args.format == "json":
        # NaN and Infinity are not JSON: the invariants keep them out, and if one ever got
        # through, this refuses to print it rather than write a file no reader accepts.
        try:
            text = json.dumps([r.to_dict() for r in results], indent=2, sort_keys=True, allow_nan=False)
        except ValueError as exc:
            raise ToolbenchError(f"the parsed result is not JSON: {exc}") from None
        print(text)
    elif args.format == "csv":
        rows = [store.flatten(r) for r in results]
        columns = sorted({key for row in rows for key in row})
        writer = csv.DictWriter(sys.stdout, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    else:
        _print_results_table(results)
    return 0


def results_of(adapter: Adapter, name: str, paths: list[Path]) -> list[RunResult]:
    """The result of each run the files hold: one, or one per part (a log of many runs)."""
    try:
        raw = raw_from_files(adapter, name, paths)
        parts = adapter.parts(raw)
    except OSError as exc:
        raise ToolbenchError(f"{name}: cannot read: {exc.strerror or exc}") from None
    except ToolbenchError:
        raise
    except Exception as exc:  # a plug-in's classify() or parts() may fail in any way
        raise ParserCrash(adapter.name, exc) from exc
    if not parts:
        return [_parse_group(adapter, name, raw)]
    return [_parse_group(adapter, f"{name}-{part}", dataclasses.replace(raw, part=part, source=f"{name} ({part})"))
            for part in parts]


def _parse_group(adapter: Adapter, name: str, raw: RawOutput) -> RunResult:
    measurement = invariants.parse_checked(adapter, raw)
    status, error = derive.cell_status(measurement, 0, timed_out=False, interrupted=False, timeout_s=0,
                                 stderr=raw.stderr)
    identity = Identity(scenario="parsed", cell_id=Path(name).name, tool=measurement.tool,
                        tool_version=measurement.tool_version, url=measurement.url,
                        concurrency=measurement.concurrency)
    return RunResult(identity, Outcome(status, error=error), measurement)


def tools(args: argparse.Namespace) -> int:
    from toolbench.hosts import LocalHost

    host = LocalHost()
    for name, adapter in registry.adapters().items():
        found = adapter.detect(host)
        shown = f"{found.version}  {found.path}" if isinstance(found, Found) else f"- ({found.reason})"
        print(f"{name:<12} {shown}")
    for name, why in registry.broken().items():
        print(f"{name:<12} - (adapter broken: {why})")
    return 0


def report(args: argparse.Namespace) -> int:
    from toolbench.report import render

    if len(args.runs) > 1 and args.output is None:
        raise ToolbenchError("several runs render into one file: give it with -o")
    print(render.render_runs(args.runs, args.output))
    return 0


def publish(args: argparse.Namespace) -> int:
    from toolbench.report import site

    published = site.publish(args.runs_dir, args.output)
    for problem in published.problems:
        print(f"toolbench: warning: not rendered: {problem}", file=sys.stderr)
    print(published.index)
    return 1 if published.problems else 0


def _print_results_table(results: list[RunResult]) -> None:
    from rich.console import Console
    from rich.table import Table

    from toolbench.report.fmt import number
    from toolbench.stats import throughput

    table = Table(show_edge=False, header_style="bold")
    for column in ("cell", "status", "requests", "failed", "ok req/s", "mean ms", "p99 ms"):
        table.add_column(column, justify="left" if column in ("cell", "status") else "right")
    for r in results:
        table.add_row(r.identity.cell_id, r.outcome.status.value, number(r.measurement.counts.requests_total),
                      number(r.measurement.counts.requests_failed), number(throughput(r)),
                      number(r.measurement.latency.mean_ms, r.measurement.latency.resolution_ms),
                      number(r.measurement.latency.percentiles.p99_ms, r.measurement.latency.resolution_ms))
    Console(file=sys.stderr).print(table)
