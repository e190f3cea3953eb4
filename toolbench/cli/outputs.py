"""What the CLI's options name: `-o` is always a file, a folder option always a folder, and
`--json`/`--quiet` mean the same on every command that has them."""
from __future__ import annotations

import argparse
from pathlib import Path

from toolbench.errors import UsageError
from toolbench.record import outfile


def output_file(path: Path, option: str = "-o") -> Path:
    """A file to write; a folder given instead is an error, never a file named like it inside, and
    so is a device, FIFO or socket (said before any work, and checked again as it is written)."""
    if path.is_dir() or str(path).endswith("/"):
        raise UsageError(f"{path}: is a folder; {option} takes a file")
    if (refused := outfile.refusal(path)) is not None:
        raise UsageError(str(refused))
    return path


def output_folder(path: Path, option: str) -> Path:
    if path.exists() and not path.is_dir():
        raise UsageError(f"{path}: is a file; {option} takes a folder")
    return path


def json_quiet(p: argparse.ArgumentParser, json_help: str, quiet_help: str) -> None:
    shown = p.add_mutually_exclusive_group()
    shown.add_argument("--json", action="store_true", help=json_help)
    shown.add_argument("-q", "--quiet", action="store_true", help=quiet_help)
