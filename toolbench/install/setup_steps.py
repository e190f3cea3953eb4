"""Each need of a host (toolbench.install.needs) checked there and, when unmet, met: packages
with apt-get, a virtual environment with Locust or toolbench, a copy of JMeter's home, the
prerequisites. A step that finds its need met changes nothing; one that cannot meet it says
what is missing and the exact command to run there (a `Lack`), and changes nothing either."""
from __future__ import annotations

import hashlib
import shlex
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from toolbench.contract import toolsdir
from toolbench.errors import HostError
from toolbench.hosts import prereq
from toolbench.hosts.ssh import SSHHost
from toolbench.install.needs import ENGINE_REQUIREMENTS, Package
from toolbench.scenario import sysctls
from toolbench.scenario.read import Prerequisites

INSTALL_TIMEOUT_S = 900.0  # apt-get and pip over a slow mirror
COPIED = ".toolbench-copied"  # written last into a copied JMeter home
SOURCE_STAMP = "toolbench-source.sha256"  # the hash of the source tree installed into the venv
# toolbench's source files that make an installable tree (setup.py's packages, pyproject's package-dir).
SOURCE_PARTS = ("pyproject.toml", "setup.py", "README.md", "toolbench", "adapters", "scenarios")
_PROBE = ('id -u; printf "%s\\n" "$HOME"; ( . /etc/os-release 2>/dev/null; echo "${ID:-unknown} ${ID_LIKE:-}" ); '
          'command -v apt-get || echo; sudo -n true 2>/dev/null && echo sudo || echo no-sudo')


@dataclass(frozen=True)
class Change:
    what: str
    undo: str  # the shell command, run there, that puts it back


@dataclass(frozen=True)
class Lack:
    what: str  # what is missing there
    command: str  # the exact command to run there; "" when there is none to give


@dataclass
class Steps:
    """One host's setup so far."""

    changes: list[Change] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    lacks: list[Lack] = field(default_factory=list)


@dataclass(frozen=True)
class Machine:
    """What setup needs to know about a host before any step: who it runs as, where its
    files go, which OS, and how to become root there (None: it cannot)."""

    host: SSHHost
    root: str  # toolbench's folder there (absolute)
    os_ids: tuple[str, ...]
    apt_get: str | None
    sudo: list[str] | None  # [] as root, ["sudo", "-n"] with passwordless sudo

    @property
    def debian_like(self) -> bool:
        return bool({"debian", "ubuntu"} & set(self.os_ids))

    def sudo_word(self) -> str:
        """What the user types there before a command that needs root."""
        return "" if self.sudo == [] else "sudo "

    def run(self, argv: list[str], timeout_s: float = INSTALL_TIMEOUT_S) -> tuple[bool, str]:
        """True and the output when it exits 0, else False and its last line."""
        captured = self.host.capture(argv, timeout_s=timeout_s)
        text = (captured.stderr.strip() or captured.stdout.strip()).splitlines()
        return captured.exit_code == 0, (text[-1][:300] if text else f"exit code {captured.exit_code}")


def machine(host: SSHHost, root: str | None) -> Machine:
    captured = host.capture(["sh", "-c", _PROBE], timeout_s=30)
    lines = captured.stdout.splitlines()
    if captured.exit_code != 0 or len(lines) != 5:
        raise HostError(f"{host.label}: cannot read who and what the machine is: {captured.stderr.strip()[:200]}")
    uid, home, os_ids, apt_get, sudo = (line.strip() for line in lines)
    where = root or f"{home.rstrip('/')}/.toolbench"
    if not where.startswith("/") or ".." in where.split("/"):
        raise HostError(f"{host.label}: no absolute folder for toolbench's files there (HOME is {home!r})")
    privilege = [] if uid == "0" else ["sudo", "-n"] if sudo == "sudo" else None
    return Machine(host, where.rstrip("/") or "/", tuple(os_ids.split()), apt_get or None, privilege)


def packages(m: Machine, wanted: Sequence[Package], done: Steps) -> None:
    missing = [p for p in wanted if not _present(m, p)]
    if not missing:
        if wanted:
            done.unchanged.append(f"packages present: {', '.join(p.apt for p in wanted)}")
        return
    names = [p.apt for p in missing]
    command = f"{m.sudo_word()}apt-get install -y {' '.join(names)}"
    if not m.debian_like:
        done.lacks.append(Lack(f"{', '.join(names)}: not Debian or Ubuntu ({' '.join(m.os_ids)}), toolbench "
                               "installs with apt only", f"install {' '.join(names)} with its package manager"))
        return
    if m.apt_get is None:
        done.lacks.append(Lack(f"{', '.join(names)}: no apt-get on the login's PATH", command))
        return
    if m.sudo is None:
        done.lacks.append(Lack(f"{', '.join(names)}: installing needs root or passwordless sudo", f"sudo {command}"
                               if not command.startswith("sudo") else command))
        return
    install = [*m.sudo, "env", "DEBIAN_FRONTEND=noninteractive", "apt-get", "install", "-y", "-q", *names]
    ok, said = m.run(install)
    if not ok and "Unable to locate package" in said:  # a fresh machine's package lists are empty
        m.run([*m.sudo, "apt-get", "update", "-q"])
        ok, said = m.run(install)
    if not ok:
        done.lacks.append(Lack(f"{', '.join(names)}: apt-get install failed: {said}", command))
        return
    done.changes.append(Change(f"installed {' '.join(names)} (apt)", f"{m.sudo_word()}apt-get remove -y {' '.join(names)}"))


def _present(m: Machine, package: Package) -> bool:
    if package.program is not None and m.host.which(package.program) is not None:
        return True
    return bool(package.probe) and m.host.capture(list(package.probe), timeout_s=30).exit_code == 0


def venv(m: Machine, tools: Sequence[str], locust_version: str | None, done: Steps) -> str | None:
    """The venv at <root>/venv with the tools that run as `python -m`; its Python's path there."""
    if not tools:
        return None
    folder = f"{m.root}/venv"
    python = f"{folder}/bin/python"
    if m.host.which(python) is None:
        ok, said = m.run(["python3", "-m", "venv", folder])
        if not ok:
            done.lacks.append(Lack(f"cannot make a virtual environment: {said}", f"python3 -m venv {shlex.quote(folder)}"))
            return None
        done.changes.append(Change(f"made the virtual environment {folder}", f"rm -rf {shlex.quote(folder)}"))
    if "locust" in tools:
        _locust(m, python, locust_version, done)
    if "engine" in tools:
        _toolbench(m, python, done)
    return python


def _locust(m: Machine, python: str, version: str | None, done: Steps) -> None:
    captured = m.host.capture([python, "-m", "locust", "--version"], timeout_s=60)
    if captured.exit_code == 0 and (version is None or f"locust {version} " in captured.stdout + captured.stderr):
        done.unchanged.append(f"Locust {version or ''} in {python}".replace("  ", " "))
        return
    requirement = f"locust=={version}" if version else "locust"
    pip = [python, "-m", "pip", "install", "-q", requirement]
    ok, said = m.run(pip)
    if not ok:
        done.lacks.append(Lack(f"pip could not install {requirement}: {said}", shlex.join(pip)))
        return
    done.changes.append(Change(f"installed {requirement} into {python}", shlex.join([python, "-m", "pip", "uninstall",
                                                                                      "-y", "locust"])))


def _toolbench(m: Machine, python: str, done: Steps) -> None:
    """toolbench itself, from this source tree, for the engine and the server sampler."""
    source = source_tree()
    if source is None:
        done.lacks.append(Lack("toolbench's source tree to copy (this toolbench is not run from a checkout)", ""))
        return
    digest = tree_hash(source)
    stamp = f"{m.root}/{SOURCE_STAMP}"
    have = m.host.capture(["sh", "-c", 'cat -- "$1" 2>/dev/null', "sh", stamp])
    if have.stdout.strip() == digest and m.host.capture([python, "-c", "import toolbench.engine.command"],
                                                         timeout_s=60).exit_code == 0:
        done.unchanged.append(f"toolbench (source {digest[:12]}) in {python}")
        return
    src = f"{m.root}/src"
    _unpack(m, _tarball(source, SOURCE_PARTS), src)
    pip = [python, "-m", "pip", "install", "-q"]
    for argv in ([*pip, "--no-deps", src], [*pip, *ENGINE_REQUIREMENTS]):
        ok, said = m.run(argv)
        if not ok:
            done.lacks.append(Lack(f"pip could not install toolbench's engine: {said}", shlex.join(argv)))
            return
    m.run(["sh", "-c", 'printf "%s\\n" "$1" > "$2"', "sh", digest, stamp], timeout_s=30)
    done.changes.append(Change(f"installed toolbench (source {digest[:12]}) into {python}",
                               shlex.join([python, "-m", "pip", "uninstall", "-y", "toolbench-meta"])))


def jmeter(m: Machine, done: Steps) -> str | None:
    """A copy of this checkout's JMeter home (`toolbench install jmeter`, adapters/jmeter/install.sh) at <root>/jmeter-<version>;
    its launcher's path there."""
    homes = toolsdir.newest("", "jmeter", "", complete="bin/ApacheJMeter.jar")
    if not homes:
        done.lacks.append(Lack("no JMeter home here to copy (run `toolbench install jmeter` here first)", ""))
        return None
    home = Path(homes[0])
    dest = f"{m.root}/{home.name}"
    launcher = f"{dest}/bin/jmeter"
    if m.host.capture(["test", "-f", f"{dest}/{COPIED}"]).exit_code == 0:
        done.unchanged.append(f"JMeter at {dest}")
        return launcher
    _unpack(m, _tarball(home.parent, (home.name,)), m.root, replace=dest)
    m.run(["touch", f"{dest}/{COPIED}"], timeout_s=30)
    done.changes.append(Change(f"copied JMeter's home to {dest}", f"rm -rf {shlex.quote(dest)}"))
    return launcher


def prerequisites(m: Machine, wanted: Prerequisites, done: Steps) -> None:
    """The scenario's sysctls, set as `toolbench prereq apply` sets them here (until reboot)."""
    if not wanted.sysctl and not wanted.ulimit:
        return
    applied = prereq.apply(m.host, wanted)
    for change in applied.changes:
        done.changes.append(Change(f"sysctl {change.key}: {change.before} -> {change.after} (until reboot)", change.undo))
    done.unchanged += [f"prerequisite {line}" for line in applied.unchanged]
    for problem in applied.problems:
        key = problem.split(":", 1)[0]
        value = wanted.sysctl.get(key)
        allowed = value is not None and not (sysctls.key_problem(key) or sysctls.value_problem(value))
        command = (f"{'' if m.sudo == [] else 'sudo '}sysctl -w {shlex.quote(key + '=' + prereq.target_value(key, value))}"
                   if allowed and value is not None else "")  # never a command for a refused setting
        done.lacks.append(Lack(problem, command))


# ---- files ----

def source_tree() -> Path | None:
    """The checkout this toolbench runs from (its pyproject.toml beside the package)."""
    root = Path(__file__).resolve().parents[2]
    return root if all((root / part).exists() for part in SOURCE_PARTS) else None


def _files(folder: Path, parts: Sequence[str]) -> list[Path]:
    found = []
    for part in parts:
        path = folder / part
        # Not what this machine built (bytecode, the engine's C extension): the other machine builds its own.
        found += [path] if path.is_file() else sorted(
            p for p in path.rglob("*") if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".so")
    return found


def tree_hash(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in _files(folder, SOURCE_PARTS):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def _tarball(folder: Path, parts: Sequence[str]) -> Path:
    handle = tempfile.NamedTemporaryFile(prefix="toolbench-setup-", suffix=".tar.gz", delete=False)
    with handle, tarfile.open(fileobj=handle, mode="w:gz", compresslevel=1) as tar:
        for path in _files(folder, parts):
            tar.add(path, arcname=str(path.relative_to(folder)), recursive=False)
    return Path(handle.name)


_UNPACK = ('set -e; mkdir -p "$1"; tmp=$(mktemp -d "$1/.unpack.XXXXXX"); tar -xzf "$2" -C "$tmp"; rm -f "$2"; '
           'rm -rf "$3"; if [ "$4" = tree ]; then mv "$tmp" "$3"; else mv "$tmp/$5" "$3"; rmdir "$tmp"; fi')


def _unpack(m: Machine, tarball: Path, into: str, replace: str | None = None) -> None:
    """Unpacks the tarball there: as the folder `into` itself, or (with `replace`) its one
    top folder as `replace`, in place of whatever was there, so a half copy never stays."""
    try:
        remote = f"{m.root}/.upload-{tarball.name}"
        m.run(["mkdir", "-p", m.root], timeout_s=30)
        m.host.put(tarball, remote)
    finally:
        tarball.unlink()
    args = [m.root, remote, replace or into, "top" if replace else "tree", Path(replace or into).name]
    ok, said = m.run(["sh", "-c", _UNPACK, "sh", *args], timeout_s=300)
    if not ok:
        raise HostError(f"{m.host.label}: cannot unpack {tarball.name} into {replace or into}: {said}")


def read_text(m: Machine, path: str) -> str | None:
    """A small file there, or None when it is not there."""
    captured = m.host.capture(["cat", "--", path], timeout_s=30)
    return captured.stdout if captured.exit_code == 0 else None


def write_text(m: Machine, path: str, text: str) -> None:
    with tempfile.NamedTemporaryFile("w", prefix="toolbench-setup-", delete=False) as handle:
        handle.write(text)
    try:
        m.host.put(Path(handle.name), path)
    finally:
        Path(handle.name).unlink()

