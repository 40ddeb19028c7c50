"""What `./dev analyze hardware=...`, `./dev size` and the trace job's serving stage share: the serving model of
the job's page, the memory allowance, the figures at the job's batch and the curve, and `serving.json`
(analytic.serving_file) with `curve.csv` beside it."""

from __future__ import annotations

import csv
import io
from typing import Any, Optional

from llm_perf_opt.analytic.memory_model import GB, Allowance, max_batch
from llm_perf_opt.analytic.serving import CURVE_COLUMNS, conventions, curve_rows, latency_curve, serving_point
from llm_perf_opt.analytic.serving_file import Serving
from llm_perf_opt.analytic.serving_model import ServingModel
from llm_perf_opt.analytic.sizing import Sizing
from llm_perf_opt.analytic.time import convention
from llm_perf_opt.analytic.time.hardware import Hardware, Roof
from llm_perf_opt.config.schemas import RootConfig
from llm_perf_opt.errors import ConfigError


def allowance_for(cfg: RootConfig) -> Allowance:
    s = cfg.serve
    return Allowance(
        s.workspace_gb * GB,
        s.fragmentation,
        f"{s.workspace_gb:g} GB workspace + {s.fragmentation:.0%} of KV cache and activations "
        "(serve.workspace_gb, serve.fragmentation)",
    )


def serving_model_for(cfg: RootConfig, model: Any, roof: Roof) -> ServingModel:
    # the serving model is the family's, built from its analytic model (DeepSeek-OCR: deepseek_ocr_shared.serving)
    moe = model.moe_from_routing(cfg.serve.routing) if cfg.serve.routing else None
    sm = model.serving_model(moe, roof.dtype)
    sm.check_output_tokens(cfg.serve.output_tokens)
    return sm


def analyze_serving(cfg: RootConfig, sm: ServingModel, hardware: Hardware, roof: Roof):
    """The point at workload.batch, the curve and the largest batches that fit; ConfigError (before anything
    is written) when the batch cannot fit in the device's memory."""
    s, batch, allowance = cfg.serve, cfg.workload.batch, allowance_for(cfg)
    capacity = hardware.memory_bytes
    point = serving_point(sm, roof, batch, s.output_tokens, allowance, capacity, s.level)
    fit = max_batch(sm, s.output_tokens, capacity, allowance) if capacity else None
    fit_cb = max_batch(sm, s.output_tokens, capacity, allowance, continuous=True) if capacity else None
    if capacity and not point.memory.fits:
        raise ConfigError.field(
            "workload.batch",
            batch,
            f"needs {point.memory.total / GB:,.1f} GB on {hardware.name} "
            f"({capacity / GB:,.0f} GB) with {s.output_tokens} output tokens per page; the "
            f"largest batch that fits is {fit} (static batching; {fit_cb} continuous)",
        )
    points, knee, _ = latency_curve(sm, roof, s.output_tokens, s.batches, allowance, capacity, s.level)
    return point, points, knee, {"static": fit, "continuous": fit_cb}


def serving_record(
    job: str,
    cfg: RootConfig,
    sm: ServingModel,
    hardware: Hardware,
    roof: Roof,
    point: Any,
    points: list,
    knee: Any,
    fits: dict,
    sizing: Optional[Sizing] = None,
) -> Serving:
    level = cfg.serve.level
    hw = roof.to_dict() | {
        "name": hardware.name,
        "memory_bytes": hardware.memory_bytes,
        "allowance": allowance_for(cfg).note,
    }
    return Serving(
        job,
        level,
        convention.batch_level(level),
        hw,
        sm.describe(),
        cfg.workload.batch if point is not None else None,
        cfg.serve.output_tokens,
        point.to_dict() if point is not None else None,
        curve_rows(points),
        knee.to_dict() if knee is not None else None,
        fits,
        sizing.to_dict() if sizing is not None else None,
        conventions(level),
    )


def csv_text(rows: list[dict]) -> str:
    """curve.csv: the rows of `analytic.serving.curve_rows`."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(CURVE_COLUMNS))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()
