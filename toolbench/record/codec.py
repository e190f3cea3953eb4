"""Frozen dataclass records to JSON-ready values and back, strictly: an unknown field, a
wrong type or an unknown enum value is a SchemaError naming its path. Used for the result
records and the manifest alike."""
from __future__ import annotations

import dataclasses
import enum
import functools
import types
import typing
from typing import Any, Mapping

from toolbench.errors import SchemaError


def encode(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: encode(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, dict):
        # JSON keys are strings; status codes come back as ints through the type hints.
        return {str(k): encode(v) for k, v in value.items()}
    if isinstance(value, list):
        return [encode(v) for v in value]
    return value


@functools.lru_cache(maxsize=None)
def _type_hints(tp: type) -> dict[str, Any]:
    """Resolving hints is the dearest step of loading a run; the classes never change."""
    return typing.get_type_hints(tp)


def decode(tp: Any, data: Any, path: str) -> Any:
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        if data is None:
            return None
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        return decode(options[0], data, path)
    if dataclasses.is_dataclass(tp):
        if not isinstance(data, Mapping):
            raise SchemaError(f"{path}: expected an object, got {type(data).__name__}")
        hints = _type_hints(tp)
        names = {f.name for f in dataclasses.fields(tp)}
        unknown = set(data) - names
        if unknown:
            raise SchemaError(f"{path}: unknown fields {sorted(unknown)}")
        kwargs = {k: decode(hints[k], v, f"{path}.{k}") for k, v in data.items()}
        try:
            return tp(**kwargs)
        except (TypeError, ValueError) as exc:  # a required field missing, a value its record refuses
            raise SchemaError(f"{path}: {exc}") from None
    if origin is list:
        if not isinstance(data, list):
            raise SchemaError(f"{path}: expected a list, got {type(data).__name__}")
        (item,) = typing.get_args(tp)
        return [decode(item, v, f"{path}[{i}]") for i, v in enumerate(data)]
    if origin is dict:
        if not isinstance(data, Mapping):
            raise SchemaError(f"{path}: expected an object, got {type(data).__name__}")
        key_t, val_t = typing.get_args(tp)
        return {_key(key_t, k, path): decode(val_t, v, f"{path}.{k}") for k, v in data.items()}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        try:
            return tp(data)
        except ValueError as exc:
            raise SchemaError(f"{path}: {exc}") from None
    if tp is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if isinstance(tp, type) and not isinstance(data, tp):
        raise SchemaError(f"{path}: expected {tp.__name__}, got {_shown(data)}")
    return data


def _key(key_t: type, key: str, path: str) -> Any:
    try:
        return key_t(key)
    except ValueError:
        raise SchemaError(f"{path}: {key!r} is not a key of type {key_t.__name__}") from None


def _shown(data: Any) -> str:
    """A wrong value in a one-line message: a stored record's may be a megabyte of anything."""
    shown = repr(data)
    return shown if len(shown) <= 80 else f"{type(data).__name__} ({shown[:60]}…)"
