"""`serving.json`: the serving figures of one run (`./dev analyze hardware=...`, `./dev size`), typed.

`{"schema": "llm_perf_opt.serving", "schema_version": 1, "producer": ..., "data": {...}}` with `data`:
`job` (analyze or size), `level` and its convention, `hardware` (the roof and the memory capacity),
`model` (`ServingModel.describe()`), `batch`, `output_tokens`, `point` (the figures at that batch, or null),
`curve` (rows of `analytic.serving.CURVE_COLUMNS`), `knee`, `max_fit_batch` (static and continuous),
`sizing` (`analytic.sizing.Sizing.to_dict()`, or null) and `conventions`: the first engine's figures. Version 2
adds `engine` (the first engine: name, level, kernels, batching, memory, assumptions), `engines` (every engine of
`serve.engine`: its `engine`, `batch`, `point`, `curve`, `knee`, `max_fit_batch`, `sizing`) and `measured` (the
serving curve measured with plain forwards beside `hf_eager`'s forward at each batch, and the ratios; null when
none was given). A version-1 file reads as the `ideal` engine. `load_serving` rejects another schema, an unknown
version or a missing field by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from llm_perf_opt.artifacts import file_in, read_artifact, write_artifact

SERVING_FILE = "serving.json"
SERVING_SCHEMA = "llm_perf_opt.serving"
SERVING_VERSION = 2
SERVING_READS = (1, 2)
SERVING_FIELDS = (
    "job",
    "level",
    "level_convention",
    "hardware",
    "model",
    "batch",
    "output_tokens",
    "point",
    "curve",
    "knee",
    "max_fit_batch",
    "sizing",
    "conventions",
)
V2_FIELDS = ("engine", "engines", "measured")
IDEAL_V1 = {"name": "ideal", "level": "ideal", "summary": "version-1 file: the roofline, no engine"}


@dataclass(frozen=True)
class Serving:
    job: str
    level: str
    level_convention: str
    hardware: Mapping[str, Any]
    model: Mapping[str, Any]
    batch: Optional[int]
    output_tokens: int
    point: Optional[Mapping[str, Any]]
    curve: list
    knee: Optional[Mapping[str, Any]]
    max_fit_batch: Mapping[str, Optional[int]]
    sizing: Optional[Mapping[str, Any]]
    conventions: Mapping[str, str]
    engine: Mapping[str, Any] = None  # type: ignore[assignment]
    engines: Optional[list] = None
    measured: Optional[Mapping[str, Any]] = None

    def __post_init__(self) -> None:
        if self.engine is None:
            object.__setattr__(self, "engine", dict(IDEAL_V1))

    def to_dict(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in (*SERVING_FIELDS, *V2_FIELDS)}

    def summary(self) -> dict[str, Any]:
        """The flat fields summary.json and the report's columns carry."""
        out: dict[str, Any] = {
            "serve_engine": self.engine.get("name"),
            "serve_level": self.level,
            "serve_batch": self.batch,
            "serve_output_tokens": self.output_tokens,
            "serve_hardware": self.hardware.get("name"),
        }
        if self.point:
            p = self.point
            out |= {
                "serve_ttft_s": p["static"]["ttft_s"],
                "serve_tpot_s": p["static"]["tpot_s"],
                "serve_tokens_per_s": p["static"]["tokens_per_s"],
                "serve_pages_per_day": p["static"]["pages_per_day"],
                "serve_pages_per_day_continuous": p["continuous"]["pages_per_day"],
                "serve_memory_bytes": p["memory"]["total_bytes"],
                "serve_memory_fits": p["memory"]["fits"],
                "serve_bound": p["decode_bound"],
            }
        if self.sizing:
            s = self.sizing
            out |= {
                "size_replicas": s["replicas"],
                "size_batch": s["batch"],
                "size_pages_per_day_per_device": s["pages_per_day_per_device"],
                "size_binds": f"{s['binding']['target']}: {s['binding']['resource']}",
            }
        return out


def write_serving(path: str | os.PathLike, serving: Serving, config: Any = None) -> Path:
    return write_artifact(path, SERVING_SCHEMA, SERVING_VERSION, serving.to_dict(), config=config)


def load_serving(path: str | os.PathLike) -> Serving:
    """Read `serving.json` (or the run directory holding it)."""
    path = file_in(path, SERVING_FILE)
    _, data = read_artifact(path, SERVING_SCHEMA, SERVING_READS, required=SERVING_FIELDS)
    return Serving(**{name: data[name] for name in SERVING_FIELDS}, **{k: data.get(k) for k in V2_FIELDS})
