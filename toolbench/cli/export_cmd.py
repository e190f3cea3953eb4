"""`toolbench export RUN... -o FILE`: stored runs as CSV, JSON, Markdown or Parquet, and
their HDR histograms as `.hgrm` files."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from toolbench.cli.terminal import safe

EPILOG = """examples:
  toolbench export reports/quickstart-20261130T011015Z -o results.csv
  toolbench export reports -o all.parquet                   # every run in the folder
  toolbench export RUN_A RUN_B --format markdown            # to stdout
  toolbench export RUN --columns identity.cell_id,rates.rps_ok,latency.percentiles.p99_ms -o t.md
  toolbench export RUN --hgrm hgrm/                          # each cell's HDR histogram (.hgrm)"""


def add_parser(subparsers: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    from toolbench.export.formats import FORMATS

    p = subparsers.add_parser("export", help="export stored runs as CSV, JSON, Markdown or Parquet",
                              description="One row per result, nested fields as dotted column names with their "
                                          "units; a figure the tool did not report is empty (null), never 0.",
                              epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="a run folder, or a folder of runs")
    p.add_argument("--format", choices=FORMATS, help="default: from the output file's suffix (.csv .json .md .parquet)")
    p.add_argument("-o", "--output", type=Path, metavar="FILE", help="the file to write (default: stdout)")
    p.add_argument("--columns", metavar="A,B,...", help="only these columns, in this order")
    p.add_argument("--hgrm", type=Path, metavar="DIR",
                   help="also write each cell's HDR histogram as DIR/<run>/<cell>.hgrm (latency in ms)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from toolbench.cli.outputs import output_file, output_folder
    from toolbench.export import formats as export

    if args.hgrm is not None:
        output_folder(args.hgrm, "--hgrm")
        for written in export.write_hgrm(args.runs, args.hgrm):
            print(safe(f"{written.path}  ({written.requests} requests)"), file=sys.stderr)
        if args.output is None and args.format is None:
            return 0
    output = output_file(args.output) if args.output is not None else None
    fmt = export.format_of(output, args.format) if output is not None else (args.format or "csv")
    columns = [c.strip() for c in args.columns.split(",") if c.strip()] if args.columns else None
    export.write(export.table(args.runs, columns, fmt), fmt, output, sys.stdout)
    if output is not None:
        print(safe(output), file=sys.stderr)
    return 0
