"""The table `toolbench install` and `toolbench tools` read: each load tool's install as its
adapter declares it (Adapter.install, toolbench.contract.recipe), then what is not a load tool
and so has no adapter to declare it: the bundled nginx target, the monitor's `ss` and `ps`, the
SSH and browser tests.

Built when asked, from the registry, never at import: a third party's adapter is in it as a
built-in one is, and importing this module loads no adapter."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from toolbench.contract import registry
from toolbench.contract.recipe import BOTH, TESTS, Apt, Install, Purpose, Step


@dataclass(frozen=True)
class Named:
    """One entry of the table: a tool (or target, or helper) and how it is installed."""

    name: str
    install: Install
    load_tool: bool = True  # False: what a target, the monitor or a test needs, not a tool

    @property
    def steps(self) -> tuple[Step, ...]:
        return self.install.steps

    @property
    def purposes(self) -> frozenset[Purpose]:
        return self.install.purposes

    @property
    def impossible(self) -> str | None:
        return self.install.impossible


# Not load tools: the bundled target, the monitor's `ss` and `ps`, the SSH and browser tests.
OTHERS: tuple[Named, ...] = (
    Named("nginx", Install((Apt(("nginx",), program="nginx"),), BOTH), load_tool=False),
    Named("monitor", Install((Apt(("iproute2", "procps")),), BOTH), load_tool=False),
    Named("sshd", Install((Apt(("openssh-server",)),), TESTS), load_tool=False),
    Named("chromium", Install((Apt(("chromium",)),), TESTS), load_tool=False),
)


def recipes() -> list[Named]:
    """Every entry: the load tools in the registry's order (by name), those toolbench cannot
    install included with their reason, then the others. An adapter of the same name as one of
    the others takes its place: the name means that tool."""
    tools = registry.adapters()
    declared = [Named(name, adapter.install) for name, adapter in tools.items()]
    return declared + [other for other in OTHERS if other.name not in tools]


def recipe(name: str) -> Named | None:
    return next((r for r in recipes() if r.name == name), None)


def installable() -> list[Named]:
    """The entries toolbench can install, in table order."""
    return [r for r in recipes() if r.impossible is None]


def for_purpose(purpose: Purpose) -> list[Named]:
    return [r for r in recipes() if purpose in r.purposes]


def apt_packages(chosen: Sequence[Named]) -> list[str]:
    """The Debian packages of these entries, each once, in table order."""
    seen: dict[str, None] = {}
    for r in chosen:
        seen.update(dict.fromkeys(r.install.apt_packages()))
    return list(seen)
