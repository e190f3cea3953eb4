"""The scenarios shipped with toolbench, addressable by name (`toolbench run quickstart`): the
checkout's scenarios/ folder, installed from a wheel as the package data toolbench/scenarios/.
A name is the file's path under that folder without `.yaml` (`quickstart`,
`studies/000-flask-tuning`), or its last part alone where no other file has it."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml


@dataclass(frozen=True)
class Bundled:
    name: str
    path: Path
    description: str  # the file's `description:`, on one line; "" when it has none


def folder() -> Path | None:
    """toolbench/scenarios/ of an installed package, else the checkout's scenarios/."""
    package = Path(__file__).resolve().parents[1]
    for candidate in (package / "scenarios", package.parent / "scenarios"):
        if candidate.is_dir():
            return candidate
    return None


def listed() -> list[Bundled]:
    return [Bundled(name, path, _description(path)) for name, path in _named()]


def find(name: str) -> Path | None:
    """The bundled scenario called `name` (its full name, or its last part when only one has it)."""
    every = _named()
    exact = [path for full, path in every if full == name]
    if exact:
        return exact[0]
    last = [path for full, path in every if full.rsplit("/", 1)[-1] == name]
    return last[0] if len(last) == 1 else None


def _named() -> list[tuple[str, Path]]:
    """Each bundled file with its name; no file is read (a name is looked up on every `run`)."""
    root = folder()
    if root is None:
        return []
    return [(path.relative_to(root).with_suffix("").as_posix(), path) for path in sorted(root.rglob("*.yaml"))]


def _description(path: Path) -> str:
    """Read with the safe loader and no positions: this is a listing, not the scenario's parse
    (a malformed bundled file is reported when it is run, with its line)."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError):
        return ""
    text = data.get("description") if isinstance(data, dict) else None
    return " ".join(text.split()) if isinstance(text, str) else ""
