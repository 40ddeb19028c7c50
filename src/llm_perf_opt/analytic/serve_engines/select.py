"""An engine's `Timing` on one device (`timing_for`), and its memory model (`paged_for`): a figure the engine needs
and the device lacks (no kernel-level figures, no host figures, CUDA graphs on the CPU) is one ConfigError naming
`serve.engine`."""

from __future__ import annotations

from typing import Any, Optional

from llm_perf_opt.analytic.serve_engines.engine import PAGED, Engine
from llm_perf_opt.analytic.serve_engines.generate_host import GenerateHost
from llm_perf_opt.analytic.serve_engines.paged_memory import PagedPool
from llm_perf_opt.analytic.serve_engines.timing import IdealTiming, LevelTiming, Timing
from llm_perf_opt.analytic.serving_model import ServingModel
from llm_perf_opt.analytic.time.convention import EAGER, IDEAL
from llm_perf_opt.analytic.time.figures import TimeModel
from llm_perf_opt.analytic.time.hardware import Roof
from llm_perf_opt.errors import ConfigError


def timing_for(
    engine: Engine,
    model: ServingModel,
    roof: Roof,
    time_model: Optional[TimeModel] = None,
    generate: Optional[GenerateHost] = None,
) -> Timing:
    if engine.level == IDEAL:
        return IdealTiming(model, roof)
    name = engine.name
    if model.stage_at is None:
        raise ConfigError.field("serve.engine", name, f"the model {model.name} gives no stages at batch B")
    if time_model is None or time_model.device is None:
        why = (time_model.missing.get("kernel") if time_model is not None else None) or "no kernel-level figures"
        raise ConfigError.field("serve.engine", name, f"needs the kernel level on {roof.hardware}: {why}")
    if not engine.syncs and time_model.device.synchronous:  # no host sync in its forward: a replayed CUDA graph
        raise ConfigError.field(
            "serve.engine",
            name,
            f"runs CUDA graphs, which need a CUDA device; {roof.hardware} runs on the CPU (serve.engine=hf_eager)",
        )
    if engine.level == EAGER and time_model.host is None:
        why = time_model.missing.get("eager") or "no host figures (calibrate this host: ./dev calibrate)"
        raise ConfigError.field("serve.engine", name, f"needs the eager level on {roof.hardware}: {why}")
    if engine.generate_host and generate is not None and not time_model.device.synchronous:
        from dataclasses import replace

        generate = replace(generate, host_only=True)
    return LevelTiming(model, time_model, engine, generate if engine.generate_host else None)


def paged_for(engine: Engine, serve: Any) -> Optional[PagedPool]:
    """The paged KV pool of a paged engine from the `serve` section (None for the others)."""
    if engine.memory != PAGED:
        return None
    return PagedPool(
        float(serve.gpu_memory_utilization), int(serve.block_size), int(serve.chunk_tokens), int(serve.concurrency)
    )
