"""What `./dev analyze hardware=...`, `./dev size` and the trace job's serving stage share: the serving model of
the job's page, the memory allowance, per engine (`serve.engine`: one or a list) the figures at the job's batch and
the curve, and `serving.json` (analytic.serving_file) with `curve.csv` beside it."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field, replace
from typing import Any, Optional

from llm_perf_opt.analytic.memory_model import GB, Allowance, max_batch
from llm_perf_opt.analytic.serve_engines.engine import CONTINUOUS, Engine, engines_named
from llm_perf_opt.analytic.serve_engines.generate_host import GenerateHost
from llm_perf_opt.analytic.serve_engines.hf_eager import HF_EAGER
from llm_perf_opt.analytic.serve_engines.paged_memory import PagedPool
from llm_perf_opt.analytic.serve_engines.select import paged_for, timing_for
from llm_perf_opt.analytic.serve_engines.timing import Timing
from llm_perf_opt.analytic.serving import (
    CURVE_COLUMNS,
    Knee,
    ServingPoint,
    conventions,
    curve_rows,
    latency_curve,
    serving_point,
)
from llm_perf_opt.analytic.serving_file import Serving
from llm_perf_opt.analytic.serving_measured import load_curve, logged_experts, measured_block
from llm_perf_opt.analytic.serving_model import ServingModel
from llm_perf_opt.analytic.sizing import Sizing
from llm_perf_opt.analytic.time import convention
from llm_perf_opt.analytic.time.figures import TimeModel
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


@dataclass
class EngineServing:
    """One engine's figures: its timing and memory model, the point at its batch, the curve, the knee, the fits."""

    engine: Engine
    timing: Timing
    paged: Optional[PagedPool]
    batch: int
    point: Optional[ServingPoint]
    points: list
    knee: Optional[Knee]
    fits: dict
    sizing: Optional[Sizing] = None
    generate: Optional[GenerateHost] = None
    measured: Optional[dict] = None  # serve.measured beside hf_eager (`measured_for`): on the first engine only
    refused: dict = field(default_factory=dict)  # size with a list: {engine: why no device within max_scale meets}

    def describe(self) -> dict[str, Any]:
        out = self.engine.describe()
        out["level_convention"] = convention.batch_level(self.engine.level)
        if self.paged is not None:
            out["paged_memory"] = self.paged.describe()
        if self.generate is not None:
            out["generate_host"] = self.generate.describe()
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "engine": self.describe(),
            "batch": self.batch,
            "point": self.point.to_dict() if self.point is not None else None,
            "curve": curve_rows(self.points),
            "knee": self.knee.to_dict() if self.knee is not None else None,
            "max_fit_batch": self.fits,
            "sizing": self.sizing.to_dict() if self.sizing is not None else None,
        }


def engine_setup(
    cfg: RootConfig,
    sm: ServingModel,
    roof: Roof,
    time_model: Optional[TimeModel] = None,
    generate: Optional[GenerateHost] = None,
) -> list[tuple[Engine, Timing, Optional[PagedPool]]]:
    """Every engine of `serve.engine` with its timing and memory model; ConfigError (serve.engine) when the device
    lacks a figure one needs."""
    return [
        (e, timing_for(e, sm, roof, time_model, generate), paged_for(e, cfg.serve))
        for e in engines_named(cfg.serve.engine)
    ]


def measured_for(
    cfg: RootConfig, sm: ServingModel, roof: Roof, time_model: Optional[TimeModel]
) -> Optional[dict[str, Any]]:
    """serving.json's `measured` (`serving_measured`) when `serve.measured` names a serving curve; ConfigError when
    it is not one, or when the device lacks the eager level's figures (hf_eager is what the forwards run)."""
    path = cfg.serve.measured
    if not path:
        return None
    data = load_curve(path)
    conf = data.get("config", {})
    if conf.get("model") not in (None, cfg.model.name) or conf.get("mode") not in (None, cfg.workload.name):
        raise ConfigError.field(
            "serve.measured",
            path,
            f"measured {conf.get('model')} mode {conf.get('mode')}; this job is {cfg.model.name} mode "
            f"{cfg.workload.name}",
        )
    timing = timing_for(HF_EAGER, sm, roof, time_model, None)
    label = time_model.label if time_model is not None else roof.label
    logged = logged_experts(data)
    touched = None
    if logged and sm.moe is not None:  # the forwards priced at the experts they touched, too
        at_log = replace(sm, moe=sm.moe.with_logged(logged, f"the experts the calls of {path} touched"))
        touched = timing_for(HF_EAGER, at_log, roof, time_model, None)
    return measured_block(data, timing, label, path, touched)


def analyze_serving(
    cfg: RootConfig,
    sm: ServingModel,
    hardware: Hardware,
    roof: Roof,
    time_model: Optional[TimeModel] = None,
    generate: Optional[GenerateHost] = None,
    refuse: bool = True,
) -> list[EngineServing]:
    """Per engine: the point at its batch (static engines: workload.batch; a continuous, paged engine:
    serve.concurrency capped by its KV pool), the curve and the largest batches that fit; ConfigError (before
    anything is written, unless `refuse` is False) when the batch cannot fit in the device's memory."""
    s, allowance = cfg.serve, allowance_for(cfg)
    capacity = hardware.memory_bytes
    out = []
    for engine, timing, paged in engine_setup(cfg, sm, roof, time_model, generate):
        batch = cfg.workload.batch
        if paged is not None:
            pool = paged.max_batch(sm, s.output_tokens, capacity, allowance) if capacity else None
            if pool is not None and pool < 1:
                use = paged.use(sm, 1, s.output_tokens, allowance, capacity)
                if refuse:
                    raise ConfigError.field(
                        "serve.gpu_memory_utilization",
                        paged.utilization,
                        f"leaves no KV pool for one page on {hardware.name} ({capacity / GB:,.0f} GB): weights "
                        f"{use.weights / GB:,.1f} GB + a {paged.chunk_tokens}-token prefill chunk's activations "
                        f"{use.activations / GB:,.1f} GB + workspace take {paged.utilization:g} x the memory "
                        f"(engine {engine.name})",
                    )
                out.append(
                    EngineServing(engine, timing, paged, 0, None, [], None, {"continuous": 0}, generate=generate)
                )
                continue
            batch = min(paged.concurrency, pool) if pool is not None else paged.concurrency
            fits = {"static": None, "continuous": pool}
        else:
            fits = {
                "static": max_batch(sm, s.output_tokens, capacity, allowance) if capacity else None,
                "continuous": max_batch(sm, s.output_tokens, capacity, allowance, continuous=True)
                if capacity
                else None,
            }
        point = serving_point(sm, roof, batch, s.output_tokens, allowance, capacity, timing=timing, paged=paged)
        if capacity and paged is None and not point.memory.fits and refuse:
            raise ConfigError.field(
                "workload.batch",
                batch,
                f"needs {point.memory.total / GB:,.1f} GB on {hardware.name} "
                f"({capacity / GB:,.0f} GB) with {s.output_tokens} output tokens per page; the "
                f"largest batch that fits is {fits['static']} (static batching; {fits['continuous']} continuous)",
            )
        points, knee, _ = latency_curve(
            sm,
            roof,
            s.output_tokens,
            s.batches,
            allowance,
            capacity,
            continuous=engine.batching == CONTINUOUS,
            timing=timing,
            paged=paged,
        )
        out.append(
            EngineServing(
                engine,
                timing,
                paged,
                batch,
                point,
                points,
                knee,
                fits,
                generate=timing.generate,
            )
        )
    if out:
        out[0].measured = measured_for(cfg, sm, roof, time_model)
    return out


def serving_record(
    job: str,
    cfg: RootConfig,
    sm: ServingModel,
    hardware: Hardware,
    roof: Roof,
    runs: list[EngineServing],
) -> Serving:
    """serving.json: the first engine's figures in the top-level fields (what version-1 readers read), every engine's
    under `engines`."""
    first = runs[0]
    level = first.engine.level
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
        first.batch if first.point is not None else None,
        cfg.serve.output_tokens,
        first.point.to_dict() if first.point is not None else None,
        curve_rows(first.points),
        first.knee.to_dict() if first.knee is not None else None,
        first.fits,
        first.sizing.to_dict() if first.sizing is not None else None,
        conventions(level),
        first.describe(),
        [r.to_dict() for r in runs] + [{"engine": {"name": k}, "refused": v} for k, v in first.refused.items()],
        first.measured,
    )


def csv_text(rows: list[dict]) -> str:
    """curve.csv: the rows of `analytic.serving.curve_rows`."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(CURVE_COLUMNS))
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()
