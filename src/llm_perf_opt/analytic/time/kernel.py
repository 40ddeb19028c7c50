"""The kernel level: each launched kernel at the rate the device reaches for its shape, summed.

One kernel (`kernel_time`): max(FLOPs at the matmul rate the device reaches at the kernel's FLOPs per element
moved (gemm, conv; the fused attention its own curve) or at the vector rate, bytes / the bandwidth of its size
tier (on the CPU an elementwise kernel's result at the write and its inputs at the read bandwidth,
`DeviceFigures.memory_s`; on the CPU a product of a few rows streaming its weights at the share of the streaming
GEMV's rate its row count and its weight's shorter side reach, `DeviceFigures.row_share`, `weight_side`)) + on the
CPU the fresh-page cost of a large result and a matrix product's write-back of a
result beyond the cache (`DeviceFigures.writeback_s`), and never under the device's minimum kernel time
(convention: `convention.LEVELS["kernel"]`). On an asynchronous device a matrix product (`gemm`) adds the
device's fixed GEMM time (`DeviceFigures.gemm_fixed_s`: operand pipeline fill and epilogue, serial with the
product's work) to its work time, a convolution the device's fixed convolution time (`DeviceFigures.conv_fixed_s`:
its kernel's fixed time and cuDNN's layout transforms around it), and a fused attention (`m`: its query rows padded
to whole tiles, on CUDA) runs at its curve's full-device rate times its occupancy: tiles / multiprocessors, at
most 1 (`figures.occupancy`; `DeviceFigures.attention_full`). A small kernel (elementwise, copy or relayout, cast,
reduction) whose result is more than one block (`WAVE_ELEMENTS`) costs at least its kind's one-wave time
(`DeviceFigures.wave_kernel`: what such a kernel takes on the device whatever its bytes, e.g. 1.1 µs for a cast,
2.7 µs for a strided copy, 3.5 µs for a norm on an H200) instead of the shortest kernel's; one of a block (a decode
step's) keeps the min kernel time (`DeviceFigures.min_kernel_s`: a one-block kernel's own device time, ~1.1 µs on
an H200). A census of kernels (`Kernels`, exact counts from the cost formulas) costs the sum over its kernels
(`KernelLevel`, each kernel key computed once per device).
"""

from __future__ import annotations

from llm_perf_opt.analytic.costs import SDPA_QUERY_TILE, Kernels
from llm_perf_opt.analytic.time.figures import GEMM_KINDS, DeviceFigures, occupancy

# the elements of one block of PyTorch's TensorIterator kernels (128 threads x 4 elements): a small kernel whose result
# has more runs several blocks, up to a wave (`DeviceFigures.wave_kernel`)
WAVE_ELEMENTS = 512

# share of a kernel's bytes that is its result, where the cost formula does not state it (`Kernels.of(out=)`)
OUT_SHARE = {
    "gemm": 1 / 3,
    "conv": 1 / 3,
    "attention": 1 / 4,
    "elementwise": 1 / 2,
    "reduction": 1 / 2,
    "copy": 1 / 2,
    "relayout": 1 / 2,
}


def wave_kind(kind: str, nbytes: int, out: int) -> str:
    """The one-wave figure a small kernel takes (`DeviceFigures.wave_kernel`): its kind's, but a relayout's is the
    copy's (a layout copy inside another op), and so is an upcast's: a cast whose stated result is wider than its input
    (an autocast float32 op's 16-bit inputs) runs TensorIterator's casting copy (`direct_copy_kernel` converting each
    element on load, no vectorized path: ~2.9 µs at one wave on an H200, as an explicit `.to(torch.float32)`, a copy),
    where a downcast runs the vectorized float-to-16-bit kernel (~1.1 µs)."""
    if kind == "relayout" or (kind == "cast" and out and out > nbytes - out):
        return "copy"
    return kind


def weight_side(m: int, flops: int, out: int, itemsize: int) -> float:
    """The shorter side of an m-row product's weight, (m x K) @ (K x N): N from its stated result (m x N elements),
    K from its FLOPs (2 m K N; a bias's m N adds half an element to K); 0 when the result is not stated."""
    if m <= 0 or not out or not flops:
        return 0.0
    n = out / (m * itemsize)
    return min(flops / (2 * m * n), n)


def kernel_time(dev: DeviceFigures, kind: str, m: int, flops: int, nbytes: int, out: int = 0) -> tuple[float, str]:
    """(seconds, bound) of one kernel on `dev`: bound is compute, memory or launch."""
    if kind in GEMM_KINDS:
        at = m if dev.gemm_axis == "m" else flops / max(nbytes / dev.itemsize, 1.0)
        if kind == "attention" and dev.gemm_axis == "x" and dev.attention:
            if dev.attention_full and m > 0:
                # a fused CUDA attention's `m` is its padded query rows: tiles of SDPA_QUERY_TILE rows, one per
                # CTA; fewer tiles than the device's multiprocessors leave the rest idle
                rate = dev.gemm_rate(at, dev.attention_full) * occupancy(m / SDPA_QUERY_TILE, dev.multiprocessors)
            else:
                rate = dev.gemm_rate(at, dev.attention)
        elif kind == "gemm" and dev.gemm_axis == "x" and dev.gemm_rows and m > 0:
            rate = dev.row_rate(m, at)
        else:
            rate = dev.gemm_rate(at)
        compute = flops / rate if flops else 0.0
    else:
        compute = flops / dev.vector_flops if flops else 0.0
    result = out or int(nbytes * OUT_SHARE.get(kind, 0.5))
    side = weight_side(m, flops, out, dev.itemsize) if kind == "gemm" and dev.gemv_rows else 0.0
    memory = dev.memory_s(kind, nbytes, m, result, side)
    fresh = 0.0
    if dev.fresh_s_per_byte and result > dev.fresh_bytes:
        fresh = result * dev.fresh_s_per_byte
    # the fresh pages are faulted in by the threads that compute the kernel, and on the CPU a product's result
    # beyond the cache is stored by them: serial with its work, not hidden
    fresh += dev.writeback_s(kind, result)
    t = max(compute, memory) + fresh
    fixed = dev.gemm_fixed_s if kind == "gemm" else (dev.conv_fixed_s if kind == "conv" else 0.0)
    if fixed:
        # the fixed part holding most of the kernel's time is its launch-like cost, as the min kernel time is
        work, t = t, t + fixed
        if t >= dev.min_kernel_s and fixed >= work:
            return t, "launch"
    floor = dev.min_kernel_s
    wave = dev.wave_kernel.get(wave_kind(kind, nbytes, out)) if dev.wave_kernel else None
    if wave and (out or nbytes * OUT_SHARE.get(kind, 0.5)) > WAVE_ELEMENTS * dev.itemsize:
        floor = wave  # more than one block: the kind's one-wave time (CUPTI), not the shortest kernel's
    if t < floor:
        return floor, "launch"
    return t, "compute" if compute >= memory + fresh else "memory"


class KernelLevel:
    """The kernel level on one device: a census of kernels -> (seconds, {bound: seconds}), each kernel key's
    time computed once."""

    def __init__(self, device: DeviceFigures) -> None:
        self.device = device
        self._kernel: dict[tuple, tuple[float, str]] = {}

    def __call__(self, kernels: Kernels) -> tuple[float, dict[str, float]]:
        total, bound = 0.0, {}
        for key, n in kernels.counts.items():
            hit = self._kernel.get(key)
            if hit is None:
                hit = self._kernel[key] = kernel_time(self.device, *key)
            total += hit[0] * n
            bound[hit[1]] = bound.get(hit[1], 0.0) + hit[0] * n
        return total, bound
