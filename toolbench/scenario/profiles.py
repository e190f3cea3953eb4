"""Profiles: named partial scenarios declared under `profiles:`, merged over the top-level
keys before the scenario is parsed, so an override is checked exactly as the key it replaces
and its errors name the profile's own file:line.

What a profile may override, and how:

- `matrix`, `probe`, `monitor`, `tools`: merged one level deep; a key the profile gives
  (an axis such as `matrix.concurrency`, a probe setting, a whole tool's options) replaces
  the scenario's, the others stay.
- `workload`: merged one level deep too, so that a profile can give shorter `stages` (or think
  time) while the requests, the data and the checks stay the scenario's.
- `stop`, `repeat`, `cooldown`, `warmup`, `warm_target`, `settle`, `timeout`: replaced whole
  (`stop` holds exactly one way to stop, so merging it would make two).

Nothing else: the target, the request and the prerequisites are what a study is, and a
profile only makes it shorter or longer."""
from __future__ import annotations

import yaml

from toolbench.errors import ScenarioError
from toolbench.scenario import names
from toolbench.scenario.yamlread import Node

MERGED = ("matrix", "probe", "monitor", "tools", "workload")
REPLACED = ("stop", "repeat", "cooldown", "warmup", "warm_target", "settle", "timeout")
OVERRIDABLE = MERGED + REPLACED


def declared(top: dict[str, Node], top_keys: tuple[str, ...]) -> dict[str, dict[str, Node]]:
    """Every profile by name, each a map of the keys it overrides; checked here: names,
    and only keys that both a profile may override and the scenario knows."""
    if "profiles" not in top:
        return {}
    allowed = tuple(key for key in OVERRIDABLE if key in top_keys)
    found = {}
    for name, child in top["profiles"].items().items():
        if why := names.problem(name):  # a profile's name goes into the manifest and the CLI
            raise child.error(why)
        found[name] = child.items(allowed)
        if not found[name]:
            raise child.error(f"profile {name!r} overrides nothing (give any of {', '.join(allowed)})")
    return found


def merged(top: dict[str, Node], profiles: dict[str, dict[str, Node]], profile: str, where: str) -> dict[str, Node]:
    """The top-level keys with `profile`'s overrides on top."""
    if profile not in profiles:
        known = ", ".join(profiles) or "none declared"
        raise ScenarioError(f"{where}: profiles: no profile {profile!r} (declared: {known})")
    result = dict(top)
    for key, override in profiles[profile].items():
        if key in MERGED and key in top:
            result[key] = _merge_mapping(top[key], override)
        else:
            result[key] = override
    return result


def _merge_mapping(base: Node, override: Node) -> Node:
    """A mapping with the base's keys in order, each replaced by the override's when it gives
    it, then the override's new keys. Each value node keeps its own line, so an error in an
    overridden value names the profile's line."""
    base_items = base.items()  # both checked as mappings here; unknown keys are the parser's job
    override_items = override.items()
    pairs = []
    for key_node, value_node in base.node.value:
        key = str(key_node.value)
        if key in override_items:
            value_node = override_items[key].node
        pairs.append((key_node, value_node))
    pairs.extend((k, v) for k, v in override.node.value if str(k.value) not in base_items)
    node = yaml.MappingNode("tag:yaml.org,2002:map", pairs, start_mark=override.node.start_mark,
                            end_mark=override.node.end_mark)
    return Node(node, base.file, base.path)
