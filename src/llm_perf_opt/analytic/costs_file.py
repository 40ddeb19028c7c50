"""`costs.json`: the analytic costs of one job (`costs_dict`), its schema, its typed view and its loader.

Version 2 (`llm_perf_opt.costs`) has exactly the data of version 1 (written as `costs`); the loader
reads both. Byte figures follow `analytic.costs`; the file's `conventions` say so in words.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from llm_perf_opt.analytic.artifact_fields import read_known
from llm_perf_opt.analytic.costs import COST_FIELDS, LayerCost
from llm_perf_opt.artifacts import require, write_artifact
from llm_perf_opt.errors import ArtifactError

COSTS_FILE = "costs.json"
STAGES = ("vision", "prefill", "decode")  # the stages every analytic model composes
COSTS_SCHEMA = "llm_perf_opt.costs"
COSTS_SCHEMA_VERSION = 2
COSTS_READS = {COSTS_SCHEMA: (2,), "costs": (1,)}  # version 1: the same data under its old schema name

_DATA_FIELDS = (
    "model",
    "layout",
    "seq_len",
    "context_len",
    "dtype_bytes",
    "decoder_attention",
    "conventions",
    "stages",
)
_STAGE_FIELDS = ("stage", "roots", "shapes", "total", "units", "summary")
_COST_KEYS = ("flops", *COST_FIELDS, "io_bytes")


def _cost(raw: Any, where: str, path: str | os.PathLike) -> LayerCost:
    """A LayerCost from its `to_dict()`; the derived sums (flops, io_bytes) must agree with the fields."""
    d = require(raw, _COST_KEYS, where, path)
    if not all(isinstance(d[k], int) and not isinstance(d[k], bool) for k in _COST_KEYS):
        raise ArtifactError(f"{path}: {where}: {', '.join(_COST_KEYS)} must be integers")
    cost = LayerCost(*(d[name] for name in COST_FIELDS))
    if (cost.flops, cost.io_bytes) != (d["flops"], d["io_bytes"]):
        raise ArtifactError(f"{path}: {where}: flops / io_bytes disagree with their terms")
    return cost


def _costs(raw: Any, where: str, path: str | os.PathLike) -> dict[str, LayerCost]:
    return {name: _cost(c, f"{where}.{name}", path) for name, c in require(raw, (), where, path).items()}


@dataclass(frozen=True)
class StageCosts:
    """One stage as `costs.json` holds it (`StageCost.to_dict`); `parts` and `containers` are None when
    the file was written without the per-part table."""

    stage: str
    roots: tuple[str, ...]
    shapes: Mapping[str, Any]
    total: LayerCost
    units: Mapping[str, float]
    summary: dict[str, LayerCost]
    parts: dict[str, LayerCost] | None
    containers: frozenset[str] | None

    def part(self, name: str, vocabulary: Any = None) -> LayerCost:
        """A part by alias or module path, as `StageCost.part` (needs the per-part table, except for
        the summary aliases and `total`; an alias outside the summary needs the family's `vocabulary`)."""
        if name in ("total", "all"):
            return self.total
        if name in self.summary:
            return self.summary[name]
        if self.parts is None:
            raise KeyError(f"{name}: this costs.json has no per-part table")
        return self.parts.get(vocabulary.path(name) if vocabulary is not None else name, LayerCost())


@dataclass(frozen=True)
class Costs:
    """A loaded `costs.json`."""

    schema_version: int
    model: str
    layout: Mapping[str, Any]
    seq_len: int
    context_len: int
    dtype_bytes: int
    decoder_attention: str
    conventions: Mapping[str, str]
    stages: dict[str, StageCosts]


def _stage(raw: Any, name: str, path: str | os.PathLike) -> StageCosts:
    where = f"data.stages.{name}"
    s = require(raw, _STAGE_FIELDS, where, path)
    return StageCosts(
        stage=s["stage"],
        roots=tuple(s["roots"]),
        shapes=s["shapes"],
        total=_cost(s["total"], f"{where}.total", path),
        units=s["units"],
        summary=_costs(s["summary"], f"{where}.summary", path),
        parts=_costs(s["parts"], f"{where}.parts", path) if "parts" in s else None,
        containers=frozenset(s["containers"]) if "containers" in s else None,
    )


def load_costs(path: str | os.PathLike) -> Costs:
    """Read `costs.json` (version 2, or 1 under its old name); unknown versions and missing fields are an
    `ArtifactError` naming them."""
    _, version, data = read_known(path, COSTS_READS, _DATA_FIELDS)
    stages = require(data["stages"], STAGES, "data.stages", path)
    return Costs(
        schema_version=version,
        model=data["model"],
        layout=data["layout"],
        seq_len=data["seq_len"],
        context_len=data["context_len"],
        dtype_bytes=data["dtype_bytes"],
        decoder_attention=data["decoder_attention"],
        conventions=data["conventions"],
        stages={name: _stage(raw, name, path) for name, raw in stages.items()},
    )


def write_costs(path: str | os.PathLike, model: Any, config: Any = None) -> Path:
    """Write an analytic model's costs (`model.to_dict()`, with the per-part table) atomically under the
    current schema."""
    return write_artifact(path, COSTS_SCHEMA, COSTS_SCHEMA_VERSION, model.to_dict(), config=config)
