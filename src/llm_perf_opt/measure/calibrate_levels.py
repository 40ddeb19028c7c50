"""Calibration of the kernel and eager time levels (`analytic.time.levels`): per device and dtype, what one
kernel of a given shape costs and what the host pays per dispatched op.

Statistic (every figure): the samples of all shapes are taken in interleaved rounds (round r times every shape
once, so a burst of load from other processes hits one sample of each shape, not all samples of one), and each
figure is the **fastest consistent** sample: the fastest sample that another sample confirms within
`CONSISTENT` (20 %); with no such pair, the median. A lone fast outlier cannot set a figure, and a shape whose
samples were all slowed by other work keeps its fastest confirmed time. The measured side of the levels' check
(`measure.levels_stage`) takes the fastest run, the same convention.

Measured:

* `gemm`: achieved FLOP/s of `torch.matmul(a (M x K), b (K x N), out=c)` over a grid of shapes (`gemm_shapes`):
  M = 1..4096 (1..64: the decode GEMVs), K and N from 64 to 1024 (CPU) or 4096 (CUDA), each with its FLOPs per
  element moved `x = 2MNK / (MK + KN + MN)`: the kernel level reads the rate at a kernel's x (a GEMV has x ~ 2,
  a square GEMM of side s has 2s/3), which holds the skinny products (small K or N) a square-only grid misses.
* `elementwise`: bytes/s of `torch.add(x, y, out=z)` (3 x numel x itemsize bytes) at a small (cache-resident,
  256 KiB), a medium (8 MiB) and a large (128 MiB; quick: 16 MiB) size; `copy`: bytes/s of a layout copy,
  `dst.copy_(src.transpose)` (2 x bytes; the copies of a transformer forward are mostly contiguous() after a
  permute, cat and pad), at the same sizes; `write`: bytes/s of a write-only kernel, `z.fill_(1)` (numel x itemsize
  bytes), at the same sizes: with the add it splits a kernel's bytes into reads and writes (a result is written at
  `write`, its inputs read at the rate the add leaves for them; `analytic.time.figures.DeviceFigures.memory_s`). On one
  CPU core a write costs about 2.5x a read beyond the cache (8 vs 21 GB/s on this project's 2-core Xeon: a store that
  misses fetches its line first, read-for-ownership, then writes it back), so a kernel that mostly writes (SAM's
  relative-position bias, 8 MiB written from 0.5 MiB read) is twice the add's time per byte. On the CPU the medium
  and large sizes of the add, the copy and the fill are timed one call per sample, interleaved with every other
  case: their buffers are not in cache from the call before, as in a forward (version 8). On CUDA every size is a
  graph of many calls (a one-call graph's events hold its launch); `tiers_single` names the cases timed one call
  per sample (`CUDA_MARKS`);
* `fresh`: CPU: seconds per byte of a result written into fresh memory: `(t(x + y) - t(torch.add(x, y, out=z)))
  / result bytes` at the large size. Allocations above glibc's largest mmap threshold (`FRESH_BYTES`, 32 MiB on
  64-bit Linux) are mmapped and unmapped on each call, so every page of such a result is faulted in again (about
  a millisecond per MiB on these machines); smaller ones are reused heap memory. CUDA: 0 (the caching
  allocator reuses blocks);
* `gemv_cached`, `llc` (CPU; added within version 8, marked by their keys, `CPU_MARKS`): a decode step repeated
  over the same weights finds them in the last-level cache when all it moves fits there (the tiny twin's step: 34-40
  MB, most of it the 33 MB lm_head). The GEMV of `gemv` at the weight sizes `RESIDENT_MIB`, each call timed right
  after `RESIDENT_WARM` untimed calls of itself (its weights left in the cache by them): `gemv_cached` is the rate
  at the smallest size, `llc` the largest size whose rate is at least the geometric mean of `gemv_cached` and the
  streaming `gemv` (the cache the thread keeps, measured: on this project's 2-core VM 16-64 MiB at 28-29 GB/s, 128
  MiB at the streaming 15 GB/s, where the OS reports a 260 MiB L3). 0 when even the smallest size ran at the
  streaming rate;
* `gemv_rows` (CPU; added within version 8, marked by its key): a decode step at batch B runs its products on B
  rows, and the CPU's BLAS takes another path for a few rows than for one: beyond 2-3 rows it packs the weight
  matrix it streams before its kernel reads it, so the product of 4 rows reads its weights at about half the one-row
  GEMV's rate, 8 rows at a third to a half. The product at each row count of `GEMV_ROW_COUNTS`, over the streaming
  GEMV's weight (each sample one call, the cases interleaved) and, at its K and each of `GEMV_ROW_K` (the weight's
  shorter side also moves the rate: the tiny twin's lm_head is (64 x 129280)), over the smallest `RESIDENT_MIB`
  weight (each sample timed right after `RESIDENT_WARM` untimed calls of itself, as `gemv_cached`): bytes moved
  (weights, rows in and out) per second, fastest consistent of `ROW_ROUNDS`, and each as a share of the one-row
  product's rate at the GEMV's K timed the same way (`share`, `cached_share`). The three calibrations recorded in
  tests/data/cpu/twin_tiny-tiny-* (this project's 2-core Xeon VM, one thread) gave at 1, 2, 4, 8, 16 rows: cached
  at K = 2048 1, 0.97-0.99, 0.51-0.52, 0.33-0.34, 0.26-0.28; cached at K = 64 0.81-0.90, 0.93-0.97, 0.51-0.54,
  0.45-0.51, 0.42-0.43; streamed at K = 2048 1, 0.94-0.96, 0.53-0.57, 0.43-0.46, 0.46-0.48. The kernel level reads
  a product of m <= `GEMV_ROWS` rows above the cache tier at the streaming (or, resident, the cached) GEMV's rate
  times the share of its row count and its weight's shorter side (log-log in m and in K between the calibrated
  ones, the nearest beyond them);
* `min_kernel_s`: CUDA: the device time of a one-block kernel, the kernel level's floor of every kernel
  (`measure_min_kernel`): the ops of a decode row (`MIN_KERNEL_NUMEL` elements: one block of TensorIterator's: add,
  multiply, SiLU, a cast each way, a layout copy, a sum and a softmax over the row) launched eagerly under
  torch.profiler, the median CUPTI duration of their one-block kernels: the kernel's own device time, as a
  forward's profile records it and its module ranges sum it (the statistic and the kernels a recording's filler
  reads, `level_fillers.min_kernel_from_recording`). Beside it `min_kernel_graph_s`: the period of a CUDA graph
  of 1-element adds replayed (CUDA events around the replay, divided: each kernel + the device's gap to the next
  one, ~0.45 µs on an H200; what version 6 called min_kernel_s; a replayed graph's rate of tiny kernels), and
  `launch_rate_s`: events around 1,000 eager launches (the host's launch rate, which a host-bound stream shows);
  CPU: 0 by convention (a CPU "kernel" runs on the host thread: its fixed cost is the host's per-op cost, counted
  once in the eager level);
* `gemm_fixed_s`: CUDA: the fixed device time of one matrix-product kernel (`measure_gemm_fixed`): the small
  products of the grid (M up to 64, K and N up to 1024, nn.Linear's layout) launched eagerly under torch.profiler,
  the `level_fillers.GEMM_FIXED_PERCENTILE`th percentile of their GEMM kernels' CUPTI durations (device-only, no
  graph: the kernels' own durations, as a forward's profile records them); the kernel level adds it to each GEMM's
  work time. CPU: 0 (the host's per-op cost is counted once in the eager level);
* `wave_kernel_s`: CUDA: per small-kernel kind (elementwise, copy, cast, reduction) the device time of a one-wave
  kernel of it (`measure_wave_kernels`): ops of a transformer forward on tensors of `WAVE_NUMEL` elements (tens of
  blocks: more than one, at most one per multiprocessor) launched eagerly under torch.profiler, the median CUPTI
  duration of the kind's one-wave kernels, the kind by kernel name as a recorded trace's (`level_fillers.
  WAVE_KERNEL_PERCENTILE`, `recorded_profile.small_kind`); the kernel level floors such kernels by it instead of
  the min kernel time (a strided copy or a norm of a few thousand rows takes 2-4 µs on an H200, a 1-element add 1);
  CPU: absent (the host's per-op cost is counted once in the eager level);
* `conv_fixed_s`: CUDA: the fixed device time of one convolution call (`measure_conv_fixed`): small convolutions as
  a vision encoder's (`CONV_FIXED_SHAPES`: a patch embedding, a 1 x 1 and 3 x 3 neck, two strided 3 x 3 on maps of
  8-16 pixels a side) launched eagerly in NCHW under torch.profiler, per `aten::convolution` call the CUPTI
  durations of every kernel it launched summed (the convolution kernel and cuDNN's layout transforms: NCHW to NHWC
  of the input and the weights, back for the result), the `level_fillers.CONV_FIXED_PERCENTILE`th percentile; the
  kernel level adds it to each convolution's work time. CPU: 0 (the host's per-op cost is counted once);
* `multiprocessors`: CUDA: the device's streaming multiprocessors (the fused attention's occupancy: the calibrated
  attention points fill only some of them, `analytic.time.figures.attention_at_full_occupancy`); CPU: 0;
* `host`: the host's cost per op. `dispatch_s`: wall time per `torch.add(x, y, out=z)` on 1-element CPU tensors
  (the dispatcher alone). `op_s`: wall time of a small transformer block's forward (`_HostBlock`: LayerNorm,
  qkv Linear, reshape / permute / unbind, SDPA, transpose / reshape, proj Linear, residual add, LayerNorm, MLP
  with GELU, residual add) on tiny tensors under `torch.no_grad`, divided by the kernels it launches (aten ops
  that are not views, counted with a TorchDispatchMode): Python + nn.Module + dispatcher + allocation per kernel,
  with the views and metadata ops of real module code around each kernel. Both are timed on one thread
  (`torch.set_num_threads(1)`, the thread count restored after): the host's cost per op is the framework's work
  around a kernel, while a kernel's own thread fork / join is the kernel level's (the GEMM grid, vector, attention
  are timed at torch's thread count); on a loaded host a parallel region waits for its other threads to be
  scheduled, which would otherwise be charged to every op (version 7). CUDA (version 6): `op_s` is measured on
  the device by `measure.host_workload` (a decode step of a small MoE decoder and its generate loop under autocast,
  host-bound: dispatch, autocast, allocator and the launch call per kernel, with the syncs' round trips taken
  out), per op the step calls that launches a kernel (`count_ops`, `host.op_unit: op`: an op's inner kernels, an
  autocast cast, a layout transform, are launched inside it and paid with it; added within version 7); the CPU
  block's figure stays beside it as `op_cpu_s`. `sync_s`: the round trip of one `.item()` on an idle stream. The
  eager level charges `op_s` per op where `op_unit` says so, else per kernel (`dispatch_s` when a calibration
  predates it).

CPU timing (version 7): on one thread (the host figures always; every figure when torch runs one thread,
`runtime.threads=1`) each sample is the thread's CPU time (`time.thread_time`): the wall time of an idle host, without
the time other processes held the core, so a calibration made under load reads what an idle host would; on several
threads the wall (`time.perf_counter`), as other threads' work is not on the calling thread's clock.

CUDA timing (version 6): every case is captured `inner` times into a CUDA graph and the graph replayed between
CUDA events (`timer: graph`), so a small kernel's figure is its device time, not the host's launch rate; a case
that cannot be captured falls back to events around eager launches, and its entry says `timer: launches`.
"""

from __future__ import annotations

import platform
import statistics
import time
from typing import Any, Callable, Optional, Sequence

import torch
from torch import nn

GEMM_M = (1, 4, 16, 64, 256, 1024, 4096)
GEMM_KN_CPU = ((64, 256), (256, 64), (256, 256), (64, 4096), (1024, 1024))
GEMM_KN_CUDA = ((256, 1024), (1024, 1024), (1024, 4096), (4096, 4096))
GEMM_MAX_FLOPS = {"cpu": 2.2e9, "cuda": 2e12}
FRESH_BYTES = 1 << 25  # glibc's DEFAULT_MMAP_THRESHOLD_MAX on 64-bit: larger allocations are always mmapped
CONSISTENT = 1.2  # a sample confirmed by another within 20 %
LEVELS_VERSION = 8  # 3: 15 rounds on the CPU (7 left figures of a loaded machine 3x apart between calibrations);
# 4: the GEMV streaming its weights from memory (`gemv`), the fused attention kernel's own curve (`attention`);
# 5: the GEMM grid and the GEMV in nn.Linear's layout (a transposed (N, K) weight)
# 6: CUDA: device-only times (CUDA graph replay), min_kernel_s of a replayed graph, the host's op_s measured on the
# device on a decoder-shaped workload (`measure.host_workload`)
# 7: the host figures (dispatch_s, op_s) measured on one thread: on a loaded host a multi-threaded op's parallel
# region waits for its other threads to be scheduled (float32 op_s 79 us at a load of 6 with 2 threads, 9.8 us on 1);
# on one thread every CPU sample is the thread's CPU time (time.thread_time), not the wall
# (CUDA figures added within version 7, each marked by its own key for `measure.level_fillers`: wave_kernel_s,
# conv_fixed_s, and min_kernel_s as a one-block kernel's CUPTI duration with the graph period beside it as
# min_kernel_graph_s)
# 8: the write bandwidth (`write`: a fill at each size) beside the add, the medium and large sizes timed one call per
# sample (not in cache from the call before); the fused attention at head dim 16 beside 64

# figures added within LEVELS_VERSION on the CPU, each marked by its key: a cached CPU calibration of this version
# without one is measured again (`measure.calibrate`); a calibration file read by path keeps its figures (the time
# model reads a missing one as none)
CPU_MARKS = ("gemv_cached", "gemv_rows")
# the same on CUDA: `tiers_single` (the cases of the elementwise, copy and write tiers timed one call per sample: none
# on CUDA). The first version-8 CUDA calibration (the H200 of 2026-11-27 16:35) timed the medium and large tiers one
# call per CUDA graph, so its events held the graph's launch: 27-30 us for a 3.6 us bfloat16 medium add (8x), and the
# full twin's SAM, CLIP and prefill decoder came out 1.4-2.7x their device time at the kernel level
CUDA_MARKS = ("tiers_single",)

# (batch, heads, tokens, head dim, additive float mask): the fused attention of the vision encoders (SAM's windows of
# 14x14 tokens with their relative-position bias, SAM's global blocks, CLIP without a mask) and of a prefill, at the
# full models' head dim (64) and the tiny twins' (16): the CPU's flash attention runs a 16-wide head at about two
# thirds of a 64-wide one's rate (its Q·Kᵀ and P·V blocks are skinny GEMMs, and its per-score softmax work is the same
# per score), and the kernel level reads the curve flat below its lowest point, so the curve needs points there. Head
# dim 16 with a mask only: with a mask a point's x (FLOPs per element moved) grows with the head dim (the mask's
# element per score is fixed), without one with the tokens, so an unmasked 16-wide point would sit among the
# 64-wide ones' x and pull their rate down
ATTENTION_SHAPES = (
    (16, 2, 196, 64, True),
    (1, 2, 1024, 64, True),
    (1, 1, 2048, 64, True),
    (1, 2, 1024, 64, False),
    (1, 1, 2048, 64, False),
    (16, 2, 196, 16, True),
    (1, 2, 1024, 16, True),
)
ATTENTION_SHAPES_QUICK = ((4, 2, 196, 64, True), (1, 2, 512, 64, False), (4, 2, 196, 16, True))


def attention_work(b: int, h: int, n: int, d: int, mask: bool, itemsize: int) -> tuple[int, int]:
    """(FLOPs, bytes) of one fused attention as the cost formulas count it (`analytic.costs.sdpa`, fused):
    2 x scores x (d + d) + scores x (1 + mask + softmax); q, k, v, the output and the mask read or written once."""
    from llm_perf_opt.analytic.costs import ELEMENTWISE_FLOPS

    scores = b * h * n * n
    flops = 2 * scores * 2 * d + scores * (1 + int(mask) + ELEMENTWISE_FLOPS["softmax"])
    return flops, (4 * b * h * n * d + (scores if mask else 0)) * itemsize


GEMV_SHAPE = (2048, 16384)  # (K, N) of the streaming GEMV: 128 MiB in float32, 64 MiB in bfloat16 (beyond any cache)
# CPU: the weight sizes (MiB) of the GEMVs timed with their weights left in the cache by the call before (`gemv_cached`,
# `llc`): the smallest is beyond a core's L2 (1-4 MiB on these hosts) and within a server's last-level cache
RESIDENT_MIB = (16, 32, 64, 128, 256)
# untimed calls before each timed one: a line read once from memory is not kept by the last-level cache of these
# hosts (a victim cache of L2 that keeps what was reused): after 1 call a 16 MiB GEMV still runs at the streaming
# 15 GB/s, after 2 at 28, after 3 to 6 at 29 (this project's 2-core Xeon VM); a decode step re-reads its weights
# step after step
RESIDENT_WARM = 3
# CPU: the row counts of the weight-streaming products of `gemv_rows` (the first is the one-row GEMV the others are
# a share of): a decode step's at batches 1-16 (`analytic.time.figures.GEMV_ROWS` rows at most are GEMV-like)
GEMV_ROW_COUNTS = (1, 2, 4, 8, 16)
# CPU: the weights' shorter sides (K) the cached row products of `gemv_rows` are timed at, beside the streaming GEMV's
# own K: at K = 64 (the tiny twins' hidden size) the one-row product reads its weights at 0.8-0.9 of the K = 2048
# one's rate from the cache and 8 rows at 0.45-0.51 (0.33-0.34 at K = 2048); from K = 256 to 4096 the 4- and 8-row
# products of 32 MiB of weights took the same time within 8% (`./dev bench cpu_row_products`: 2.33-2.35 ms at 4 rows,
# 3.41-3.67 at 8), at K = 64 2.31 and 2.87. Streamed, only the GEMV's K is timed: weights beyond the cache are a large
# model's, whose hidden sizes (1,280 for the full twin) sit with K = 2048
GEMV_ROW_K = (64,)
# rounds of the row products (fewer than the other cases': their weights are large, their samples steady)
ROW_ROUNDS = 7
STATISTIC = (
    "fastest consistent: the fastest sample another sample confirms within 20 % (else the median), "
    "samples of all shapes interleaved in rounds"
)


def fastest_consistent(samples: Sequence[float], tolerance: float = CONSISTENT) -> float:
    """The fastest sample another sample confirms within `tolerance` (a ratio); the median when none does."""
    s = sorted(x for x in samples if x > 0)
    if not s:
        raise ValueError("no positive samples")
    for a, b in zip(s, s[1:]):
        if b <= a * tolerance:
            return a
    return statistics.median(s)


def gemm_shapes(device_type: str, quick: bool = False) -> list[tuple[int, int, int]]:
    """(M, K, N) of the GEMM grid, the largest products left out (`GEMM_MAX_FLOPS`)."""
    if quick:
        return [(m, k, n) for m in (1, 16, 256) for k, n in ((64, 64), (256, 256))]
    kn = GEMM_KN_CUDA if device_type == "cuda" else GEMM_KN_CPU
    cap = GEMM_MAX_FLOPS["cuda" if device_type == "cuda" else "cpu"]
    return [(m, k, n) for m in GEMM_M for k, n in kn if 2 * m * k * n <= cap]


def flop_per_element(m: int, k: int, n: int) -> float:
    """x = FLOPs / elements moved = 2MNK / (MK + KN + MN) (each operand and the result once)."""
    return 2.0 * m * k * n / (m * k + k * n + m * n)


def _timer(device: torch.device) -> Callable[[Callable[[], Any], int], float]:
    """seconds per call of fn over `inner` back-to-back calls (CUDA events on CUDA)."""
    if device.type == "cuda":

        def run(fn: Callable[[], Any], inner: int) -> float:
            torch.cuda.synchronize(device)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(inner):
                fn()
            end.record()
            torch.cuda.synchronize(device)
            return start.elapsed_time(end) / 1e3 / inner

        return run

    clock = cpu_clock()

    def run_cpu(fn: Callable[[], Any], inner: int) -> float:
        t0 = clock()
        for _ in range(inner):
            fn()
        return (clock() - t0) / inner

    return run_cpu


def cpu_clock() -> Callable[[], float]:
    """The CPU's sample clock: on one thread `time.thread_time` (the thread that runs every kernel: its CPU time is
    the wall time of an idle host, without the time other processes held the core), else `time.perf_counter`
    (several threads' work is not on one thread's clock)."""
    return time.thread_time if torch.get_num_threads() == 1 else time.perf_counter


def cpu_timer_text() -> str:
    if torch.get_num_threads() == 1:
        return "time.thread_time (one thread: the CPU time of the thread that runs the kernels)"
    return "time.perf_counter (wall, synchronous device)"


def sync_round_trip(device: torch.device, dtype: torch.dtype, rounds: int) -> float:
    """Seconds of one host sync on a CUDA `device`: `.item()` of a one-element sum, 50 back-to-back per sample on the
    host's clock, the fastest consistent of `rounds` samples."""
    one = torch.ones(1, device=device, dtype=dtype)
    return fastest_consistent([_timer(torch.device("cpu"))(lambda: one.sum().item(), 50) for _ in range(rounds)])


def graph_of(fn: Callable[[], Any], inner: int, device: torch.device) -> Optional["torch.cuda.CUDAGraph"]:
    """A CUDA graph of `inner` calls of `fn` (None when `fn` cannot be captured: the caller times launches)."""
    try:
        stream = torch.cuda.Stream(device)
        stream.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(stream):  # warm-up on the capture stream, as torch.cuda.graphs asks
            fn()
        torch.cuda.current_stream(device).wait_stream(stream)
        torch.cuda.synchronize(device)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            for _ in range(inner):
                fn()
        torch.cuda.synchronize(device)
        return graph
    except Exception:  # noqa: BLE001 - not capturable (a sync, a host op): timed by launches instead
        torch.cuda.synchronize(device)
        return None


def replay_time(graph: "torch.cuda.CUDAGraph", inner: int, device: torch.device) -> float:
    """Device seconds per captured call: CUDA events around one replay of the graph."""
    torch.cuda.synchronize(device)
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    torch.cuda.synchronize(device)
    return start.elapsed_time(end) / 1e3 / inner


def _interleaved(
    cases: dict[str, Callable[[], Any]],
    device: torch.device,
    rounds: int,
    warmup: int,
    target_s: float,
    single: Sequence[str] = (),
) -> dict[str, dict[str, Any]]:
    """{name: {"seconds", "samples", "inner", "timer"}}: every case once per round, `inner` calls per sample sized
    from a probe to about `target_s` (the cases named in `single`: one call per sample, so that what the other cases
    ran since evicted its buffers from the cache); on CUDA each sample replays a CUDA graph of the `inner` calls
    (device time) when the case can be captured."""
    timer = _timer(device)
    inner: dict[str, int] = {}
    graphs: dict[str, Any] = {}
    for name, fn in cases.items():
        for _ in range(warmup):
            fn()
        probe = min(timer(fn, 1) for _ in range(2))
        inner[name] = 1 if name in single else max(1, min(2000, int(target_s / max(probe, 1e-7))))
        if device.type == "cuda":
            graphs[name] = graph_of(fn, inner[name], device)
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, fn in cases.items():
            graph = graphs.get(name)
            samples[name].append(
                replay_time(graph, inner[name], device) if graph is not None else timer(fn, inner[name])
            )
    method = {name: "graph" if graphs.get(name) is not None else "launches" for name in cases}
    graphs.clear()  # the graphs' memory pools go with them
    return {
        name: {"seconds": fastest_consistent(s), "samples": s, "inner": inner[name], "timer": method[name]}
        for name, s in samples.items()
    }


class _HostBlock(nn.Module):
    """A pre-norm transformer block at width 8 on 4 tokens: what a real module forward does around each kernel."""

    def __init__(self, width: int = 8, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(width), nn.LayerNorm(width)
        self.qkv, self.proj = nn.Linear(width, 3 * width), nn.Linear(width, width)
        self.fc1, self.act, self.fc2 = nn.Linear(width, 2 * width), nn.GELU(), nn.Linear(2 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm1(x)).reshape(b, t, 3, self.heads, c // self.heads).permute(2, 0, 3, 1, 4).unbind(0)
        a = nn.functional.scaled_dot_product_attention(q, k, v)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, c))
        return x + self.fc2(self.act(self.fc1(self.norm2(x))))


def count_kernels(fn: Callable[[], Any]) -> int:
    """aten ops `fn` runs that are not views (what the analytic model lists as kernels), by a TorchDispatchMode."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Count(TorchDispatchMode):
        n = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            if not getattr(func, "is_view", False) and func.__name__.split(".")[0] not in ("detach", "alias"):
                Count.n += 1
            return func(*args, **(kwargs or {}))

    with Count():
        fn()
    return Count.n


def count_ops(fn: Callable[[], Any]) -> int:
    """Ops `fn` calls that launch a kernel: its outermost torch calls (functions, tensor methods, seen by a
    TorchFunctionMode, which does not see the calls made inside them) under which at least one aten op that is not a
    view ran (a TorchDispatchMode below it, as `count_kernels`). An op's inner aten ops (autocast's cast of an input,
    a convolution's layout transforms, SDPA's fill) count with it, once: what the cost formulas list as
    `Kernels.op_count` and TorchLens records."""
    from torch.overrides import TorchFunctionMode
    from torch.utils._python_dispatch import TorchDispatchMode

    seen = {"kernels": 0, "ops": 0}

    class Kernels(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            if not getattr(func, "is_view", False) and func.__name__.split(".")[0] not in ("detach", "alias"):
                seen["kernels"] += 1
            return func(*args, **(kwargs or {}))

    class Ops(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):  # noqa: ANN001
            before = seen["kernels"]
            out = func(*args, **(kwargs or {}))
            if seen["kernels"] > before:
                seen["ops"] += 1
            return out

    with Kernels(), Ops():
        fn()
    return seen["ops"]


def measure_host(dtype: torch.dtype, rounds: int, warmup: int) -> dict[str, Any]:
    """dispatch_s (bare torch.add) and op_s (a module forward per kernel) on this host (see the docstring)."""
    hx, hout = torch.ones(1, dtype=dtype), torch.empty(1, dtype=dtype)
    blocks = nn.Sequential(*[_HostBlock() for _ in range(4)]).to(dtype).eval()
    x = torch.randn(1, 4, 8).to(dtype)

    def forward() -> None:
        with torch.no_grad():
            blocks(x)

    kernels = count_kernels(forward)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the framework's work around a kernel, not the kernel's own thread fork / join
    try:
        got = _interleaved(
            {"dispatch": lambda: torch.add(hx, hx, out=hout), "block": forward},
            torch.device("cpu"),
            rounds,
            warmup,
            2e-3,
        )
    finally:
        torch.set_num_threads(threads)
    return {
        "dispatch_s": got["dispatch"]["seconds"],
        "op_s": got["block"]["seconds"] / kernels,
        "op_kernels": kernels,
        "op_forward_s": got["block"]["seconds"],
        "host_threads": 1,
        "op": "torch.add(x, y, out=z) on 1-element CPU tensors, eager, on one thread (torch.set_num_threads(1)), "
        "time.thread_time",
        "op_module": f"4 pre-norm transformer blocks (width 8, 4 tokens, {dtype}) under torch.no_grad on one "
        f"thread (torch.set_num_threads(1)): the forward's CPU time (time.thread_time) / its {kernels} non-view aten "
        "ops (TorchDispatchMode)",
    }


GEMM_FIXED_SHAPES = tuple((m, k, n) for m in (1, 4, 16, 64) for k, n in ((256, 1024), (1024, 1024)))


def profiled_rounds(calls: list[Callable[[], Any]], rounds: int, device: torch.device, name: str) -> Any:
    """The recorded profile (`recorded_profile.read_recorded_profile`) of `rounds` eager rounds of `calls` under
    torch.profiler (CPU activity, and CUDA's on a CUDA device), after one untimed round (allocator blocks, kernel
    modules and cuDNN's heuristics on the first call): the trace is exported to a temporary file and read as a
    recorded run's is, so a calibrated figure and the figure filled from a recording are read by the same code.
    Raises what the profiler or the reader raise (RuntimeError, ValueError, OSError)."""
    import tempfile
    from pathlib import Path

    from torch.profiler import ProfilerActivity, profile

    from llm_perf_opt.measure.recorded_profile import read_recorded_profile

    cuda = device.type == "cuda"
    for fn in calls:
        fn()
    if cuda:
        torch.cuda.synchronize(device)
    activities = [ProfilerActivity.CPU, *([ProfilerActivity.CUDA] if cuda else [])]
    with profile(activities=activities) as prof:
        for _ in range(max(rounds, 1)):
            for fn in calls:
                fn()
        if cuda:
            torch.cuda.synchronize(device)
    with tempfile.TemporaryDirectory() as tmp:
        trace = Path(tmp) / f"{name}.trace.json"
        prof.export_chrome_trace(str(trace))
        return read_recorded_profile(trace)


def profiled_percentile(
    calls: list[Callable[[], Any]], rounds: int, device: torch.device, name: str, field: str, pct: float, what: str
) -> tuple[float, int, str]:
    """(the `pct`th percentile of the positive durations `profiled_rounds(...)` read into `field`, how many, "") or
    (0.0, 0, why not measured: the profiler failed, or it recorded no `what`): a figure, not the run, fails."""
    from llm_perf_opt.measure.level_fillers import percentile

    try:
        durations = [d for d in getattr(profiled_rounds(calls, rounds, device, name), field) if d > 0]
    except (RuntimeError, ValueError, OSError) as exc:  # no CUPTI, an unreadable trace
        return 0.0, 0, f"not measured: torch.profiler failed ({type(exc).__name__}: {exc})"
    if not durations:
        return 0.0, 0, f"not measured: the profiler recorded no {what}"
    return percentile(durations, pct), len(durations), ""


def measure_gemm_fixed(device: torch.device, dtype: torch.dtype, rounds: int) -> tuple[float, str]:
    """(seconds, what was measured) of a CUDA device's fixed GEMM time (see the module docstring): each of
    `GEMM_FIXED_SHAPES` warmed up, then `rounds` eager rounds of them all under torch.profiler (CPU + CUDA
    activities), the trace read as a recorded one (`measure.recorded_profile`: GEMM kernels by name)."""
    from llm_perf_opt.measure.level_fillers import GEMM_FIXED_PERCENTILE

    cases = []
    for m, k, n in GEMM_FIXED_SHAPES:
        a, b = torch.randn(m, k, device=device).to(dtype), torch.randn(n, k, device=device).to(dtype).t()
        c = torch.empty(m, n, device=device, dtype=dtype)
        cases.append(lambda a=a, b=b, c=c: torch.matmul(a, b, out=c))
    # (profiled_rounds' untimed round: cuBLAS handle, workspace and heuristics on the first call of each shape)
    value, count, why = profiled_percentile(
        cases, rounds, device, "gemm_fixed", "gemm_kernel_s", GEMM_FIXED_PERCENTILE, "GEMM kernel by name"
    )
    if why:
        return 0.0, f"{why}; 0 (GEMMs by their work alone)"
    shapes = sorted({(m, k, n) for m, k, n in GEMM_FIXED_SHAPES})
    return value, (
        f"the {GEMM_FIXED_PERCENTILE}th percentile of {count} GEMM kernel durations (torch.profiler/CUPTI, "
        f"device-only) of eager torch.matmul in nn.Linear's layout, {max(rounds, 1)} rounds of {len(shapes)} shapes "
        f"(M, K, N) {shapes[0]}..{shapes[-1]}: {value * 1e6:.3g} µs"
    )


# (in channels, out channels, kernel, stride, input side) of the convolutions `measure_conv_fixed` times: SAM's
# patch embedding and neck at a small model's width, on small maps (work well under the call's fixed time)
CONV_FIXED_SHAPES = (
    (3, 32, 16, 16, 128),
    (32, 64, 1, 1, 16),
    (64, 64, 3, 1, 16),
    (64, 128, 3, 2, 16),
    (128, 256, 3, 2, 8),
)


def measure_conv_fixed(device: torch.device, dtype: torch.dtype, rounds: int) -> tuple[float, str]:
    """(seconds, what was measured) of a CUDA device's fixed convolution time (see the module docstring): the
    convolutions of `CONV_FIXED_SHAPES` warmed up (cuDNN's heuristics on the first call), then `rounds` x 2 eager
    rounds of them under torch.profiler, the trace read as a recorded one (`recorded_profile.read_recorded_profile`:
    per `aten::convolution` call its kernels' durations summed), their `level_fillers.CONV_FIXED_PERCENTILE`th
    percentile. (0, why) when the profiler fails or records no call."""
    from llm_perf_opt.measure.level_fillers import CONV_FIXED_PERCENTILE

    calls = []
    for cin, cout, k, stride, side in CONV_FIXED_SHAPES:
        x = torch.randn(1, cin, side, side, device=device).to(dtype)
        w = torch.randn(cout, cin, k, k, device=device).to(dtype)
        pad = 1 if k == 3 else 0  # the 3 x 3 necks keep their map; the 1 x 1 and the patch embedding have none
        calls.append(lambda x=x, w=w, s=stride, p=pad: torch.nn.functional.conv2d(x, w, stride=s, padding=p))
    n = 2 * max(rounds, 1)
    value, count, why = profiled_percentile(
        calls, n, device, "conv_fixed", "conv_call_s", CONV_FIXED_PERCENTILE, "aten::convolution call's kernels"
    )
    if why:
        return 0.0, f"{why}; 0 (convolutions by their work)"
    return value, (
        f"the {CONV_FIXED_PERCENTILE}th percentile of {count} convolution calls' device times (per "
        f"aten::convolution its kernels' torch.profiler/CUPTI durations summed: the convolution and cuDNN's layout "
        f"transforms) of eager F.conv2d in NCHW, {n} rounds of {len(calls)} shapes (in, out, kernel, stride, side) "
        f"{list(CONV_FIXED_SHAPES)}: {value * 1e6:.3g} µs"
    )


MIN_KERNEL_NUMEL = 256  # a decode row of a small model: half a block of TensorIterator's 512 elements


def min_kernel_cases(device: torch.device, dtype: torch.dtype) -> list[Callable[[], Any]]:
    """Eager calls whose kernels are one-block kernels: what a decode step runs on one row of `MIN_KERNEL_NUMEL`
    elements (arithmetic, an activation, casts, a layout copy, a reduction and a softmax over the row)."""
    x, y = torch.randn(1, MIN_KERNEL_NUMEL, device=device).to(dtype), torch.randn(1, MIN_KERNEL_NUMEL, device=device)
    y16 = y.to(dtype)
    quad = torch.randn(4, MIN_KERNEL_NUMEL // 4, device=device).to(dtype)
    return [
        lambda: torch.add(x, y16),
        lambda: torch.mul(x, y16),
        lambda: torch.nn.functional.silu(x),
        lambda: x.to(torch.float32),
        lambda: y.to(dtype),
        lambda: quad.t().contiguous(),
        lambda: x.sum(dim=-1),
        lambda: torch.softmax(x, dim=-1),
    ]


def measure_min_kernel(device: torch.device, dtype: torch.dtype, rounds: int) -> tuple[float, str]:
    """(seconds, what was measured) of a CUDA device's one-block kernel (see the module docstring): the calls of
    `min_kernel_cases` warmed up, then `rounds` x 4 eager rounds of them under torch.profiler (CPU + CUDA
    activities), the trace read as a recorded one (`recorded_profile.read_recorded_profile`: one-block small
    kernels by name and grid), their `level_fillers.MIN_KERNEL_PERCENTILE`th percentile. (0, why) when the
    profiler fails or records none: the caller keeps the graph-timed figure then."""
    from llm_perf_opt.measure.level_fillers import MIN_KERNEL_PERCENTILE

    calls = min_kernel_cases(device, dtype)
    n = 4 * max(rounds, 1)
    value, count, why = profiled_percentile(
        calls, n, device, "min_kernel", "block_kernel_s", MIN_KERNEL_PERCENTILE, "one-block kernel by name and grid"
    )
    if why:
        return 0.0, why
    return value, (
        f"the {MIN_KERNEL_PERCENTILE}th percentile of {count} one-block kernel durations (torch.profiler/"
        f"CUPTI, device-only: the kernel alone, no gap to the next) of {len(calls)} eager ops on a "
        f"{MIN_KERNEL_NUMEL}-element {str(dtype).removeprefix('torch.')} row (add, mul, SiLU, casts, a layout copy, "
        f"sum, softmax), {n} rounds: {value * 1e6:.3g} µs"
    )


WAVE_NUMEL = 1 << 15  # 64 blocks of TensorIterator's 512 elements: one wave on any recent GPU, more than one block


def wave_kernel_cases(device: torch.device, dtype: torch.dtype) -> dict[str, list[Callable[[], Any]]]:
    """{kind: eager calls whose kernels are one-wave kernels of that kind}: what a transformer forward runs on a few
    hundred tokens (`WAVE_NUMEL` elements, rows of 256): contiguous and strided / broadcast arithmetic, a GELU;
    layout copies after a permute, a cat, an upcast to float32 (a casting copy); a downcast from float32; a sum, a
    mean, a softmax and a layer norm over the last dimension."""
    rows, width = WAVE_NUMEL // 256, 256
    x, y = torch.randn(rows, width, device=device).to(dtype), torch.randn(rows, width, device=device).to(dtype)
    col = torch.randn(rows, 1, device=device).to(dtype)
    quad = torch.randn(2, rows // 2, 4, width // 4, device=device).to(dtype)
    wide = torch.randn(rows, width, device=device)  # float32
    return {
        "elementwise": [
            lambda: torch.add(x, y),
            lambda: torch.mul(x, col),  # broadcast
            lambda: torch.add(x.t(), y.t()),  # strided operands
            lambda: torch.nn.functional.gelu(x),
        ],
        "copy": [
            lambda: quad.permute(0, 2, 1, 3).contiguous(),
            lambda: x.t().contiguous(),
            lambda: torch.cat((x, y), dim=-1),
            # an upcast: TensorIterator's casting copy (direct_copy_kernel, each element converted on load), a copy by
            # its kernel's name, as the kernel level costs a widening cast (`analytic.time.kernel.wave_kind`)
            lambda: x.to(torch.float32),
        ],
        "cast": [lambda: wide.to(dtype)],  # a downcast: the vectorized float-to-16-bit kernel
        "reduction": [
            lambda: x.sum(dim=-1),
            lambda: wide.mean(dim=-1, keepdim=True),
            lambda: torch.softmax(x, dim=-1),
            lambda: torch.nn.functional.layer_norm(wide, (width,)),
        ],
    }


def measure_wave_kernels(
    device: torch.device, dtype: torch.dtype, rounds: int
) -> tuple[dict[str, float], dict[str, str]]:
    """({kind: seconds}, {kind: what was measured}) of a CUDA device's one-wave small kernels (see the module
    docstring): the calls of `wave_kernel_cases` warmed up, then `rounds` eager rounds of them all under
    torch.profiler (CPU + CUDA activities), the trace read as a recorded one (`recorded_profile.read_recorded_profile`:
    the kind by kernel name, one wave by the kernel's grid). A kind the profiler gave no kernel of is absent."""
    from llm_perf_opt.measure.level_fillers import WAVE_KERNEL_PERCENTILE, WAVE_KINDS, percentile

    cases = wave_kernel_cases(device, dtype)
    calls = [fn for kind in WAVE_KINDS for fn in cases[kind]]
    try:
        got = profiled_rounds(calls, rounds, device, "wave_kernels").wave_kernel_s
    except (RuntimeError, ValueError, OSError) as exc:  # no CUPTI, an unreadable trace: the figure, not the run, fails
        why = f"not measured: torch.profiler failed ({type(exc).__name__}: {exc})"
        return {}, {kind: why for kind in WAVE_KINDS}
    values, ops = {}, {}
    for kind in WAVE_KINDS:
        durations = [d for d in got.get(kind, ()) if d > 0]
        if not durations:
            ops[kind] = "not measured: the profiler recorded no one-wave kernel of this kind by name"
            continue
        values[kind] = percentile(durations, WAVE_KERNEL_PERCENTILE)
        ops[kind] = (
            f"the {WAVE_KERNEL_PERCENTILE}th percentile of {len(durations)} one-wave {kind} kernel durations "
            f"(torch.profiler/CUPTI, device-only; 2 to multiprocessors blocks) of {len(cases[kind])} eager ops on "
            f"{WAVE_NUMEL:,}-element {str(dtype).removeprefix('torch.')} tensors, {max(rounds, 1)} rounds: "
            f"{values[kind] * 1e6:.3g} µs"
        )
    return values, ops


def measure_resident_gemv(
    k: int, dtype: torch.dtype, rounds: int, streaming_bps: float, sizes_mib: Sequence[int] = RESIDENT_MIB
) -> dict[str, Any]:
    """CPU: {"gemv_cached": ..., "llc": ...} (see the module docstring): (1 x k) @ (n x k)ᵀ GEMVs of `sizes_mib`
    MiB of weights, each sample one call timed right after `RESIDENT_WARM` untimed calls of itself, the sizes
    interleaved in rounds; each size's fastest consistent sample."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    timer = _timer(torch.device("cpu"))
    cases = []
    for mib in sizes_mib:
        n = (mib << 20) // (k * itemsize)
        x, w, y = torch.randn(1, k).to(dtype), torch.randn(n, k).to(dtype).t(), torch.empty(1, n, dtype=dtype)
        cases.append((mib, (n * k + k + n) * itemsize, lambda x=x, w=w, y=y: torch.matmul(x, w, out=y)))
    samples: dict[int, list[float]] = {mib: [] for mib, _, _ in cases}
    for _ in range(max(rounds, 1)):
        for mib, _, fn in cases:
            for _ in range(RESIDENT_WARM):  # its weights into the cache, as the steps before leave them
                fn()
            samples[mib].append(timer(fn, 1))
    rates = {mib: nbytes / fastest_consistent(samples[mib]) for mib, nbytes, _ in cases}
    cached = rates[sizes_mib[0]]
    bar = (cached * streaming_bps) ** 0.5
    kept = [mib for mib in sizes_mib if rates[mib] >= bar]
    llc_mib = kept[-1] if kept and cached > bar else 0
    size = ", ".join(f"{mib} MiB {rates[mib] / 1e9:.3g} GB/s" for mib in sizes_mib)
    what = (
        f"torch.matmul (1 x {k}) @ (n x {k})ᵀ, out=, each call timed right after {RESIDENT_WARM} untimed calls of "
        "itself"
    )
    return {
        "gemv_cached": {
            "bytes": cases[0][1],
            "bytes_per_s": cached,
            "op": f"{what}, {sizes_mib[0]} MiB of weights: a decode GEMV whose weights the step before left in "
            "the last-level cache",
        },
        "llc": {
            "bytes": llc_mib << 20,
            "op": f"the largest weight size whose GEMV ({what}) ran at least the geometric mean of the cached and "
            f"the streaming GEMV's rates ({bar / 1e9:.3g} GB/s): {size}",
        },
    }


def measure_row_products(streamed: torch.Tensor, rounds: int, cached_mib: int = RESIDENT_MIB[0]) -> dict[str, Any]:
    """CPU: {"gemv_rows": ...} (see the module docstring): (m x k) @ (n x k)ᵀ at each m of `GEMV_ROW_COUNTS`, over
    `streamed` (the streaming GEMV's weight, (n x k)ᵀ) and, at its k and each of `GEMV_ROW_K`, over a `cached_mib` MiB
    weight re-read after `RESIDENT_WARM` untimed calls; the cases interleaved in at most `ROW_ROUNDS` rounds, each
    case's fastest consistent sample, and its rate as a share of the one-row product's at `streamed`'s k timed the
    same way."""
    dtype, (k0, _) = streamed.dtype, streamed.shape
    itemsize = streamed.element_size()
    timer = _timer(torch.device("cpu"))
    sides = sorted({*GEMV_ROW_K, k0})
    weights = {(k0, "streamed"): streamed}
    for k in sides:
        weights[(k, "cached")] = torch.randn((cached_mib << 20) // (k * itemsize), k).to(dtype).t()
    cases = []
    for (k, how), w in weights.items():
        for m in GEMV_ROW_COUNTS:
            x, y = torch.randn(m, k).to(dtype), torch.empty(m, w.shape[1], dtype=dtype)
            nbytes = (w.shape[0] * w.shape[1] + m * k + m * w.shape[1]) * itemsize
            cases.append(((k, m, how), nbytes, lambda x=x, w=w, y=y: torch.matmul(x, w, out=y)))
    samples: dict[tuple[int, int, str], list[float]] = {key: [] for key, _, _ in cases}
    for _ in range(max(min(rounds, ROW_ROUNDS), 1)):
        for key, _, fn in cases:
            if key[2] == "cached":
                for _ in range(RESIDENT_WARM):  # its weights into the cache, as the steps before leave them
                    fn()
            samples[key].append(timer(fn, 1))
    rate = {key: nbytes / fastest_consistent(samples[key]) for key, nbytes, _ in cases}
    one = GEMV_ROW_COUNTS[0]
    rows = []
    for k in sides:
        for m in GEMV_ROW_COUNTS:
            row: dict[str, Any] = {"k": k, "m": m}
            if (k, m, "streamed") in rate:
                row.update(
                    bytes_per_s=rate[(k, m, "streamed")], share=rate[(k, m, "streamed")] / rate[(k0, one, "streamed")]
                )
            row.update(
                cached_bytes_per_s=rate[(k, m, "cached")],
                cached_share=rate[(k, m, "cached")] / rate[(k0, one, "cached")],
            )
            rows.append(row)

    def listed(key: str) -> str:
        return "; ".join(
            f"k {k}: " + ", ".join(f"{r['m']} {r[key]:.2f}" for r in rows if r["k"] == k and key in r)
            for k in sides
            if any(r["k"] == k and key in r for r in rows)
        )

    return {
        "gemv_rows": {
            "rows": rows,
            "op": f"torch.matmul (m x k) @ (n x k)ᵀ, out=, the rate at m rows as a share of the one-row product's at "
            f"k {k0} (the streaming GEMV's) timed the same way: streaming {streamed.numel() * itemsize / 2**20:g} MiB "
            f"of weights (each sample one call, the cases interleaved): {listed('share')}; re-reading {cached_mib} "
            f"MiB (each sample right after {RESIDENT_WARM} untimed calls of itself): {listed('cached_share')}",
        }
    }


def measure_levels(device: torch.device, dtype: torch.dtype, quick: bool = False) -> dict[str, Any]:
    """The kernel-level and host figures of `device` in `dtype` (see the module docstring)."""
    cuda = device.type == "cuda"
    rounds, warmup = (3, 1) if quick else ((7, 2) if cuda else (15, 2))
    target = 2e-4 if quick else (1e-3 if cuda else 2e-3)
    itemsize = torch.empty((), dtype=dtype).element_size()
    timer = (
        "a CUDA graph of the case's calls replayed between torch.cuda.Event pairs (device time; `launch_timed`: the "
        "cases timed by events around eager launches instead)"
        if cuda
        else cpu_timer_text()
    )
    shapes = gemm_shapes(device.type, quick)
    cases: dict[str, Callable[[], Any]] = {}
    keep = []  # the tensors of each case stay alive for the rounds
    for m, k, n in shapes:
        # the weight as nn.Linear stores it, (N, K), used transposed: the kernel every Linear of the models runs
        # (row-major (K, N) operands take other kernels, several times slower for bfloat16 GEMVs on the CPU)
        a, b = torch.randn(m, k, device=device).to(dtype), torch.randn(n, k, device=device).to(dtype).t()
        c = torch.empty(m, n, device=device, dtype=dtype)
        keep.append((a, b, c))
        cases[f"gemm {m} {k} {n}"] = lambda a=a, b=b, c=c: torch.matmul(a, b, out=c)
    gk, gn = (GEMV_SHAPE[0] // 4, GEMV_SHAPE[1]) if quick else GEMV_SHAPE
    gx, gw = torch.randn(1, gk, device=device).to(dtype), torch.randn(gn, gk, device=device).to(dtype).t()
    gy = torch.empty(1, gn, device=device, dtype=dtype)
    keep.append((gx, gw, gy))
    cases["gemv"] = lambda x=gx, w=gw, y=gy: torch.matmul(x, w, out=y)
    attention_shapes = ATTENTION_SHAPES_QUICK if quick else ATTENTION_SHAPES
    for b, h, n, d, masked in attention_shapes:
        q, k, v = (torch.randn(b, h, n, d, device=device).to(dtype) for _ in range(3))
        bias = torch.randn(b, h, n, n, device=device).to(dtype) if masked else None
        keep.append((q, k, v, bias))
        cases[f"attention {b} {h} {n} {d} {masked}"] = lambda q=q, k=k, v=v, bias=bias: (
            torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        )
    sizes = {"small": 1 << 16, "medium": 1 << 21, "large": (1 << 22) if quick else (1 << 25)}  # elements (x4 B)
    for label, numel in sizes.items():
        x, y = torch.rand(numel, device=device).to(dtype), torch.rand(numel, device=device).to(dtype)
        z = torch.empty_like(x)
        side = int(numel**0.5)
        src2 = x[: side * side].view(side, side)
        dst2 = torch.empty(side, side, device=device, dtype=dtype)
        keep.append((x, y, z, src2, dst2))
        cases[f"add {label}"] = lambda x=x, y=y, z=z: torch.add(x, y, out=z)
        cases[f"copy {label}"] = lambda s=src2, d=dst2: d.copy_(s.t())
        cases[f"fill {label}"] = lambda z=z: z.fill_(1.0)
        if label == "large" and not cuda:
            cases["add fresh"] = lambda x=x, y=y: torch.add(x, y)
    # on the CPU, beyond the small (cache) size a buffer is timed as a forward meets it: not in cache from the call
    # before. On CUDA every size is a graph of many calls: a graph of one call puts the graph's launch (10-25 us on
    # the H200 hosts) between the events, which is no kernel's time (`tiers_single` in the file)
    single = [] if cuda else [f"{op} {label}" for op in ("add", "copy", "fill") for label in sizes if label != "small"]
    got = _interleaved(cases, device, rounds, warmup, target, single)
    gemm = []
    for m, k, n in shapes:
        t = got[f"gemm {m} {k} {n}"]["seconds"]
        gemm.append(
            {"m": m, "k": k, "n": n, "x": flop_per_element(m, k, n), "seconds": t, "flops_per_s": 2.0 * m * k * n / t}
        )
    t = got["gemv"]["seconds"]
    gemv = {
        "m": 1,
        "k": gk,
        "n": gn,
        "bytes": (gk * gn + gk + gn) * itemsize,
        "seconds": t,
        "bytes_per_s": (gk * gn + gk + gn) * itemsize / t,
        "op": f"torch.matmul (1 x {gk}) @ ({gn} x {gk})ᵀ (nn.Linear's layout), out=: a decode GEMV streaming "
        f"{gk * gn * itemsize / 2**20:g} MiB of weights from memory",
    }
    resident = (
        {}
        if cuda
        else {
            **measure_resident_gemv(
                gk, dtype, rounds, gemv["bytes_per_s"], RESIDENT_MIB[:2] if quick else RESIDENT_MIB
            ),
            **measure_row_products(gw, rounds, RESIDENT_MIB[0]),
        }
    )
    attention = []
    for b, h, n, d, masked in attention_shapes:
        t = got[f"attention {b} {h} {n} {d} {masked}"]["seconds"]
        flops, nbytes = attention_work(b, h, n, d, masked, itemsize)
        attention.append(
            {
                "batch": b,
                "heads": h,
                "tokens": n,
                "head_dim": d,
                "mask": masked,
                "seconds": t,
                "x": flops / (nbytes / itemsize),
                "flops_per_s": flops / t,
            }
        )
    elementwise, copy, write = {}, {}, {}
    for label, numel in sizes.items():
        t = got[f"fill {label}"]["seconds"]
        write[label] = {"numel": numel, "bytes": numel * itemsize, "seconds": t, "bytes_per_s": numel * itemsize / t}
        t = got[f"add {label}"]["seconds"]
        elementwise[label] = {
            "numel": numel,
            "bytes": 3 * numel * itemsize,
            "seconds": t,
            "bytes_per_s": 3 * numel * itemsize / t,
        }
        side = int(numel**0.5)
        t = got[f"copy {label}"]["seconds"]
        copy[label] = {
            "numel": side * side,
            "bytes": 2 * side * side * itemsize,
            "seconds": t,
            "bytes_per_s": 2 * side * side * itemsize / t,
        }
    fresh = {"s_per_byte": 0.0, "min_bytes": FRESH_BYTES, "op": "CUDA: 0 (the caching allocator reuses blocks)"}
    if "add fresh" in got:
        numel = sizes["large"]
        extra = got["add fresh"]["seconds"] - got["add large"]["seconds"]
        fresh = {
            "s_per_byte": max(extra, 0.0) / (numel * itemsize),
            "min_bytes": FRESH_BYTES,
            "op": f"(t(x + y) - t(torch.add(x, y, out=z))) / result bytes, {numel} elements "
            f"({numel * itemsize / 2**20:g} MiB result)",
        }
    one = torch.ones(1, device=device, dtype=dtype)
    out = torch.empty_like(one)
    launch_rate = None
    min_kernel_graph, graph_op = 0.0, ""
    if cuda:
        # inner: as many launches as the probe allows, capped at 2,000
        tiny = _interleaved({"tiny": lambda: torch.add(one, one, out=out)}, device, rounds, warmup, 1.0)
        min_kernel_graph = tiny["tiny"]["seconds"]
        launch_rate = min(_timer(device)(lambda: torch.add(one, one, out=out), 1000) for _ in range(rounds))
        graph_op = (
            f"torch.add on 1 element, {tiny['tiny']['inner']} launches captured in a CUDA graph, CUDA events around "
            f"its replay, per kernel, fastest consistent (timer: {tiny['tiny']['timer']}): each kernel + the gap to "
            "the next; the eager launch rate (events around 1,000 back-to-back launches) is launch_rate_s"
        )
        min_kernel, min_kernel_op = measure_min_kernel(device, dtype, rounds)
        if not min_kernel:  # the profiler failed: the graph's period, an upper bound, labelled
            min_kernel = min_kernel_graph
            min_kernel_op = f"{min_kernel_op}; instead the CUDA graph's period (an upper bound): {graph_op}"
        gemm_fixed, gemm_fixed_op = measure_gemm_fixed(device, dtype, rounds)
        conv_fixed, conv_fixed_op = measure_conv_fixed(device, dtype, rounds)
        wave_kernel, wave_kernel_op = measure_wave_kernels(device, dtype, rounds)
        sms = int(torch.cuda.get_device_properties(device).multi_processor_count)
        sms_op = "torch.cuda.get_device_properties(device).multi_processor_count"
    else:
        min_kernel, min_kernel_op = 0.0, "CPU: 0 by convention (the fixed cost of an op is the host's per-op cost)"
        gemm_fixed, gemm_fixed_op = 0.0, "CPU: 0 by convention (the fixed cost of an op is the host's per-op cost)"
        conv_fixed, conv_fixed_op = 0.0, "CPU: 0 by convention (the fixed cost of an op is the host's per-op cost)"
        sms, sms_op = 0, "CPU: 0 (no occupancy model)"
        wave_kernel, wave_kernel_op = {}, {}
    host = measure_host(dtype if not cuda else torch.float32, rounds, warmup)
    sync_s = 0.0
    if cuda:
        sync_s = sync_round_trip(device, dtype, rounds)
        from llm_perf_opt.measure.host_workload import measure_host_workload

        on_device = measure_host_workload(
            device, dtype, sync_s, count_kernels, rounds, warmup, fastest_consistent, count_ops=count_ops
        )
        host["op_cpu_s"], host["op_cpu_module"] = host.pop("op_s"), host.pop("op_module")
        host.update(on_device)
    host.update(
        {
            "sync_s": sync_s,
            "cpu": platform.processor() or platform.machine(),
            "python": platform.python_version(),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
        }
    )
    return {
        "version": LEVELS_VERSION,
        "dtype": str(dtype).removeprefix("torch."),
        "timer": timer,
        "launch_timed": sorted(name for name, g in got.items() if g["timer"] == "launches") if cuda else [],
        "statistic": STATISTIC,
        "warmup": warmup,
        "repeats": rounds,
        "rounds": rounds,
        "gemm": gemm,
        "gemv": gemv,
        **resident,
        "attention": attention,
        "elementwise": elementwise,
        "copy": copy,
        "write": write,
        "write_op": "z.fill_(1) (numel x itemsize bytes written) at the add's sizes, interleaved with the other cases "
        "(timed as the add and the copy are: `tiers_single`)",
        "tiers_single": single,
        "fresh": fresh,
        "min_kernel_s": min_kernel,
        "min_kernel_op": min_kernel_op,
        **({"min_kernel_graph_s": min_kernel_graph, "min_kernel_graph_op": graph_op} if cuda else {}),
        "launch_rate_s": launch_rate,
        "gemm_fixed_s": gemm_fixed,
        "gemm_fixed_op": gemm_fixed_op,
        "conv_fixed_s": conv_fixed,
        "conv_fixed_op": conv_fixed_op,
        **({"wave_kernel_s": wave_kernel, "wave_kernel_op": wave_kernel_op} if cuda else {}),
        "multiprocessors": sms,
        "multiprocessors_op": sms_op,
        "host": host,
    }
