"""How toolbench installs each tool it drives, and what its targets, monitor and tests need:
the one table that `toolbench install`, `toolbench tools` and scripts/install.sh all read.

Standard library only: scripts/install.sh asks it for the apt packages before the venv exists
(`python3 -m toolbench.install.recipes --apt-packages tests`)."""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Literal, Sequence

Purpose = Literal["quickstart", "tests"]
PURPOSES: tuple[Purpose, ...] = ("quickstart", "tests")
BOTH: frozenset[Purpose] = frozenset(PURPOSES)
TESTS: frozenset[Purpose] = frozenset({"tests"})


@dataclass(frozen=True)
class Apt:
    """Debian packages, installed with apt-get as root."""
    packages: tuple[str, ...]


@dataclass(frozen=True)
class GoModule:
    """`go install module@vVERSION` into <tools>/go/<binary>-<version>/<binary>."""
    module: str
    version: str
    binary: str

    @property
    def home(self) -> str:
        return f"go/{self.binary}-{self.version}"


@dataclass(frozen=True)
class Script:
    """scripts/<script>: idempotent, builds into <tools>/<home>/ and writes `complete` last."""
    script: str
    home: str
    complete: str = ".toolbench-complete"
    needs: str | None = None  # a program the script runs, looked for on the PATH first


@dataclass(frozen=True)
class Venv:
    """A Python module installed with toolbench's own packages (pyproject.toml) into .venv."""
    module: str


Step = Apt | GoModule | Script | Venv


@dataclass(frozen=True)
class Recipe:
    name: str
    steps: tuple[Step, ...]  # in order: the apt packages a script needs come before it
    purposes: frozenset[Purpose]
    load_tool: bool = True  # False: what a target, the monitor or a test needs, not a tool


@dataclass(frozen=True)
class NotInstallable:
    name: str
    reason: str


RECIPES: tuple[Recipe, ...] = (
    Recipe("ab", (Apt(("apache2-utils",)),), BOTH),
    Recipe("siege", (Apt(("siege",)),), BOTH),
    Recipe("engine", (Venv("toolbench.engine"),), BOTH),
    Recipe("locust", (Venv("locust"),), TESTS),
    Recipe("jmeter", (Apt(("openjdk-17-jdk-headless", "maven")), Script("install_jmeter.sh", "jmeter-5.6.3")), TESTS),
    Recipe("wrk", (Apt(("wrk",)),), TESTS),
    Recipe("hey", (Apt(("hey",)),), TESTS),
    Recipe("h2load", (Apt(("nghttp2-client",)),), TESTS),
    Recipe("httperf", (Apt(("httperf",)),), TESTS),
    Recipe("bombardier", (GoModule("github.com/codesenberg/bombardier", "1.2.6", "bombardier"),), TESTS),
    Recipe("vegeta", (GoModule("github.com/tsenart/vegeta/v12", "12.13.0", "vegeta"),), TESTS),
    Recipe("oha", (Script("install_oha.sh", "cargo/oha-1.16.0", needs="cargo"),), TESTS),
    # javac: the fixed simulation is compiled once per install.
    Recipe("gatling", (Apt(("openjdk-17-jdk-headless", "maven")), Script("install_gatling.sh", "gatling-3.10.5")), TESTS),
    # Not load tools: the bundled target, the monitor's `ss` and `ps`, the SSH and browser tests.
    Recipe("nginx", (Apt(("nginx",)),), BOTH, load_tool=False),
    Recipe("monitor", (Apt(("iproute2", "procps")),), BOTH, load_tool=False),
    Recipe("sshd", (Apt(("openssh-server",)),), TESTS, load_tool=False),
    Recipe("chromium", (Apt(("chromium",)),), TESTS, load_tool=False),
)

NOT_INSTALLABLE: tuple[NotInstallable, ...] = (
    NotInstallable("http_load", "in no package registry toolbench reaches: put http_load on the PATH yourself"),
    NotInstallable("k6", "never run here (AGPL-3.0)"),
)


def recipe(name: str) -> Recipe | NotInstallable | None:
    return next((r for r in (*RECIPES, *NOT_INSTALLABLE) if r.name == name), None)


def for_purpose(purpose: Purpose) -> list[Recipe]:
    return [r for r in RECIPES if purpose in r.purposes]


def apt_packages(recipes: Sequence[Recipe]) -> list[str]:
    """The Debian packages of these recipes, each once, in table order."""
    seen: dict[str, None] = {}
    for r in recipes:
        for step in r.steps:
            if isinstance(step, Apt):
                seen.update(dict.fromkeys(step.packages))
    return list(seen)


def how(step: Step) -> str:
    """One step as the command it comes to."""
    if isinstance(step, Apt):
        return f"apt-get install {' '.join(step.packages)}"
    if isinstance(step, GoModule):
        return f"go install {step.module}@v{step.version}"
    if isinstance(step, Script):
        return f"scripts/{step.script}"
    return f"pip install -e . (toolbench's own packages: {step.module})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m toolbench.install.recipes",
                                     description="The apt packages a purpose needs, one line (for scripts/install.sh).")
    parser.add_argument("--apt-packages", choices=PURPOSES, required=True)
    args = parser.parse_args(argv)
    print(" ".join(apt_packages(for_purpose(args.apt_packages))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
