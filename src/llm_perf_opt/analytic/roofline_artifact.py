"""`roofline.json`: the predictions of one page on one roof, as a schema-versioned artifact, and its loader.

data = {model, layout, seq_len, context_len, dtype, dtype_bytes, hardware (every figure with its source),
roof (the figures used), convention, figures (vision_s, prefill_s, ttft_s, decode_s_per_token,
decode_context_len, tokens_per_s), stages: {vision|prefill|decode: {stage, shapes, total, summary, parts}}}.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional

from llm_perf_opt.analytic.hardware import Hardware, Roof
from llm_perf_opt.analytic.roofline import LatencyPrediction
from llm_perf_opt.artifacts import read_artifact, write_artifact
from llm_perf_opt.errors import ArtifactError

ROOFLINE_SCHEMA = "llm_perf_opt.roofline"
ROOFLINE_SCHEMA_VERSION = 1
_REQUIRED = ("model", "dtype", "hardware", "roof", "convention", "figures", "stages")
_FIGURES = ("vision_s", "prefill_s", "ttft_s", "decode_s_per_token", "decode_context_len", "tokens_per_s")
_STAGES = ("vision", "prefill", "decode")


def roofline_dict(model: Any, latency: LatencyPrediction, hardware: Hardware,
                  with_parts: bool = True) -> dict[str, Any]:
    return {
        "model": model.spec.name, "layout": model.layout.as_dict(), "seq_len": model.seq_len,
        "context_len": model.context_len, "dtype": latency.roof.dtype, "dtype_bytes": model.dtype_bytes,
        "decoder_attention": model.decoder_attention, "hardware": hardware.to_dict(),
        **latency.to_dict(with_parts=with_parts),
    }


def write_roofline(path: str | os.PathLike, model: Any, latency: LatencyPrediction,
                   hardware: Hardware, config: Any = None) -> Path:
    return write_artifact(path, ROOFLINE_SCHEMA, ROOFLINE_SCHEMA_VERSION,
                          roofline_dict(model, latency, hardware), config=config)


@dataclass(frozen=True)
class RooflineArtifact:
    """A loaded `roofline.json`: the roof, the stage figures and the raw per-stage rows."""

    model: str
    dtype: str
    roof: Roof
    hardware: Mapping[str, Any]
    convention: Mapping[str, str]
    figures: Mapping[str, Any]
    stages: Mapping[str, Mapping[str, Any]]
    layout: Optional[Mapping[str, Any]] = None

    def stage_rows(self, stage: str) -> list[Mapping[str, Any]]:
        return list(self.stages[stage].get("parts", []))


def load_roofline(path: str | os.PathLike) -> RooflineArtifact:
    """Read `roofline.json`; unknown versions and missing fields are refused by name."""
    _, data = read_artifact(path, ROOFLINE_SCHEMA, (ROOFLINE_SCHEMA_VERSION,), _REQUIRED)
    for key in _FIGURES:
        if key not in data["figures"]:
            raise ArtifactError(f"{path}: {ROOFLINE_SCHEMA} data.figures lacks required field '{key}'")
    for stage in _STAGES:
        if stage not in data["stages"]:
            raise ArtifactError(f"{path}: {ROOFLINE_SCHEMA} data.stages lacks required stage '{stage}'")
        if "total" not in data["stages"][stage]:
            raise ArtifactError(f"{path}: {ROOFLINE_SCHEMA} data.stages.{stage} lacks required field 'total'")
    try:
        roof = Roof.from_dict(data["roof"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ArtifactError(f"{path}: {ROOFLINE_SCHEMA} data.roof is incomplete ({exc})") from None
    return RooflineArtifact(data["model"], data["dtype"], roof, data["hardware"], data["convention"],
                            data["figures"], data["stages"], data.get("layout"))
