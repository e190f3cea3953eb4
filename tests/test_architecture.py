"""The tree is the architecture (docs/architecture.md): every package says in its docstring what
it owns and which packages it may import ("May import: ..."), and no module imports a package its
own does not list, type-checking and function-local imports included. Across the whole tree."""
from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from conftest import REPO

ANYTHING = None  # "May import: anything"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[0] == "adapters":
        parts = ["toolbench", *parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_of(module: str) -> str:
    """The top-level package under toolbench a module belongs to; `toolbench` for the top itself."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] != "errors" else ("errors" if module == "toolbench.errors"
                                                                      else "toolbench")


def allowed(docstring: str) -> set[str] | None:
    """The packages a docstring's "May import:" line names (toolbench.errors -> errors)."""
    found = re.search(r"May import:\s*(.+?)(?:\n\n|$)", docstring, re.S)
    assert found, "no 'May import:' line"
    said = " ".join(found.group(1).split())
    if said == "anything":
        return ANYTHING
    return {name.strip().removeprefix("toolbench.") for name in said.split(",")}


def imports(source: str, module: str) -> list[tuple[int, str]]:
    """Every toolbench module or name `source` imports, with its line."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            found += [(node.lineno, module)]  # relative: inside its own package
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("toolbench"):
            names = [f"{node.module}.{a.name}" for a in node.names] if node.module == "toolbench" else [node.module]
            found += [(node.lineno, name) for name in names if name != "toolbench.__version__"]
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("toolbench.")]
    return found


def violations(sources: dict[str, str], rules: dict[str, set[str] | None]) -> list[str]:
    """`module:line imports X` for every import of a package the module's package may not import."""
    said = []
    for module, source in sources.items():
        mine = package_of(module)
        if mine == "toolbench":
            continue  # the top's lazy `load()` is the public entry, above every layer
        for line, target in imports(source, module):
            theirs = package_of(target)
            ok = rules[mine]
            if theirs not in (mine, "toolbench") and ok is not ANYTHING and theirs not in ok:
                said.append(f"{module}:{line} imports {target} ({mine} may import {', '.join(sorted(ok))})")
    return said


def tree() -> dict[str, str]:
    files = [*REPO.glob("toolbench/**/*.py"), *REPO.glob("adapters/**/*.py")]
    return {module_name(p): p.read_text() for p in files if "templates" not in p.parts}


def rules_of_tree() -> dict[str, set[str] | None]:
    rules: dict[str, set[str] | None] = {"errors": set()}
    for init in [*REPO.glob("toolbench/*/__init__.py"), REPO / "adapters" / "__init__.py"]:
        name = "adapters" if init.parent.name == "adapters" else init.parent.name
        doc = ast.get_docstring(ast.parse(init.read_text())) or ""
        rules[name] = allowed(doc)
    return rules


def test_every_package_says_what_it_owns_and_may_import():
    for init in [*REPO.glob("toolbench/**/__init__.py"), *REPO.glob("adapters/**/__init__.py")]:
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and len(doc) > 60, f"{init.relative_to(REPO)}: no docstring a person can read"
    rules = rules_of_tree()
    assert rules["record"] == {"errors"} and rules["cli"] is ANYTHING
    for name, ok in rules.items():
        assert ok is ANYTHING or ok <= set(rules), f"{name}: may import a package that does not exist: {ok}"


def test_nothing_is_left_at_the_top_but_what_every_layer_shares():
    top = sorted(p.name for p in (REPO / "toolbench").iterdir() if p.suffix == ".py")
    assert top == ["__init__.py", "errors.py"]


def test_no_module_imports_a_layer_its_package_may_not():
    assert violations(tree(), rules_of_tree()) == []


@pytest.mark.parametrize("line", ["from toolbench.run.plan import Cell",
                                  "from toolbench import report",
                                  "import toolbench.hosts.local",
                                  "def f():\n    from toolbench.run import runner"])
def test_the_check_sees_an_import_of_a_higher_layer(line):
    """The rule holds for lazy and type-checking imports too: an adapter reaching into the run
    layer, however it spells it, is named."""
    rules = rules_of_tree()
    said = violations({"toolbench.adapters.fake": line + "\n"}, rules)
    assert len(said) == 1 and said[0].startswith("toolbench.adapters.fake:")
