"""The scenario's text as a run's manifest keeps it, read back as YAML without letting it grow.

A stored run may come from anyone, and YAML's aliases let a few hundred bytes stand for
millions of nodes (a "billion laughs"): PyYAML builds them shared, cheaply, but whatever walks
or prints the result then expands them. Reading here counts every node as it will be walked,
each alias as the whole node it names, and refuses (`Refused`, a yaml.YAMLError) a text that
expands past MAX_NODES, or an alias inside the node it names (a loop). A real scenario is a few
hundred nodes, aliases or not. It also refuses nesting past MAX_DEPTH (PyYAML composes
recursively: `[[[[...` a few thousand deep is a RecursionError, not a YAML error) and any
explicit tag but the core schema's (`!!binary`, `!!python/...`, `!foo`): a scenario is plain
strings, numbers, booleans, lists and maps. The user's own scenario file is read here too."""
from __future__ import annotations

from typing import Any

import yaml

MAX_NODES = 20_000
MAX_DEPTH = 64  # a real scenario nests 5 or 6 deep
_CORE = "tag:yaml.org,2002:"
# Explicit tags that only say what plain YAML would have said: anything else is refused.
_PLAIN_TAGS = {"!", *(_CORE + t for t in ("str", "int", "float", "bool", "null", "seq", "map"))}


class Refused(yaml.YAMLError):
    """A text whose aliases would expand past the bound or loop, nested too deep, or tagged.
    `problem_mark` says where, as on PyYAML's own errors."""

    def __init__(self, problem: str, mark: Any = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.problem_mark = mark


class _Bounded(yaml.SafeLoader):
    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._sizes: dict[int, int] = {}  # id(node) -> its nodes with aliases expanded, once it is whole
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        alias = isinstance(event, yaml.AliasEvent)
        tag = None if alias else event.tag
        if tag is not None and tag not in _PLAIN_TAGS:
            shown = "!!" + tag[len(_CORE):] if tag.startswith(_CORE) else tag
            raise Refused(f"a YAML tag ({shown[:60]!r}) is not accepted: give a plain value", event.start_mark)
        if self._depth >= MAX_DEPTH:
            raise Refused(f"nested deeper than {MAX_DEPTH} levels; refusing to read it", event.start_mark)
        self._depth += 1
        try:
            node = super().compose_node(parent, index)
        finally:
            self._depth -= 1
        if alias:  # the node it names: counted already, unless it is still being composed
            if id(node) not in self._sizes:
                raise Refused("an alias inside the node it names (a loop); refusing to read it", event.start_mark)
            return node
        self._sizes[id(node)] = size = 1 + sum(self._sizes[id(child)] for child in _children(node))
        if size > MAX_NODES:
            raise Refused(f"its aliases expand past {MAX_NODES} nodes; refusing to read it", node.start_mark)
        return node


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    return []


def load(text: str) -> Any:
    """The text as Python values (yaml.safe_load), bounded; raises yaml.YAMLError (Refused too)."""
    return yaml.load(text, Loader=_Bounded)


def compose(text: str) -> yaml.Node | None:
    """The text as YAML nodes (yaml.compose with the safe loader), bounded, for toolbench.scenario's Node."""
    return yaml.compose(text, Loader=_Bounded)
