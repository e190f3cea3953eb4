"""`criteria:` in a scenario, and `--criteria` on the command line, parsed into typed
criteria: each an expression (toolbench.scenario.criteria.expr) over named figures
(toolbench.scenario.criteria.figures) and a selector of the cells it applies to.

    criteria:
      - p99_ms < 50                          # every cell
      - expect: error_rate < 1%
        tool: ab                             # selector: tool, target, concurrency, keepalive, rate
        concurrency: [10, 100]
      - engine.rps >= 0.95 * ab.rps          # tool against tool, at the same cell coordinates
"""
from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass, field
from typing import Any, Collection, Mapping, Sequence

import yaml

from toolbench.errors import ScenarioError
from toolbench.record import yamltext
from toolbench.scenario.criteria import expr
from toolbench.scenario.criteria.figures import FIGURES
from toolbench.scenario.yamlread import MAX_CONCURRENCY, MAX_RATE, Node

SELECTORS = ("tool", "target", "concurrency", "keepalive", "rate")
ENTRY_KEYS = ("expect",) + SELECTORS


@dataclass(frozen=True)
class Selector:
    """The cells a criterion applies to: every one when a field is empty, else those whose
    value is listed."""

    tool: tuple[str, ...] = ()
    target: tuple[str, ...] = ()
    concurrency: tuple[int, ...] = ()
    keepalive: tuple[bool, ...] = ()
    rate: tuple[float | None, ...] = ()

    def to_dict(self) -> dict[str, list[Any]]:
        return {key: list(getattr(self, key)) for key in SELECTORS if getattr(self, key)}

    def text(self) -> str:
        return ", ".join(f"{key} {'/'.join(_shown(v) for v in values)}" for key, values in self.to_dict().items())


@dataclass(frozen=True)
class Criterion:
    text: str  # the expression as written
    where: str  # file:line, or `--criteria[N]`
    comparison: expr.Comparison
    selector: Selector = field(default_factory=Selector)

    @property
    def tool_vs_tool(self) -> bool:
        """Every figure names its tool: the criterion compares cells, not one cell."""
        return all(ref.tool is not None for ref in self.comparison.refs())


def parse_expression(text: str, where: str, tools: Collection[str]) -> expr.Comparison:
    """The comparison in `text`; a problem is a ScenarioError saying `where`, the column and what."""
    try:
        comparison = expr.parse(text)
    except expr.ExpressionError as exc:
        raise ScenarioError(f"{where}: {exc} in {text!r}") from None
    for ref in comparison.refs():
        if ref.figure not in FIGURES:
            close = difflib.get_close_matches(ref.figure, FIGURES, n=1)
            hint = f"did you mean {close[0]}? " if close else ""
            raise ScenarioError(f"{where}: column {ref.column}: unknown figure {ref.figure!r} in {text!r} "
                                f"({hint}known: {', '.join(FIGURES)})")
        if ref.tool is not None and ref.tool not in tools:
            dash = "; write a subtraction with spaces around '-'" if "-" in ref.tool else ""
            raise ScenarioError(f"{where}: column {ref.column}: no tool {ref.tool!r} in this run "
                                f"(known: {', '.join(sorted(tools)) or 'none'}){dash}")
    return comparison


def from_node(node: Node, tools: Collection[str], targets: Collection[str]) -> tuple[Criterion, ...]:
    """The scenario's `criteria:` list. `targets`: the names a `target:` may give; a mapping maps
    each to the label its results carry (TargetSpec.display), which the selector then holds."""
    found = []
    for child in node.elements():
        where = f"{child.file}:{child.line}: {child.path}"
        if child.is_sequence() or not isinstance(child.node, yaml.MappingNode):
            text = child.string()
            found.append(Criterion(text, where, parse_expression(text, where, tools)))
            continue
        keys = child.items(ENTRY_KEYS)
        if "expect" not in keys:
            raise child.error("missing required key 'expect' (the criterion, e.g. `p99_ms < 50`)")
        expect = keys["expect"]
        text = expect.string()
        comparison = parse_expression(text, f"{expect.file}:{expect.line}: {expect.path}", tools)
        selector = selector_of(keys, tools, targets)
        if isinstance(targets, Mapping):
            selector = dataclasses.replace(selector, target=tuple(targets[name] for name in selector.target))
        criterion = Criterion(text, where, comparison, selector)
        if criterion.tool_vs_tool and selector.tool:
            raise keys["tool"].error("every figure of this criterion names its tool: a `tool:` selector "
                                     "has nothing to choose")
        found.append(criterion)
    return tuple(found)


def selector_of(keys: dict[str, Node], tools: Collection[str], targets: Collection[str]) -> Selector:
    """The selector keys of a mapping (SELECTORS), each value checked: a tool or target the scenario has."""
    def listed(name: str, read: Any) -> tuple[Any, ...]:
        if name not in keys:
            return ()
        node = keys[name]
        children = list(node.elements()) if node.is_sequence() else [node]
        if not children:
            raise node.error("expected at least one value")
        return tuple(read(c) for c in children)

    def known(among: Collection[str], what: str) -> Any:
        def read(node: Node) -> str:
            value = node.string()
            if value not in among:
                raise node.error(f"no {what} {value!r} in this scenario (known: {', '.join(sorted(among))})")
            return value
        return read

    return Selector(tool=listed("tool", known(tools, "tool")), target=listed("target", known(targets, "target")),
                    concurrency=listed("concurrency", lambda n: n.positive_int(MAX_CONCURRENCY)), keepalive=listed("keepalive", Node.boolean),
                    rate=listed("rate", lambda n: None if n.is_null() else n.number(MAX_RATE)))


def from_arguments(texts: Sequence[str], tools: Collection[str]) -> tuple[Criterion, ...]:
    """`--criteria EXPR`, each applying to every cell."""
    found = []
    for i, text in enumerate(texts, 1):
        where = f"--criteria #{i}"
        found.append(Criterion(text, where, parse_expression(text, where, tools)))
    return tuple(found)


def from_stored_scenario(text: str | None, source: str, tools: Collection[str],
                         targets: Collection[str]) -> tuple[Criterion, ...]:
    """The `criteria:` of a scenario as a run's manifest kept it; lines are the original file's."""
    if not text:
        return ()
    try:
        root = yamltext.compose(text)  # bounded: a run's stored text may come from anyone
    except yamltext.Refused as exc:
        raise ScenarioError(f"{source}: the stored scenario: {exc}") from None
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: the stored scenario is not valid YAML: {exc}") from None
    if not isinstance(root, yaml.MappingNode):
        return ()
    top = Node(root, source, "").items()
    return from_node(top["criteria"], tools, targets) if "criteria" in top else ()


def _shown(value: Any) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "closed"
    return f"{value:g}" if isinstance(value, float) else str(value)
