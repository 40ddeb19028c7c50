"""The `ideal` engine: no engine, the roofline (the speed of light every engine approaches), static and continuous
batching as `analytic.serving` defines them, memory as `analytic.memory_model` (the default: `serve.engine=ideal`)."""

from __future__ import annotations

from llm_perf_opt.analytic.serve_engines.engine import PLAIN, STATIC, Engine
from llm_perf_opt.analytic.time.convention import IDEAL

IDEAL_ENGINE = Engine(
    name="ideal",
    level=IDEAL,
    kernels="none",
    batching=STATIC,
    memory=PLAIN,
    syncs=False,
    generate_host=False,
    summary="no engine: the roofline of the model's units at batch B (a bound, not a prediction of any runtime)",
    assumes=(
        "every unit at max(compute, memory) of the device's peaks: no kernel efficiency, launch or host time",
        "static and continuous batching both shown; memory: weights + KV cache + peak activations + allowance",
    ),
)
