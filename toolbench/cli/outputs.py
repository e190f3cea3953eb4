"""What the CLI's options name on disk: `-o` is always a file, a folder option always a folder."""
from __future__ import annotations

from pathlib import Path

from toolbench.errors import UsageError


def output_file(path: Path, option: str = "-o") -> Path:
    """A file to write; a folder given instead is an error, never a file named like it inside."""
    if path.is_dir() or str(path).endswith("/"):
        raise UsageError(f"{path}: is a folder; {option} takes a file")
    return path


def output_folder(path: Path, option: str) -> Path:
    if path.exists() and not path.is_dir():
        raise UsageError(f"{path}: is a file; {option} takes a folder")
    return path
