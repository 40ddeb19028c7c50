"""`roofline.json`: the predictions of one page on one roof, as a schema-versioned artifact, and its loader.

data = {model, layout, seq_len, context_len, dtype, dtype_bytes, hardware (every figure with its source),
roof (the figures used), convention, figures (vision_s, prefill_s, ttft_s, decode_s_per_token,
decode_context_len, tokens_per_s), stages: {vision|prefill|decode: {stage, shapes, total, summary, parts}}}.

Schema version 2 adds the time levels (`analytic.time.levels.levels_payload`): `levels` (the levels present, in
order), `absent_levels` ({level: reason}), `time_model` (device and host figures, convention), and on each stage's
`total` and each `summary[alias]` entry `levels: {level: {time_s, bound, ...}}` (the decode stage is one step at
`decode_context_len`); the prefill's `parts` rows (one per module path) carry `kernel_s` and `eager_s`.
Version 1 files (no levels) still load: their levels are the roofline's `ideal` only, the others absent with
the reason `ABSENT_V1`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Optional

from llm_perf_opt.analytic.time.convention import LEVEL_NAMES
from llm_perf_opt.analytic.time.hardware import Hardware, Roof
from llm_perf_opt.analytic.time.ideal import LatencyPrediction
from llm_perf_opt.artifacts import read_artifact, write_artifact
from llm_perf_opt.errors import ArtifactError

ROOFLINE_SCHEMA = "llm_perf_opt.roofline"
ROOFLINE_SCHEMA_VERSION = 2
ROOFLINE_VERSIONS = (1, 2)  # the loader reads both
ABSENT_V1 = "roofline.json schema version 1 (written before the time levels)"
_REQUIRED = ("model", "dtype", "hardware", "roof", "convention", "figures", "stages")
_FIGURES = ("vision_s", "prefill_s", "ttft_s", "decode_s_per_token", "decode_context_len", "tokens_per_s")
_STAGES = ("vision", "prefill", "decode")


def roofline_dict(
    model: Any, latency: LatencyPrediction, hardware: Hardware, with_parts: bool = True
) -> dict[str, Any]:
    return {
        "model": model.spec.name,
        "layout": model.layout.as_dict(),
        "seq_len": model.seq_len,
        "context_len": model.context_len,
        "dtype": latency.roof.dtype,
        "dtype_bytes": model.dtype_bytes,
        "decoder_attention": model.decoder_attention,
        "hardware": hardware.to_dict(),
        **latency.to_dict(with_parts=with_parts),
    }


def with_levels(data: dict[str, Any], payload: Optional[Mapping[str, Any]]) -> dict[str, Any]:
    """`data` (a roofline_dict) with the time levels merged in (see the module docstring); without a payload, the
    ideal level only, the others absent with `reason`."""
    if payload is None:
        payload = {
            "levels": ["ideal"],
            "absent_levels": {lv: "not computed for this roofline.json" for lv in LEVEL_NAMES if lv != "ideal"},
            "time_model": None,
            "stages": {},
        }
    out = dict(data)
    out["levels"] = list(payload["levels"])
    out["absent_levels"] = dict(payload["absent_levels"])
    out["time_model"] = payload.get("time_model")
    stages = {name: dict(st) for name, st in data["stages"].items()}
    for name, st in stages.items():
        by_alias = (payload.get("stages") or {}).get(name, {})
        total = dict(st["total"])
        total["levels"] = by_alias.get("") or {"ideal": {"time_s": total.get("time_s"), "bound": total.get("bound")}}
        total["levels"]["ideal"]["bound"] = total.get("bound")
        st["total"] = total
        summary = {}
        for alias, entry in (st.get("summary") or {}).items():
            e = dict(entry)
            e["levels"] = by_alias.get(alias) or {"ideal": {"time_s": e.get("time_s"), "bound": e.get("bound")}}
            e["levels"]["ideal"]["bound"] = e.get("bound")
            summary[alias] = e
        st["summary"] = summary
        by_path = (payload.get("paths") or {}).get(name) or {}
        if by_path and isinstance(st.get("parts"), list):
            rows = []
            for row in st["parts"]:
                lv = by_path.get(row.get("path")) if isinstance(row, Mapping) else None
                rows.append({**row, "kernel_s": lv.get("kernel_s"), "eager_s": lv.get("eager_s")} if lv else row)
            st["parts"] = rows
    out["stages"] = stages
    return out


def write_roofline(
    path: str | os.PathLike,
    model: Any,
    latency: LatencyPrediction,
    hardware: Hardware,
    config: Any = None,
    levels: Optional[Mapping[str, Any]] = None,
) -> Path:
    """roofline.json (schema version 2); `levels` = `analytic.time.levels.levels_payload(...)` (None: the ideal
    level only, the others absent)."""
    return write_artifact(
        path,
        ROOFLINE_SCHEMA,
        ROOFLINE_SCHEMA_VERSION,
        with_levels(roofline_dict(model, latency, hardware), levels),
        config=config,
    )


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
    version: int = ROOFLINE_SCHEMA_VERSION
    levels: tuple[str, ...] = ("ideal",)
    absent_levels: Mapping[str, str] = field(default_factory=dict)
    time_model: Optional[Mapping[str, Any]] = None

    def stage_rows(self, stage: str) -> list[Mapping[str, Any]]:
        return list(self.stages[stage].get("parts", []))

    def unit_levels(self, stage: str, alias: str = "") -> dict[str, dict[str, Any]]:
        """{level: {time_s, bound, ...}} of a stage ("" its total) or a summary part; version 1: ideal only."""
        st = self.stages[stage]
        entry = st["total"] if alias == "" else (st.get("summary") or {}).get(alias)
        if entry is None:
            return {}
        if isinstance(entry.get("levels"), Mapping):
            return {k: dict(v) for k, v in entry["levels"].items()}
        return {"ideal": {"time_s": entry.get("time_s"), "bound": entry.get("bound")}}


def load_roofline(path: str | os.PathLike) -> RooflineArtifact:
    """Read `roofline.json`; unknown versions and missing fields are refused by name."""
    version, data = read_artifact(path, ROOFLINE_SCHEMA, ROOFLINE_VERSIONS, _REQUIRED)
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
    if version >= 2:
        for key in ("levels", "absent_levels"):
            if key not in data:
                raise ArtifactError(f"{path}: {ROOFLINE_SCHEMA} version {version} data lacks required field '{key}'")
        levels, absent = tuple(data["levels"]), dict(data["absent_levels"])
    else:
        levels, absent = ("ideal",), {lv: ABSENT_V1 for lv in LEVEL_NAMES if lv != "ideal"}
    return RooflineArtifact(
        data["model"],
        data["dtype"],
        roof,
        data["hardware"],
        data["convention"],
        data["figures"],
        data["stages"],
        data.get("layout"),
        int(version),
        levels,
        absent,
        data.get("time_model"),
    )
