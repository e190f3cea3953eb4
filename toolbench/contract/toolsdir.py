"""Where toolbench's own installs of the tools live: $TOOLBENCH_TOOLS, else `.tools/` of the
checkout, else (an installed package) $XDG_DATA_HOME/toolbench/tools; laid out by
`toolbench install` as `<kind>/<name>-<version>/` (for example go/bombardier-1.2.6/bombardier,
jmeter-5.6.3/bin/jmeter)."""
from __future__ import annotations

import os
from pathlib import Path


def checkout() -> Path | None:
    """The source tree this package runs from (the folder with pyproject.toml and
    scripts/install.sh); None for an installed package."""
    for folder in Path(__file__).resolve().parents:
        if (folder / "pyproject.toml").is_file() and (folder / "scripts" / "install.sh").is_file():
            return folder
    return None


def tools_dir() -> Path:
    """$TOOLBENCH_TOOLS, else the .tools folder of the checkout, else, for an installed package
    (which has no folder of its own to write in), the user's data folder: the same place
    whichever directory toolbench is started from. It may not exist yet."""
    if os.environ.get("TOOLBENCH_TOOLS"):
        return Path(os.environ["TOOLBENCH_TOOLS"])
    repo = checkout()
    if repo is not None:
        return repo / ".tools"
    # The XDG base directory spec: a relative $XDG_DATA_HOME is invalid and is ignored.
    data = os.environ.get("XDG_DATA_HOME", "")
    base = Path(data) if os.path.isabs(data) else Path.home() / ".local" / "share"
    return base / "toolbench" / "tools"


def _version_key(folder: Path, prefix: str) -> list[int]:
    return [int(p) if p.isdigit() else 0 for p in folder.name[len(prefix):].split(".")]


def newest(under: str, name: str, inside: str, complete: str | None = None) -> list[str]:
    """The paths `<tools>/<under>/<name>-<version>/<inside>`, newest version first, of the
    folders holding `complete` (default: `inside` itself), the file an install writes last;
    `under` may be "" for a folder directly in the tools directory."""
    base = tools_dir() / under  # Path / "" is the path itself
    if not base.is_dir():
        return []
    prefix = f"{name}-"
    folders = [f for f in base.glob(f"{prefix}*") if (f / (complete or inside)).exists()]
    folders.sort(key=lambda f: _version_key(f, prefix), reverse=True)
    return [str(f / inside) for f in folders]
