"""A tool's recorded runs (tests/fixtures/<tool>/), each a list of its files, grouped as
`toolbench parse` groups them (Adapter.group_name): what the parser property and linear-time
tests feed the adapters."""
from __future__ import annotations

from pathlib import Path

from conftest import FIXTURES
from toolbench.contract.adapter import Adapter

NOT_OUTPUT = (".md", ".py", ".jmx", ".rc")  # inputs and notes beside the recordings


def recorded_runs(adapter: Adapter) -> list[list[Path]]:
    folder = FIXTURES / adapter.name
    if not folder.is_dir():
        return []
    groups: dict[str, list[Path]] = {}
    for path in sorted(folder.iterdir()):
        if (path.suffix in NOT_OUTPUT or path.name.startswith(("CASES", "README")) or path.name == "body.json"
                or not path.is_file()):
            continue
        groups.setdefault(adapter.group_name(path), []).append(path)
    return list(groups.values())
