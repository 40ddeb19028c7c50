"""Calibration of the kernel and eager time levels (`analytic.time_levels`): per device and dtype, what one
kernel of a given shape costs and what the host pays per dispatched op.

Measured (each figure: work / the fastest of `repeats` samples after `warmup` calls, as `measure.calibrate`):

* `gemm`: achieved FLOP/s of `torch.matmul(a (M x K), b (K x N), out=c)` for M in `GEMM_M` (1..64: the decode
  GEMVs, then larger) at N = K = `gemm_nk`: the efficiency curve the kernel level reads by M;
* `elementwise`: bytes/s of `torch.add(x, y, out=z)` (3 x numel x itemsize bytes) at a small (cache-resident)
  and a large size; `copy`: bytes/s of `dst.copy_(src)` (2 x bytes) at the same sizes;
* `min_kernel_s`: CUDA: the device time of the smallest kernel (a 1-element add, CUDA events around 1,000
  launches, divided); CPU: 0 by convention (a CPU "kernel" runs on the host thread: its fixed cost is the
  dispatch, counted once in the eager level);
* `host`: the host's cost per dispatched op: wall time per `torch.add(x, y, out=z)` on 1-element CPU tensors
  (eager, this torch, `inner` calls per sample), and the identity of the host (CPU model, threads, hostname
  hash-free: the CPU name and torch version).
"""
from __future__ import annotations

import platform
import time
from typing import Any

import torch

GEMM_M = (1, 2, 4, 8, 16, 32, 64, 256, 1024)
LEVELS_VERSION = 1


def _best(fn, device: torch.device, warmup: int, repeats: int, inner: int = 1) -> tuple[float, list[float]]:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeats):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            torch.cuda.synchronize(device)
            samples.append(start.elapsed_time(end) / 1e3 / inner)
        else:
            t0 = time.perf_counter()
            for _ in range(inner):
                fn()
            samples.append((time.perf_counter() - t0) / inner)
    return min(samples), samples


def measure_levels(device: torch.device, dtype: torch.dtype, quick: bool = False) -> dict[str, Any]:
    """The kernel-level and host figures of `device` in `dtype` (see the module docstring)."""
    cuda = device.type == "cuda"
    warmup, repeats = (1, 3) if quick else (2, 5)
    nk = 256 if quick else (4096 if cuda else 1024)
    itemsize = torch.empty((), dtype=dtype).element_size()
    timer = "torch.cuda.Event pairs (GPU time)" if cuda else "time.perf_counter (wall, synchronous device)"
    gemm = []
    b = torch.randn(nk, nk, device=device).to(dtype)
    for m in GEMM_M:
        a = torch.randn(m, nk, device=device).to(dtype)
        c = torch.empty(m, nk, device=device, dtype=dtype)
        inner = max(1, min(200, int(2e8 // (2 * m * nk * nk + 1)))) if not quick else 2
        t, _ = _best(lambda: torch.matmul(a, b, out=c), device, warmup, repeats, inner)
        gemm.append({"m": m, "n": nk, "k": nk, "seconds": t, "flops_per_s": 2.0 * m * nk * nk / t})
    sizes = {"small": 1 << 12, "large": (1 << 20) if quick else (1 << 24)}  # elements
    elementwise, copy = {}, {}
    for label, numel in sizes.items():
        x, y = torch.rand(numel, device=device).to(dtype), torch.rand(numel, device=device).to(dtype)
        z = torch.empty_like(x)
        inner = 200 if label == "small" else 3
        t, _ = _best(lambda: torch.add(x, y, out=z), device, warmup, repeats, inner)
        elementwise[label] = {"numel": numel, "bytes": 3 * numel * itemsize, "seconds": t,
                              "bytes_per_s": 3 * numel * itemsize / t}
        t, _ = _best(lambda: z.copy_(x), device, warmup, repeats, inner)
        copy[label] = {"numel": numel, "bytes": 2 * numel * itemsize, "seconds": t, "bytes_per_s": 2 * numel * itemsize / t}
    one = torch.ones(1, device=device, dtype=dtype)
    out = torch.empty_like(one)
    if cuda:
        min_kernel, _ = _best(lambda: torch.add(one, one, out=out), device, warmup, repeats, 1000)
        min_kernel_op = "torch.add on 1 element, CUDA events around 1,000 back-to-back launches, per launch"
    else:
        min_kernel, min_kernel_op = 0.0, "CPU: 0 by convention (the fixed cost of an op is the host dispatch)"
    hx, hout = torch.ones(1, dtype=dtype), torch.empty(1, dtype=dtype)
    inner = 200 if quick else 2000
    dispatch, samples = _best(lambda: torch.add(hx, hx, out=hout), torch.device("cpu"), warmup, repeats, inner)
    sync_s = 0.0
    if cuda:
        def sync_round() -> None:
            one.sum().item()
        sync_s, _ = _best(sync_round, device, warmup, repeats, 50)
    return {
        "version": LEVELS_VERSION, "dtype": str(dtype).removeprefix("torch."), "timer": timer,
        "statistic": "best (fastest sample)", "warmup": warmup, "repeats": repeats,
        "gemm": gemm, "elementwise": elementwise, "copy": copy,
        "min_kernel_s": min_kernel, "min_kernel_op": min_kernel_op,
        "host": {"dispatch_s": dispatch, "sync_s": sync_s, "cpu": platform.processor() or platform.machine(),
                 "python": platform.python_version(), "torch": torch.__version__, "threads": torch.get_num_threads(),
                 "op": f"torch.add(x, y, out=z) on 1-element CPU tensors, eager, {inner} calls per sample, "
                       "time.perf_counter; the fastest sample"},
    }
