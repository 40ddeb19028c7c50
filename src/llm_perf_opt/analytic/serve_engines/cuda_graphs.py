"""The `cuda_graphs` engine: the same kernels as `hf_eager` with the host out of the loop (the forward captured as a
CUDA graph and replayed; the MoE without its host sync, as a capture needs): the kernel level of the batch-B census.
A GPU only: on the CPU there is no graph to capture (refused by name). Static batching, memory as `hf_eager`'s."""

from __future__ import annotations

from llm_perf_opt.analytic.serve_engines.engine import PLAIN, STATIC, Engine
from llm_perf_opt.analytic.time.convention import KERNEL

CUDA_GRAPHS = Engine(
    name="cuda_graphs",
    level=KERNEL,
    kernels="hf",
    batching=STATIC,
    memory=PLAIN,
    syncs=False,
    generate_host=False,
    summary="the model's own kernels replayed as a CUDA graph: the kernel level (no host time, no host sync)",
    assumes=(
        "kernels: the cost formulas' census of the model's own code at batch B (the expert loop's MLPs for the "
        "experts touched in expectation), each at the device's calibrated rate for its shape",
        "no host time: no dispatch, no launch call, no sync (the MoE's routing kept on the device)",
        "the generate loop's host work overlapped with the replay (not charged)",
        "static batching; memory as hf_eager (analytic.memory_model)",
    ),
)
