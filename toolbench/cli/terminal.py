"""What the CLI prints of text it did not write: a tool's output quoted in an error, a label, a
cell's error, a stored run's figures. Such text may carry terminal control sequences (ESC, OSC,
CSI and the other C0 and C1 control characters) that retitle the window, rewrite what is on the
screen or hide a line; each is shown instead, as `\\x1b`, so that it is seen and does nothing.
Tab and newline stay. Every printer of the CLI passes what it prints through `safe` (or `cell`
for a rich table, whose markup would otherwise read `[link=...]` in a label as a hyperlink)."""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.text import Text

# C0 but tab (\x09) and newline (\x0a), DEL, and C1 (\x80-\x9f: a terminal may read \x9b as CSI).
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def safe(text: object) -> str:
    """`text` with every control character but tab and newline shown as its escape (`\\x1b`)."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", str(text))


def cell(text: object) -> "Text":
    """A rich table's cell of `text`: made safe, and taken as it is, not as rich's markup."""
    from rich.text import Text

    return Text(safe(text))
