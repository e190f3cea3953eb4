"""Names that become folder names, file names or generated code: scenario names, tool
names, variant names, an adapter's file names. One strict pattern for all of them, so a
name can never climb out of its folder (`..`, `/`) or break out of a string (newlines,
quotes)."""
from __future__ import annotations

import re

PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
RULE = "letters, digits, '_', '.' and '-', starting with a letter or digit, at most 64 characters, no '..'"


def problem(value: object) -> str | None:
    """Why `value` is not a name, or None when it is one."""
    if not isinstance(value, str) or not PATTERN.fullmatch(value) or ".." in value:
        return f"not a valid name: {value!r} (expected {RULE})"
    return None
