"""Stored records of older versions, brought up to the current one step by step.

Each step is a small pure function from the dict of version N to the dict of version N+1;
a record of version 1 goes through every step in turn. A new version adds one step here and
never edits an older one: the runs kept in tests/fixtures/stored/ prove the chain still holds.
"""
from __future__ import annotations

from typing import Any, Callable, Mapping

from toolbench.errors import SchemaError

Step = Callable[[dict[str, Any]], dict[str, Any]]

# The fields of a version-1 RunResult that are the tool's own view of the run.
_MEASURED_V1 = ("timing", "counts", "rates", "transfer", "latency", "histogram", "histogram_resolution_ms",
                "latency_uncorrected", "histogram_uncorrected", "series", "fidelity")


def _result_1_to_2(old: dict[str, Any]) -> dict[str, Any]:
    """Version 2 holds the tool's figures in `measurement`. Version 1 kept one list of notes,
    the tool's and toolbench's mixed: they stay toolbench's, as nothing tells them apart."""
    new = {k: v for k, v in old.items() if k not in _MEASURED_V1}
    identity = old.get("identity")
    tool = identity.get("tool") if isinstance(identity, dict) else None
    new["measurement"] = {"tool": tool, **{k: old[k] for k in _MEASURED_V1 if k in old}}
    new["schema_version"] = 2
    return new


def _result_2_to_3(old: dict[str, Any]) -> dict[str, Any]:
    """Version 3 says whether the latency corrects coordinated omission. A version-2 record
    that kept latency_uncorrected beside its latency had it corrected (the engine's open
    model); of any other, nothing says: left absent."""
    new = dict(old)
    measurement = old.get("measurement")
    if isinstance(measurement, dict):
        measurement = dict(measurement)
        if measurement.get("latency_uncorrected") is not None:
            measurement["coordinated_omission"] = "corrected"
        new["measurement"] = measurement
    new["schema_version"] = 3
    return new


def _result_3_to_4(old: dict[str, Any]) -> dict[str, Any]:
    """Version 4 keeps the parts of a cell run on several generators; every older record
    ran on one, and has none."""
    new = dict(old)
    new["generators"] = []
    new["schema_version"] = 4
    return new


def _result_4_to_5(old: dict[str, Any]) -> dict[str, Any]:
    """Version 5 may say a cell was disturbed, and what the machine did around it; no older
    record observed that, and none is disturbed."""
    new = dict(old)
    new["machine"] = None
    new["schema_version"] = 5
    return new


def _manifest_1_to_2(old: dict[str, Any]) -> dict[str, Any]:
    """Version 2 is the typed record of toolbench.record.manifest: the one target becomes a list of
    named targets, the tools a list, the description a field of its own."""
    new = dict(old)
    del new["toolbench_manifest"]
    scenario = dict(old.get("scenario") or {})
    scenario.setdefault("description", _description(scenario.get("text")))
    new["scenario"] = scenario
    target = old.get("target")
    new["targets"] = [target] if isinstance(target, dict) else []
    new.pop("target", None)
    new["tools"] = [{"tool": name, "version": version} for name, version in sorted((old.get("tools") or {}).items())]
    new["resumed"] = old.get("resumed") or []
    new["manifest_version"] = 2
    return new


def _manifest_2_to_3(old: dict[str, Any]) -> dict[str, Any]:
    """Version 3 lists the generators of a run on several; every older run had one."""
    new = dict(old)
    new["generators"] = []
    new["manifest_version"] = 3
    return new


def _manifest_3_to_4(old: dict[str, Any]) -> dict[str, Any]:
    """Version 4 records the machine: the method, the placement, the system check and the
    calibration. No older run recorded them."""
    new = dict(old)
    new["machine"] = None
    new["manifest_version"] = 4
    return new


def _description(text: object) -> str:
    """The description a version-1 manifest kept only inside the scenario's text, read bounded
    (a text from anyone may hold an alias bomb: refused, as a record that does not read)."""
    import yaml

    from toolbench.record import yamltext

    try:
        loaded = yamltext.load(text) if isinstance(text, str) else None
    except yamltext.Refused as exc:
        raise SchemaError(f"scenario.text: {exc}") from None
    except yaml.YAMLError:
        return ""
    value = loaded.get("description") if isinstance(loaded, dict) else None
    return str(value).strip() if value else ""


RESULT_STEPS: dict[int, Step] = {1: _result_1_to_2, 2: _result_2_to_3, 3: _result_3_to_4, 4: _result_4_to_5}
MANIFEST_STEPS: dict[int, Step] = {1: _manifest_1_to_2, 2: _manifest_2_to_3, 3: _manifest_3_to_4}


def result(data: Mapping[str, Any]) -> dict[str, Any]:
    """A result record of any version toolbench has written, as the current version."""
    if not isinstance(data, Mapping):
        raise SchemaError(f"expected a JSON object, got {type(data).__name__}")
    return _upgrade(dict(data), data.get("schema_version"), RESULT_STEPS, "schema_version")


def manifest(data: Mapping[str, Any]) -> dict[str, Any]:
    """A manifest of any version toolbench has written, as the current version. Version 1
    said its version under another key."""
    if not isinstance(data, Mapping):
        raise SchemaError(f"expected a JSON object, got {type(data).__name__}")
    version = data.get("manifest_version", data.get("toolbench_manifest"))
    return _upgrade(dict(data), version, MANIFEST_STEPS, "manifest_version")


def _upgrade(data: dict[str, Any], version: object, steps: Mapping[int, Step], key: str) -> dict[str, Any]:
    current = max(steps) + 1
    if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= current:
        raise SchemaError(f"{key} {repr(version)[:40]} is not one this toolbench reads (1 to {current}); "
                          "a newer toolbench wrote it?")
    while version < current:
        try:
            data = steps[version](data)
        except (AttributeError, TypeError, ValueError, KeyError) as exc:  # a stored value of the wrong type
            raise SchemaError(f"{key} {version}: does not read as one: {exc}") from None
        version += 1
    return data
