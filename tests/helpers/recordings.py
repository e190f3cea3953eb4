"""A tool's recorded runs (tests/fixtures/<tool>/), each a list of its files, grouped as
`toolbench parse` groups them (Adapter.group_name): what the parser property and linear-time
tests feed the adapters."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import FIXTURES
from toolbench.contract.adapter import Adapter, raw_from_files
from toolbench.contract.checked import parse_checked
from toolbench.errors import ParseError

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


def refused_when_changed(adapter: Adapter, recording: Path, changes: tuple[tuple[str, str, str], ...],
                         folder: Path) -> None:
    """Each (old, new, words): the recording with `old` made `new` once is a ParseError saying
    `words`, as `toolbench parse` reads it."""
    text = recording.read_text()
    for old, new, words in changes:
        assert old in text, old
        bad = folder / recording.name
        bad.write_text(text.replace(old, new, 1))
        with pytest.raises(ParseError, match=re.escape(words)):
            parse_checked(adapter, raw_from_files(adapter, "bad", [bad]))
