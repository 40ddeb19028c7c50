"""The `vllm` engine: a vLLM-like server. Continuous batching (`serve.concurrency` = max_num_seqs slots, capped by
the KV pool), chunked prefill (`serve.chunk_tokens` per scheduler step; a page's prefill, vision included, runs
between decode steps), CUDA graphs for decode and its own fused kernel list (`vllm_kernels`: one grouped GEMM per
MoE projection, flash attention, one fused kernel per norm / activation / routing step) at the kernel level, and a
paged KV cache (`paged_memory`: `serve.block_size`, `serve.gpu_memory_utilization`)."""

from __future__ import annotations

from llm_perf_opt.analytic.serve_engines.engine import CONTINUOUS, PAGED, Engine
from llm_perf_opt.analytic.time.convention import KERNEL

VLLM = Engine(
    name="vllm",
    level=KERNEL,
    kernels="vllm",
    batching=CONTINUOUS,
    memory=PAGED,
    syncs=False,
    generate_host=False,
    summary="a vLLM-like engine: continuous batching, paged KV, chunked prefill, fused kernels, CUDA graphs",
    assumes=(
        "kernels: the cost formulas at batch B with flash (SDPA) attention, rewritten as the engine fuses them "
        "(analytic.serve_engines.vllm_kernels): one grouped GEMM per MoE projection, one kernel per norm, "
        "activation and routing step; at the device's calibrated rates (the kernel level)",
        "decode replayed as a CUDA graph: no host time in the step; the scheduler's host work overlapped; the "
        "prefill's large kernels keep the device ahead of the host (no host time charged either)",
        "continuous batching, steady state: serve.concurrency slots (max_num_seqs) capped by the KV pool, each "
        "finished page refilled by one prefill (vision + prompt, in chunks of serve.chunk_tokens) between steps",
        "memory: a paged KV pool = gpu_memory_utilization x memory - weights - one prefill chunk's peak "
        "activations - workspace, in blocks of serve.block_size tokens (analytic.serve_engines.paged_memory)",
        "the vision encoder's cost per page is in the prefill",
    ),
)
