"""Reading helper for the analytic and measure artifacts: files written under an older schema name, rejected
by name when unknown. Generic (no analytic knowledge): it belongs in `llm_perf_opt.artifacts` once the
project's artifact registry lands there.
"""

from __future__ import annotations

import os
from typing import Any, Iterable, Mapping

from llm_perf_opt.artifacts import read_artifact, read_json


def read_known(
    path: str | os.PathLike, reads: Mapping[str, Iterable[int]], required: Iterable[str] = ()
) -> tuple[str, int, dict[str, Any]]:
    """Load an artifact whose schema is one of `reads` ({schema name: versions this reader knows}; the
    first is the current name). Returns (schema, schema_version, data); rejects anything else by name."""
    doc = read_json(path)
    named = doc.get("schema") if isinstance(doc, dict) else None
    schema = named if named in reads else next(iter(reads))
    version, data = read_artifact(path, schema, reads[schema], required)
    return schema, version, data
