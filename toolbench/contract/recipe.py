"""How a load tool is installed, declared by its adapter (Adapter.install): the steps that
`toolbench install` carries out here and from which `toolbench setup` derives what a remote
host needs.

It is part of the contract because the adapter is the one place that knows its tool: a
third-party adapter declares its install exactly as a built-in one, and the install layer
reads nothing of a tool that is not declared here. Standard library only: it is plain data,
read by the install layer without it needing anything else of an adapter."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Purpose = Literal["quickstart", "tests"]
PURPOSES: tuple[Purpose, ...] = ("quickstart", "tests")
BOTH: frozenset[Purpose] = frozenset(PURPOSES)
TESTS: frozenset[Purpose] = frozenset({"tests"})


@dataclass(frozen=True)
class Apt:
    """Debian packages, installed with apt-get as root. `program` is what is on the PATH once
    they are installed: how a remote host is seen to have them. `build_only`: needed only to
    install the tool here (maven, to resolve artifacts), not to run it on a remote host."""

    packages: tuple[str, ...]
    program: str | None = None
    build_only: bool = False


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
    """A bash script shipped as data of the Python package `package` (read through
    importlib.resources, so that it is found in an installed wheel as in a checkout): idempotent,
    it builds into <tools>/<home>/ (TOOLBENCH_TOOLS) and writes `complete` there last, and its
    last line of output says what it installed."""

    script: str
    home: str
    package: str
    complete: str = ".toolbench-complete"
    needs: str | None = None  # a program the script runs, looked for on the PATH first

    @property
    def path(self) -> str:
        """Where the script is inside the installed packages, for people to read."""
        return f"{self.package.replace('.', '/')}/{self.script}"


@dataclass(frozen=True)
class Venv:
    """A Python module installed with toolbench's own packages (pyproject.toml) into its venv."""

    module: str


Step = Apt | GoModule | Script | Venv


@dataclass(frozen=True)
class Install:
    """What an adapter declares: its steps, in order (the apt packages a script needs come
    before it), and the purposes (`toolbench install --for`) that include the tool; or, for a
    tool toolbench does not install, `impossible`: why, in words that say what to do instead."""

    steps: tuple[Step, ...] = ()
    purposes: frozenset[Purpose] = frozenset()
    impossible: str | None = None

    def __post_init__(self) -> None:
        # Either a way to install it or a reason there is none: a recipe with neither would
        # make `toolbench install` report success for a tool it never installed.
        if (self.impossible is None) == (not self.steps):
            raise ValueError("an Install has steps, or says why it is impossible, never both or neither")
        if self.impossible is not None and self.purposes:
            raise ValueError("a tool toolbench cannot install is in no purpose")
        if not self.purposes <= set(PURPOSES):
            raise ValueError(f"purposes are among {', '.join(PURPOSES)}: {sorted(self.purposes)}")

    def apt_packages(self) -> tuple[str, ...]:
        """The Debian packages of the steps, in order: all that installing the tool here needs."""
        return tuple(p for s in self.steps if isinstance(s, Apt) for p in s.packages)


def how(step: Step) -> str:
    """One step as the command it comes to."""
    if isinstance(step, Apt):
        return f"apt-get install {' '.join(step.packages)}"
    if isinstance(step, GoModule):
        return f"go install {step.module}@v{step.version}"
    if isinstance(step, Script):
        return f"bash {step.path}"
    return f"pip install -e . (toolbench's own packages: {step.module})"
