"""Reading YAML with positions: every value knows its file, line and key path,
so that a bad scenario is reported as `file:line: key.path: what is wrong`."""
from __future__ import annotations

import contextlib
import contextvars
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

import yaml

from toolbench.errors import ScenarioError
from toolbench.record import yamltext
from toolbench.scenario import names

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h)?\s*$")
_UNIT_S = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}
# The generic bounds of a scenario's values (a key may set a tighter one): past them a value is
# a typo or made to stall a run, never a benchmark. A scenario file is a few kilobytes.
MAX_COUNT = 10**9
MAX_NUMBER = 1e9
MAX_DURATION_S = 86_400.0
MAX_FILE_BYTES = 1 << 20
MAX_REPEAT = 1000
MAX_CONCURRENCY = 1_000_000
MAX_RATE = 1e7  # requests/s
T = TypeVar("T")
D = TypeVar("D")

# While a scenario is read with `collecting()`, an error that reading can step over is kept
# here and reading goes on, so that one pass reports every error of the file.
_collected: contextvars.ContextVar[list[ScenarioError] | None] = contextvars.ContextVar("collected", default=None)


@contextlib.contextmanager
def collecting() -> Iterator[list[ScenarioError]]:
    errors: list[ScenarioError] = []
    token = _collected.set(errors)
    try:
        yield errors
    finally:
        _collected.reset(token)


def in_file_order(errors: list[ScenarioError]) -> list[str]:
    """Each message once (every profile re-reads the keys it does not override), by line."""
    unique = list(dict.fromkeys(str(e) for e in errors))

    def line(message: str) -> int:
        parts = message.split(":", 2)
        return int(parts[1]) if len(parts) > 2 and parts[1].isdigit() else 0

    return sorted(unique, key=line)


def soft(error: ScenarioError) -> None:
    """An error after which reading can go on: kept while collecting, else raised."""
    errors = _collected.get()
    if errors is None:
        raise error
    errors.append(error)


def attempt(read: Callable[[], T], default: D) -> T | D:
    """read(); while collecting, a ScenarioError from it is kept and `default` stands in."""
    try:
        return read()
    except ScenarioError as exc:
        soft(exc)
        return default


@dataclass(frozen=True)
class Node:
    """A YAML node with where it came from."""

    node: yaml.Node
    file: str
    path: str

    @property
    def line(self) -> int:
        return self.node.start_mark.line + 1

    def error(self, message: str) -> ScenarioError:
        # A key may hold a newline or an escape: the message stays one line.
        path = self.path if self.path.isprintable() else repr(self.path)[1:-1]
        return ScenarioError(f"{self.file}:{self.line}: {path or '<top>'}: {message}")

    def _got(self) -> str:
        if isinstance(self.node, yaml.ScalarNode):
            text = repr(self.node.value)
            return text if len(text) <= 60 else text[:50] + "...'"
        return "a list" if isinstance(self.node, yaml.SequenceNode) else "a mapping"

    # scalars ---------------------------------------------------------------
    def scalar(self) -> Any:
        if not isinstance(self.node, yaml.ScalarNode):
            raise self.error(f"expected a value, got {self._got()}")
        try:
            return yaml.safe_load(yaml.serialize(self.node))
        except (ValueError, OverflowError, yaml.YAMLError):  # a 5000-digit int, a 13th month
            raise self.error(f"not a value toolbench can read: {self._got()}") from None

    def string(self) -> str:
        value = self.scalar()
        if not isinstance(value, str) or not value:
            raise self.error(f"expected a non-empty string, got {self._got()}")
        return value

    def name(self) -> str:
        """A name that becomes a folder, a file or part of generated code (see toolbench.scenario.names)."""
        value = self.string()
        why = names.problem(value)
        if why:
            raise self.error(why)
        return value

    def boolean(self) -> bool:
        value = self.scalar()
        if not isinstance(value, bool):
            raise self.error(f"expected true or false, got {self._got()}")
        return value

    def positive_int(self, most: int = MAX_COUNT) -> int:
        value = self.scalar()
        if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
            raise self.error(f"expected a positive integer, got {self._got()}")
        if value > most:
            raise self.error(f"expected a positive integer of at most {most}, got {self._got()}")
        return value

    def number(self, most: float = MAX_NUMBER) -> float:
        """A finite number from 0 to `most`: NaN, infinity and -0.0 are refused too."""
        value = self.scalar()
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise self.error(f"expected a non-negative number, got {self._got()}")
        if not value <= most or math.copysign(1.0, value) < 0:  # NaN compares false
            raise self.error(f"expected a number from 0 to {most:g}, got {self._got()}")
        return float(value)

    def duration_s(self, most: float = MAX_DURATION_S) -> float:
        """`10s`, `2m`, `250ms`, `1h` or a bare number of seconds, at most `most` (a day)."""
        value = self.scalar()
        match = _DURATION.match(str(value)) if not isinstance(value, bool) else None
        if match is None:
            raise self.error(f"expected a duration like 10s, 2m or 250ms, got {self._got()}")
        seconds = float(match.group(1)) * _UNIT_S[match.group(2)]
        if not seconds <= most:  # 1e400 digits read as infinity
            raise self.error(f"expected a duration of at most {most:g}s, got {self._got()}")
        return seconds

    def choice(self, options: tuple[str, ...]) -> str:
        value = self.string()
        if value not in options:
            raise self.error(f"expected one of {', '.join(options)}, got {value!r}")
        return value

    # collections -------------------------------------------------------------
    def items(self, allowed: tuple[str, ...] | None = None) -> dict[str, "Node"]:
        """The children of a mapping; with `allowed`, any other key is an error."""
        if not isinstance(self.node, yaml.MappingNode):
            raise self.error(f"expected a mapping, got {self._got()}")
        children: dict[str, Node] = {}
        for key_node, value_node in self.node.value:
            key = str(key_node.value)
            child_path = f"{self.path}.{key}" if self.path else key
            child = Node(value_node, self.file, child_path)
            if allowed is not None and key not in allowed:
                where = Node(key_node, self.file, child_path)
                soft(where.error(f"unknown key (expected one of {', '.join(allowed)})"))
                continue
            if key in children:
                soft(Node(key_node, self.file, child_path).error("key given twice"))
                continue
            children[key] = child
        return children

    def elements(self) -> Iterator["Node"]:
        if not isinstance(self.node, yaml.SequenceNode):
            raise self.error(f"expected a list, got {self._got()}")
        for i, child in enumerate(self.node.value):
            yield Node(child, self.file, f"{self.path}[{i}]")

    def is_null(self) -> bool:
        return isinstance(self.node, yaml.ScalarNode) and self.node.tag.endswith(":null")

    def is_sequence(self) -> bool:
        return isinstance(self.node, yaml.SequenceNode)

    def is_mapping(self) -> bool:
        return isinstance(self.node, yaml.MappingNode)


def load(path: Path) -> Node:
    """The file's YAML, bounded as a stored text is (record.yamltext: aliases, depth, no tags)."""
    label = str(path)
    text = _text(path, label)
    try:
        root = yamltext.compose(text)
    except yaml.reader.ReaderError as exc:  # a control character; its own text spans lines
        line = text[:exc.position].count("\n") + 1
        code = exc.character if isinstance(exc.character, int) else ord(exc.character)
        raise ScenarioError(f"{label}:{line}: not valid YAML: the character U+{code:04X} is not allowed") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        problem = problem if problem.isprintable() else repr(problem)
        raise ScenarioError(f"{label}{line}: not valid YAML: {problem}") from None
    if root is None:
        raise ScenarioError(f"{label}:1: the file is empty")
    return Node(root, label, "")


def _text(path: Path, label: str) -> str:
    """The file as UTF-8 text (a leading BOM is YAML's to skip), refused past MAX_FILE_BYTES."""
    try:
        with path.open("rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise ScenarioError(f"{label}: cannot read: {exc.strerror}") from None
    if len(data) > MAX_FILE_BYTES:
        raise ScenarioError(f"{label}: larger than {MAX_FILE_BYTES} bytes; a scenario is a few kilobytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise ScenarioError(f"{label}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x})") from None
