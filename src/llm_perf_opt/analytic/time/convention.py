"""The time model's convention, written once: every prediction, artifact and printed table takes its text from here.

* `ROOFLINE`: the ideal level of one stage (`ideal`): what a unit is, compute, memory, time, bound, intensity.
  Written into roofline.json, summary.json's `roofline` section and every `StagePrediction.to_dict`.
* `LEVELS`: the three levels of a stage, part or decode step (`levels`): ideal, kernel, eager, the verdict and
  the overhead. Written into roofline.json's `time_model` and summary.json's `roofline.levels`.
* `BATCH_LEVELS`: the levels at batch B (`batch`), by level name: serving.json, curve pages and `./dev size`.

`roofline_line()` and `levels_line()` are the one-line forms the console tables print.
"""

from __future__ import annotations

from llm_perf_opt.analytic.time.figures import FRESH_BYTES, GEMV_ROWS, SMALL_BYTES

IDEAL, KERNEL, EAGER = "ideal", "kernel", "eager"
LEVEL_NAMES = (IDEAL, KERNEL, EAGER)

# the ideal compute time of one unit (`ideal.compute_seconds`)
_COMPUTE = "flops_matmul / matmul peak + flops_other / vector peak"

ROOFLINE: dict[str, str] = {
    "unit": "one LayerCost of the analytic model (a leaf module call, or a module's own work outside its "
    "children); units run one after another, parts and stages sum their units' times",
    "compute_time": "flops_matmul / matmul peak (dense tensor-core peak of the dtype; float32 uses the "
    "CUDA-core FP32 peak unless allow_tf32) + flops_other / vector (non-tensor) peak",
    "memory_time": "io_bytes / bandwidth; io_bytes = weights read + inputs read + outputs written, once per "
    "call (materialised intermediates, activation_bytes, are not counted)",
    "time": "max(compute time, memory time) per unit",
    "bound": "compute if compute time >= memory time else memory; for sums, the bound holding most of the time",
    "intensity": "(flops_matmul + flops_other) / io_bytes, FLOPs per byte",
    "attainable_flops": "flops / predicted time = min(blended peak, intensity x bandwidth) for one unit",
    "flops": "2 x multiply-adds (analytic.costs)",
}

LEVELS: dict[str, str] = {
    IDEAL: f"roofline: max({_COMPUTE}, io_bytes / bandwidth) per unit",
    KERNEL: "per kernel max(flops / matmul rate at its FLOPs per element moved (calibrated; at its M for a "
    "datasheet) for gemm and conv, the fused attention's own calibrated curve for attention (else the matmul "
    "rate), or flops / vector rate; bytes / bandwidth at its size (up to "
    f"{SMALL_BYTES} bytes: cache, up to {FRESH_BYTES}: medium, else large (matmul kernels above it, and "
    f"GEMV-like ones of at most {GEMV_ROWS} rows above the cache tier: a weight-streaming GEMV's bandwidth, on the "
    "CPU times the calibrated share of its row count and weight's shorter side (gemv_rows: the BLAS packs the "
    "weights of a few rows)); "
    "layout copies their own figures; on the CPU an elementwise kernel's result at the write bandwidth and its "
    "inputs at the read bandwidth of its tier) + on the CPU the fresh-page cost of a result above "
    "the mmap threshold (serial: the kernel's threads fault the pages) and a matrix product's write-back of a result "
    f"above {SMALL_BYTES} bytes (serial: the computing core stores it); on the CPU a decode step whose bytes fit the "
    "last-level cache the thread keeps (calibrated llc) reads the weights those products stream at the cached GEMV's "
    "bandwidth (calibrated gemv_cached: the step before left them there); min kernel time), + on an async device a "
    "gemm kernel's calibrated fixed device time (gemm_fixed_s, serial with its work), summed",
    EAGER: "+ host per kernel (Python + nn.Module + dispatcher, calibrated on a module forward; + launch on an "
    "async device); sync points split the forward into segments: async device: each segment max(host, "
    "device) + sync round trip; CPU: kernel + host, serial",
    "verdict": "host if the host dominates; else compute / memory / launch by the kernel time they hold",
    "overhead": "eager - kernel: removed by CUDA graphs / torch.compile and a fused MoE kernel (no host syncs)",
}

BATCH_LEVELS: dict[str, str] = {
    IDEAL: f"roofline, the speed of light: per unit max(B x ({_COMPUTE}), (weights read once per step + B x "
    "(inputs + outputs)) / bandwidth), summed over units; no kernel efficiency, launch or host time",
    KERNEL: "the kernel level (`LEVELS['kernel']`) of the stage's kernel census at batch B (the cost formulas of the "
    "batch-B forward: GEMMs of B x T rows, the MoE's kernels for the experts B x T tokens touch in expectation): "
    "no host time, no host syncs",
    EAGER: "the eager level (`LEVELS['eager']`) of the same census at batch B: + the host's cost per kernel and the "
    "MoE's per-layer host sync; a decode step + the generate loop's per-step host work (measured, its source named)",
}


def roofline_line() -> str:
    """The ideal level in one line: time; compute time; memory time (what the roofline tables print)."""
    return f"{ROOFLINE['time']}; {ROOFLINE['compute_time']}; {ROOFLINE['memory_time']}"


def levels_line() -> str:
    """Every level's convention in one line (what the levels table prints)."""
    return "; ".join(f"{k}: {v}" for k, v in LEVELS.items())


def batch_level(level: str) -> str:
    """The convention of a level at batch B (the level's name when it has none)."""
    return BATCH_LEVELS.get(level, level)
