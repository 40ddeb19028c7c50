"""Reading helpers for the analytic and measure artifacts: files written under an older schema name, and
required fields below `data`, each rejected by name. Generic (no analytic knowledge): they belong in
`llm_perf_opt.artifacts` once the project's artifact registry lands there.
"""
from __future__ import annotations

import os
from typing import Any, Iterable, Mapping

from llm_perf_opt.artifacts import read_artifact, read_json
from llm_perf_opt.errors import ArtifactError


def read_known(path: str | os.PathLike, reads: Mapping[str, Iterable[int]],
               required: Iterable[str] = ()) -> tuple[str, int, dict[str, Any]]:
    """Load an artifact whose schema is one of `reads` ({schema name: versions this reader knows}; the
    first is the current name). Returns (schema, schema_version, data); rejects anything else by name."""
    doc = read_json(path)
    named = doc.get("schema") if isinstance(doc, dict) else None
    schema = named if named in reads else next(iter(reads))
    version, data = read_artifact(path, schema, reads[schema], required)
    return schema, version, data


def require(obj: Any, fields: Iterable[str], where: str, path: str | os.PathLike) -> Mapping[str, Any]:
    """`obj` as a mapping that has every one of `fields`; else one ArtifactError naming the first missing."""
    if not isinstance(obj, Mapping):
        raise ArtifactError(f"{path}: {where} must be an object, found {type(obj).__name__}")
    for name in fields:
        if name not in obj:
            raise ArtifactError(f"{path}: {where} lacks required field '{name}'")
    return obj
