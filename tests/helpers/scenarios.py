"""A scenario file written into a test's folder."""
from __future__ import annotations

from pathlib import Path


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path
