"""The type checker of the typed artifact sections: `typed(cls, mapping, where)` builds a section dataclass
from a mapping, every declared field checked by name and type (an `ArtifactError` naming the file, the section
and the field); `_data` turns a section back into the mapping it was written as.

Layer: this module imports `errors` only.
"""

from __future__ import annotations

import typing
from dataclasses import MISSING, fields, is_dataclass
from typing import Any, Mapping, Union

from llm_perf_opt.errors import ArtifactError


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", str(tp).replace("typing.", ""))


def _check(value: Any, tp: Any, where: str) -> Any:
    """`value` checked against the annotation `tp` (int, float, str, bool, Any, Optional, list, dict and
    section dataclasses, which are built from their mapping)."""
    origin = typing.get_origin(tp)
    if tp is Any:
        return value
    if origin is Union:
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _check(value, inner[0], where) if len(inner) == 1 else value
    if is_dataclass(tp):
        return typed(tp, value, where)
    if origin is dict:
        if not isinstance(value, Mapping):
            raise ArtifactError(f"{where} must be an object, found {type(value).__name__}")
        _, vt = typing.get_args(tp) or (str, Any)
        return {str(k): _check(v, vt, f"{where}.{k}") for k, v in value.items()}
    if origin is list:
        if not isinstance(value, list):
            raise ArtifactError(f"{where} must be a list, found {type(value).__name__}")
        (vt,) = typing.get_args(tp) or (Any,)
        return [_check(v, vt, f"{where}[{i}]") for i, v in enumerate(value)]
    ok = {
        int: lambda v: isinstance(v, int) and not isinstance(v, bool),
        float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
        bool: lambda v: isinstance(v, bool),
        str: lambda v: isinstance(v, str),
        dict: lambda v: isinstance(v, Mapping),
        list: lambda v: isinstance(v, list),
    }.get(tp)
    if ok is not None and not ok(value):
        raise ArtifactError(f"{where} must be {_type_name(tp)}, found {value!r}")
    return value


def typed(cls: type, data: Any, where: str) -> Any:
    """The section dataclass `cls` built from a mapping, every declared field checked by name and type;
    unknown keys are kept (`raw`: the whole mapping verbatim; `extra`: the keys `cls` does not declare)."""
    if isinstance(data, cls):
        return data
    if not isinstance(data, Mapping):
        raise ArtifactError(f"{where} must be an object, found {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in fields(cls)}
    kwargs: dict[str, Any] = {}
    for f in fields(cls):
        if f.name in ("raw", "extra"):
            continue
        if f.name not in data:
            if f.default is MISSING and f.default_factory is MISSING:
                raise ArtifactError(f"{where} lacks required field '{f.name}'")
            continue
        kwargs[f.name] = _check(data[f.name], hints[f.name], f"{where}.{f.name}")
    if "raw" in names:
        kwargs["raw"] = dict(data)
    elif "extra" in names:
        kwargs["extra"] = {k: v for k, v in data.items() if k not in names}
    return cls(**kwargs)


def _data(obj: Any) -> Any:
    """A section back to the mapping it was written as (declared fields in order, then `extra`)."""
    if is_dataclass(obj) and not isinstance(obj, type):
        if hasattr(obj, "to_data"):
            return obj.to_data()
        names = [f.name for f in fields(obj)]
        if "raw" in names:
            return dict(obj.raw)
        out = {n: _data(getattr(obj, n)) for n in names if n != "extra"}
        out.update(getattr(obj, "extra", {}) or {})
        return out
    if isinstance(obj, Mapping):
        return {k: _data(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_data(v) for v in obj]
    return obj
