"""`toolbench install`: the recipes of toolbench.install.recipes (each tool's as its adapter
declares it) carried out into the tools folder (toolbench.contract.toolsdir: $TOOLBENCH_TOOLS,
the checkout's .tools/, or the user's data folder for an installed package), idempotently: each
step first checks whether its result is there, and a second call changes nothing and says so."""
from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Callable, Sequence

from toolbench.contract import toolsdir
from toolbench.contract.recipe import Apt, GoModule, Purpose, Script, Step, Venv, how
from toolbench.errors import ToolbenchError, UsageError
from toolbench.install import recipes as installs
from toolbench.install.recipes import Named

Say = Callable[[str], None]


class InstallError(ToolbenchError):
    """A tool could not be installed; the message says what to do instead."""


@dataclass(frozen=True)
class Done:
    name: str
    changed: bool
    what: str  # what was done, or what was found in place


def choose(names: Sequence[str], all_tools: bool = False, purpose: Purpose | None = None) -> list[Named]:
    """The recipes asked for, in table order, each once; an unknown or uninstallable name is
    an error naming it."""
    if not names and not all_tools and purpose is None:
        raise UsageError("name the tools to install, or give --all or --for quickstart|tests")
    table = installs.recipes()
    chosen: set[str] = set()
    if all_tools:
        chosen.update(r.name for r in table if r.load_tool and r.impossible is None)
    if purpose is not None:
        chosen.update(r.name for r in table if purpose in r.purposes)
    by_name = {r.name: r for r in table}
    for name in names:
        found = by_name.get(name)
        if found is None:
            known = ", ".join(r.name for r in table if r.impossible is None)
            raise UsageError(f"no tool named {name!r}: toolbench installs {known}")
        if found.impossible is not None:
            raise InstallError(f"{name}: {found.impossible}")
        chosen.add(name)
    return [r for r in table if r.name in chosen]


def install(recipes: Sequence[Named], say: Say) -> list[Done]:
    """Carries out the recipes: every apt package first (all at once, as root; otherwise an
    InstallError with the exact command), then each tool's own steps; one Done per recipe,
    saying its last step."""
    done = _apt(recipes, say)
    tools = toolsdir.tools_dir()
    for r in recipes:
        for step in r.steps:
            if isinstance(step, GoModule):
                done.append(_go(r.name, step, tools, say))
            elif isinstance(step, Script):
                done.append(_script(r.name, step, tools, say))
            elif isinstance(step, Venv):
                done.append(_venv(r.name, step))
    changed = {d.name for d in done if d.changed}
    last = {d.name: d for d in done}
    return [Done(r.name, r.name in changed, last[r.name].what) for r in recipes if r.name in last]


def installed(step: Step, tools: Path | None) -> bool:
    """Whether a step's result is in place (apt: dpkg says installed)."""
    if isinstance(step, Apt):
        return not _apt_missing(step.packages)
    if isinstance(step, Venv):
        return importlib.util.find_spec(step.module) is not None
    if tools is None:
        return False
    if isinstance(step, GoModule):
        return os.access(tools / step.home / step.binary, os.X_OK)
    return (tools / step.home / step.complete).is_file()


def _apt(recipes: Sequence[Named], say: Say) -> list[Done]:
    wanted = installs.apt_packages(recipes)
    missing = _apt_missing(wanted)
    owners = {r.name: list(r.install.apt_packages()) for r in recipes}
    if missing:
        if os.geteuid() != 0:
            raise InstallError("not root: install these first, then run this again: "
                               f"sudo apt-get update && sudo apt-get install -y {' '.join(missing)}")
        say(f"apt-get install {' '.join(missing)}")
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        _run(["apt-get", "update", "-qq"], "apt-get update", env=env)
        _run(["apt-get", "install", "-y", "-qq", "--no-install-recommends", *missing], "apt-get install", env=env)
    return [Done(name, bool(set(pkgs) & set(missing)), f"apt {' '.join(pkgs)}")
            for name, pkgs in owners.items() if pkgs]


def _apt_missing(packages: Sequence[str]) -> list[str]:
    if not packages:
        return []
    if shutil.which("dpkg-query") is None:
        raise InstallError(f"no dpkg-query: toolbench installs with apt on Debian; install {' '.join(packages)} "
                           "with this system's packages")
    listed = subprocess.run(["dpkg-query", "-W", "-f=${Package} ${Status}\\n", *packages],
                            capture_output=True, text=True, check=False).stdout
    ok = {line.split()[0] for line in listed.splitlines() if line.endswith(" install ok installed")}
    return [p for p in packages if p not in ok]


def _go(name: str, step: GoModule, tools: Path, say: Say) -> Done:
    dest = tools / step.home
    if installed(step, tools):
        return Done(name, False, f"{dest / step.binary}")
    go = shutil.which("go")
    if go is None:
        raise InstallError(f"{name}: needs Go (`{how(step)}`), and go is not on the PATH: "
                           "install it from https://go.dev/dl/")
    say(f"{name}: {how(step)}")
    dest.parent.mkdir(parents=True, exist_ok=True)
    partial = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        env = {**os.environ, "GOBIN": str(partial), "GOFLAGS": f"{os.environ.get('GOFLAGS', '')} -buildvcs=false"}
        _run([go, "install", f"{step.module}@v{step.version}"], f"{name}: go install", env=env)
        os.chmod(partial, 0o755)
        try:
            partial.rename(dest)
        except OSError:  # another install got there first: theirs is as good
            if not installed(step, tools):
                raise
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    return Done(name, True, f"{dest / step.binary}")


def _script(name: str, step: Script, tools: Path, say: Say) -> Done:
    if installed(step, tools):
        return Done(name, False, str(tools / step.home))
    if step.needs and shutil.which(step.needs) is None:
        raise InstallError(f"{name}: {step.script} needs {step.needs}, which is not on the PATH"
                           + (": install Rust with https://rustup.rs" if step.needs == "cargo" else ""))
    source = _source(name, step)
    say(f"{name}: {how(step)}")
    # Run where it lies, not from a copy: a script sources its neighbours (jmeter/install.sh:
    # ../maven_home.sh) and reads its package's templates (as_file copies only out of a zip).
    with resources.as_file(source) as script:
        out = _run(["bash", str(script)], f"{name}: {step.script}",
                   env={**os.environ, "TOOLBENCH_TOOLS": str(tools)})
    if not installed(step, tools):
        raise InstallError(f"{name}: {step.script} ended without writing {tools / step.home / step.complete}")
    lines = out.strip().splitlines()
    return Done(name, True, lines[-1] if lines else str(tools / step.home))


def _venv(name: str, step: Venv) -> Done:
    if not installed(step, None):
        raise InstallError(f"{name}: the Python module {step.module} is not importable here: "
                           "scripts/install.sh installs toolbench's packages into .venv")
    return Done(name, False, f"Python module {step.module} (toolbench's packages)")


def _run(argv: list[str], what: str, env: dict[str, str]) -> str:
    """Runs an install command, its progress on stderr; its stdout is returned."""
    proc = subprocess.run(argv, stdout=subprocess.PIPE, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise InstallError(f"{what} failed (exit {proc.returncode}); its output is above")
    return proc.stdout


def _source(name: str, step: Script) -> Traversable:
    """The script, from the package that ships it as data (in a checkout or a wheel alike)."""
    try:
        source = resources.files(step.package) / step.script
    except ModuleNotFoundError as exc:
        raise InstallError(f"{name}: no package {step.package} to read {step.script} from: {exc}") from exc
    if not source.is_file():
        raise InstallError(f"{name}: {step.path} is missing from its package: reinstall toolbench")
    return source
