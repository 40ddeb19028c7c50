"""The `hf_eager` engine: the vendor's `infer()` as it ships (Hugging Face `generate()` over the model's own eager
PyTorch code), at the eager level of the batch-B kernel census (`timing.LevelTiming`).

Per kernel the host's calibrated cost (Python + nn.Module + dispatcher, + the launch on a GPU); the MoE's per-layer
host sync (`tokens_per_expert.cpu()`) splits each forward into segments; the MoE's Python loop launches one expert MLP
per expert the batch's tokens touch (so the kernels grow with B); a decode step adds the generate loop's own host
work (`generate_host`, measured). Static batching: `generate()` pads the batch and runs it to the end together.
"""

from __future__ import annotations

from llm_perf_opt.analytic.serve_engines.engine import PLAIN, STATIC, Engine
from llm_perf_opt.analytic.serve_engines.generate_host import LEFT_OUT, NGRAM
from llm_perf_opt.analytic.time.convention import EAGER

HF_EAGER = Engine(
    name="hf_eager",
    level=EAGER,
    kernels="hf",
    batching=STATIC,
    memory=PLAIN,
    syncs=True,
    generate_host=True,
    summary="the vendor's infer(): HF generate() over the model's eager code, at the eager level",
    assumes=(
        "kernels: the cost formulas' census of the model's own code at batch B (the MoE's expert loop: one MLP per "
        "expert touched in expectation)",
        "host: the calibration's cost per kernel (+ launch on a GPU) and the MoE's per-layer host sync, "
        "segments max(host, device) + sync on a GPU, serial on the CPU",
        f"generate loop per step: no_repeat_ngram_size={NGRAM} processor + argmax + cat, measured on this host "
        f"(measure.generate_host); {LEFT_OUT}",
        "static batching: B pages padded together, TTFT = prefill(B), TPOT = step(B)",
        "memory: weights + KV cache + peak activations + allowance (analytic.memory_model)",
    ),
)
