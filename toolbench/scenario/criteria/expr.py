"""Criterion expressions: a tokenizer and a recursive-descent parser for one comparison of
arithmetic over numbers and figure names. Nothing here is ever handed to eval.

    criterion := sum COMPARE sum
    sum       := product (("+" | "-") product)*
    product   := unary (("*" | "/") unary)*
    unary     := "-" unary | atom
    atom      := NUMBER ["%"] | NAME | "(" sum ")"

A NAME is a figure (`p99_ms`) or a tool's figure (`engine.rps`): the part before the last dot
names the tool. Tool names may hold `-` and `.`, so a subtraction is written with spaces
around its `-` (`a - b`); `a-b` reads as one name. `1%` is 0.01.
"""
from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass
from typing import Callable, Iterator, Union

COMPARISONS: dict[str, Callable[[float, float], bool]] = {
    "<=": operator.le, ">=": operator.ge, "==": operator.eq, "!=": operator.ne,
    "<": operator.lt, ">": operator.gt}
ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv}
MAX_LENGTH = 500

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<number>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?%?)
  | (?P<name>[A-Za-z_](?:[A-Za-z0-9_.-]*[A-Za-z0-9_])?)
  | (?P<op><=|>=|==|!=|<|>|[-+*/()])
""", re.VERBOSE)


class ExpressionError(ValueError):
    """A criterion that does not read; `column` is 1-based within the expression."""

    def __init__(self, column: int, message: str) -> None:
        super().__init__(f"column {column}: {message}")
        self.column = column
        self.message = message


@dataclass(frozen=True)
class Token:
    kind: str  # number, name, op, end
    text: str
    column: int


@dataclass(frozen=True)
class Number:
    value: float


@dataclass(frozen=True)
class Ref:
    """A figure, of the result at hand (`tool` None) or of the named tool's result at the same
    cell coordinates."""

    figure: str
    tool: str | None
    column: int

    @property
    def text(self) -> str:
        return f"{self.tool}.{self.figure}" if self.tool else self.figure


@dataclass(frozen=True)
class Negate:
    operand: "Node"


@dataclass(frozen=True)
class Binary:
    op: str
    left: "Node"
    right: "Node"


Node = Union[Number, Ref, Negate, Binary]


@dataclass(frozen=True)
class Comparison:
    op: str
    left: Node
    right: Node

    def refs(self) -> list[Ref]:
        return list(_refs(self.left)) + list(_refs(self.right))


def tokenize(text: str) -> list[Token]:
    if len(text) > MAX_LENGTH:
        raise ExpressionError(MAX_LENGTH, f"longer than {MAX_LENGTH} characters")
    tokens, pos = [], 0
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None:
            raise ExpressionError(pos + 1, f"unexpected character {text[pos]!r}")
        kind = match.lastgroup or ""
        if kind != "space":
            tokens.append(Token(kind, match.group(), pos + 1))
        pos = match.end()
    tokens.append(Token("end", "", len(text) + 1))
    return tokens


def parse(text: str) -> Comparison:
    """One comparison; raises ExpressionError with the column of what does not fit."""
    parser = _Parser(tokenize(text))
    left = parser.sum()
    op = parser.peek()
    if op.text not in COMPARISONS:
        raise ExpressionError(op.column, f"expected a comparison ({', '.join(COMPARISONS)}), got {_shown(op)}")
    parser.advance()
    right = parser.sum()
    end = parser.peek()
    if end.kind != "end":
        raise ExpressionError(end.column, f"expected the end of the criterion, got {_shown(end)}")
    return Comparison(op.text, left, right)


class _Parser:
    def __init__(self, tokens: list[Token]) -> None:
        self.tokens = tokens
        self.pos = 0

    def peek(self) -> Token:
        return self.tokens[self.pos]

    def advance(self) -> Token:
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def sum(self) -> Node:
        node = self.product()
        while self.peek().text in ("+", "-"):
            op = self.advance().text
            node = Binary(op, node, self.product())
        return node

    def product(self) -> Node:
        node = self.unary()
        while self.peek().text in ("*", "/"):
            op = self.advance().text
            node = Binary(op, node, self.unary())
        return node

    def unary(self) -> Node:
        if self.peek().text == "-":
            self.advance()
            return Negate(self.unary())
        return self.atom()

    def atom(self) -> Node:
        token = self.advance()
        if token.kind == "number":
            percent = token.text.endswith("%")
            value = float(token.text.rstrip("%"))
            if not math.isfinite(value):  # 1e999 reads as infinity: no threshold means that
                raise ExpressionError(token.column, f"the number {token.text[:30]!r} is too large")
            return Number(value / 100 if percent else value)
        if token.kind == "name":
            tool, _, figure = token.text.rpartition(".")
            return Ref(figure, tool or None, token.column)
        if token.text == "(":
            inner = self.sum()
            close = self.advance()
            if close.text != ")":
                raise ExpressionError(close.column, f"expected ')', got {_shown(close)}")
            return inner
        raise ExpressionError(token.column, f"expected a number or a figure's name, got {_shown(token)}")


def _shown(token: Token) -> str:
    return "the end" if token.kind == "end" else repr(token.text)


def _refs(node: Node) -> Iterator[Ref]:
    if isinstance(node, Ref):
        yield node
    elif isinstance(node, Negate):
        yield from _refs(node.operand)
    elif isinstance(node, Binary):
        yield from _refs(node.left)
        yield from _refs(node.right)


def value(node: Node, values: dict[Ref, float]) -> float:
    """The node's value with every Ref looked up in `values`; ZeroDivisionError as Python raises it."""
    if isinstance(node, Number):
        return node.value
    if isinstance(node, Ref):
        return values[node]
    if isinstance(node, Negate):
        return -value(node.operand, values)
    return ARITHMETIC[node.op](value(node.left, values), value(node.right, values))


def holds(comparison: Comparison, values: dict[Ref, float]) -> tuple[bool, float, float]:
    """Whether the comparison holds, with both sides' values."""
    left, right = value(comparison.left, values), value(comparison.right, values)
    return COMPARISONS[comparison.op](left, right), left, right
