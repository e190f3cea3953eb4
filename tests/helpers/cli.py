"""The installed toolbench command, run as a user runs it."""
from __future__ import annotations

import subprocess
from pathlib import Path

from conftest import REPO

TOOLBENCH = str(REPO / ".venv" / "bin" / "toolbench")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([TOOLBENCH, *args], capture_output=True, text=True, timeout=120, cwd=cwd)
