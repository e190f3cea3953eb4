"""Package discovery, which pyproject.toml cannot express for a mapped folder: every package
under toolbench/, adapters/ as toolbench.adapters.* and scenarios/ as toolbench.scenarios
(the bundled scenarios, package data). Everything else is declared in pyproject.toml."""
from setuptools import find_packages, setup

setup(packages=[*find_packages(include=["toolbench", "toolbench.*"]),
                "toolbench.adapters", *(f"toolbench.adapters.{p}" for p in find_packages("adapters")),
                "toolbench.scenarios"])
