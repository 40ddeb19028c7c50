"""The kernel and eager levels on a small module whose kernel list is known by hand, and the kernel census of
the cost primitives against the ops a real TorchLens capture records."""

from __future__ import annotations

import copy
import json
import math

import pytest
import torch
from torch import nn

from llm_perf_opt.analytic import costs
from llm_perf_opt.analytic.stage import CostNode
from llm_perf_opt.analytic.time import figures
from llm_perf_opt.analytic.time.figures import (
    FRESH_BYTES,
    GEMV_ROWS,
    DeviceFigures,
    HostFigures,
    TimeModel,
    device_from_calibration,
    device_from_datasheet,
    gemm_curve,
    host_from_calibration,
    time_model_for,
)
from llm_perf_opt.analytic.time.hardware import Roof
from llm_perf_opt.analytic.time.kernel import kernel_time
from llm_perf_opt.analytic.time.levels import LevelPredictor
from llm_perf_opt.callgraph import op_families

TOKENS, HIDDEN, OUT, B = 8, 64, 32, 4  # float32

ROOF = Roof("test", "test device", "measured", "float32", "float32", 1e9, 1e8, 1e9)


def _levels(gemm_rate: float, bw: float, dispatch: float, min_kernel: float = 0.0) -> dict:
    """A calibration's levels as measure.calibrate_levels writes them, with round figures."""
    return {
        "gemm": [
            {"m": 1, "n": 64, "k": 64, "flops_per_s": gemm_rate},
            {"m": 64, "n": 64, "k": 64, "flops_per_s": gemm_rate},
        ],
        "elementwise": {"small": {"bytes_per_s": bw}, "large": {"bytes_per_s": bw}},
        "copy": {"small": {"bytes_per_s": bw}, "large": {"bytes_per_s": bw}},
        "min_kernel_s": min_kernel,
        "timer": "test",
        "min_kernel_op": "test",
        "host": {"dispatch_s": dispatch, "sync_s": 0.0, "cpu": "test", "torch": "x", "threads": 1},
    }


def _block() -> CostNode:
    """linear (T x HIDDEN -> OUT, no bias), GELU over its output, LayerNorm: three kernels."""
    return CostNode(
        children=(
            ("fc", CostNode(costs.linear(TOKENS, HIDDEN, OUT, bias=False, dtype_bytes=B))),
            ("act", CostNode(costs.elementwise(TOKENS * OUT, "gelu", 1, B))),
            ("norm", CostNode(costs.layer_norm(TOKENS, OUT, B))),
        )
    )


def test_kernel_list_by_hand():
    k = _block().total.kernels
    assert k.count == 3 and k.by_kind() == {"gemm": 1, "elementwise": 1, "reduction": 1}
    gemm = [key for key in k.counts if key[0] == "gemm"]
    assert gemm == [
        (
            "gemm",
            TOKENS,
            2 * TOKENS * HIDDEN * OUT,
            (HIDDEN * OUT + TOKENS * HIDDEN + TOKENS * OUT) * B,
            TOKENS * OUT * B,
        )
    ]  # (kind, M, FLOPs, bytes read + written, result bytes)


def test_kernel_and_eager_levels_from_calibrated_figures():
    gemm_rate, bw, dispatch = 2e9, 1e9, 5e-6
    tm = TimeModel(
        ROOF,
        device_from_calibration(_levels(gemm_rate, bw, dispatch), "test", True, 1e8),
        host_from_calibration(_levels(gemm_rate, bw, dispatch)),
    )
    pred = LevelPredictor(tm)
    lt = pred.levels([_block()], ideal_s=0.0)
    # by hand: the gemm max(2·T·H·O / rate, its bytes / bw); GELU max(5·T·O / 1e8, 2·T·O·B / bw);
    # LayerNorm max(7·T·O / 1e8, (2·T·O + 2·O)·B / bw)
    fc = max(2 * TOKENS * HIDDEN * OUT / gemm_rate, (HIDDEN * OUT + TOKENS * HIDDEN + TOKENS * OUT) * B / bw)
    act = max(5 * TOKENS * OUT / 1e8, 2 * TOKENS * OUT * B / bw)
    norm = max(7 * TOKENS * OUT / 1e8, (2 * TOKENS * OUT + 2 * OUT) * B / bw)
    assert lt.kernels == 3 and lt.kernel_s == pytest.approx(fc + act + norm)
    # CPU (synchronous): eager = kernel time + one dispatch per kernel
    assert lt.eager_s == pytest.approx(fc + act + norm + 3 * dispatch)
    assert lt.overhead_s == pytest.approx(3 * dispatch)


def test_async_device_overlaps_host_and_device_between_syncs():
    dev = DeviceFigures("gpu", False, ((1, 1e12),), 1e12, 1e12, 1e12, min_kernel_s=1e-6, launch_s=1e-6, sync_s=2e-6)
    host = HostFigures("host", 4e-6, "test")
    pred = LevelPredictor(TimeModel(ROOF, dev, host))
    # two tiny kernels then a sync, then one tiny kernel: each kernel 1 µs on the device, 5 µs on the host
    first = costs.elementwise(4, "add", 2, B) + costs.elementwise(4, "add", 2, B).with_kernels(
        costs.elementwise(4, "add", 2, B).kernels, syncs=1
    )
    node = CostNode(children=(("a", CostNode(first)), ("b", CostNode(costs.elementwise(4, "add", 2, B)))))
    lt = pred.levels([node], 0.0)
    assert lt.kernels == 3 and lt.syncs == 1 and lt.kernel_s == pytest.approx(3e-6)
    assert lt.eager_s == pytest.approx((2 * 5e-6 + 2e-6) + 5e-6)  # host-bound segments + the sync round trip
    assert lt.verdict == "host"


def test_a_host_figure_per_op_is_paid_once_per_op_its_inner_kernels_launched_with_it():
    dev = DeviceFigures("gpu", False, ((1, 1e12),), 1e12, 1e12, 1e12, min_kernel_s=1e-6, launch_s=1e-6, sync_s=2e-6)
    # a product with autocast's cast of its input inside it (an inner kernel), then an add: 3 kernels, 2 ops
    product = costs.LayerCost(kernels=costs.K("gemm", 2, 8, m=1) + costs.K("cast", 0, 4) + costs.K("elementwise", 1, 4))
    node = CostNode(product)
    per_kernel = LevelPredictor(TimeModel(ROOF, dev, HostFigures("host", 4e-6, "test"))).levels([node], 0.0)
    per_op = LevelPredictor(TimeModel(ROOF, dev, HostFigures("host", 4e-6, "test", per_op=True))).levels([node], 0.0)
    assert per_kernel.kernels == per_op.kernels == 3 and product.kernels.op_count == 2
    assert per_kernel.host_s == pytest.approx(3 * (4e-6 + 1e-6))  # the figure per kernel launched
    assert per_op.host_s == pytest.approx(2 * 4e-6 + 3 * 1e-6)  # per op the code calls; each launch call still paid
    assert per_op.eager_s == pytest.approx(per_op.host_s)  # host-bound
    # a synchronous device the same way
    cpu = DeviceFigures("cpu", True, ((1, 1e12),), 1e12, 1e12, 1e12, min_kernel_s=0.0)
    sync = LevelPredictor(TimeModel(ROOF, cpu, HostFigures("host", 4e-6, "test", per_op=True))).levels([node], 0.0)
    assert sync.host_s == pytest.approx(2 * 4e-6)


def test_missing_figures_make_levels_absent_not_zero():
    dev, missing = device_from_datasheet(ROOF, None, None)
    assert dev is None and "min_kernel_us" in missing["kernel"]
    lt = LevelPredictor(TimeModel(ROOF, None, None, missing)).levels([_block()], 1.0)
    assert lt.kernel_s is None and lt.eager_s is None and lt.kernels == 3 and "kernel" in lt.to_dict()["missing"]


def test_primitives_launch_what_torchlens_records():
    from llm_perf_opt.callgraph.capture import capture_callgraph

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc, self.act, self.norm = nn.Linear(HIDDEN, OUT, bias=False), nn.GELU(), nn.LayerNorm(OUT)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.norm(self.act(self.fc(x.view(TOKENS, HIDDEN))))  # the view launches nothing

    with torch.no_grad():
        cg = capture_callgraph(Block().eval(), forward_args=[torch.randn(TOKENS, HIDDEN)])
    measured = op_families.kernel_count(op_families.subtree_ops(cg.op_counts, ""))
    assert measured == _block().total.kernel_count == 3


def _levels_v2(rates: dict, bw: dict, copy_bw: dict, fresh_s_per_byte: float, op_s: float) -> dict:
    """A version 2 calibration as measure.calibrate_levels writes it: GEMM points by (M, K, N) with their x."""
    from llm_perf_opt.measure.calibrate_levels import flop_per_element

    return {
        "version": 2,
        "dtype": "float32",
        "timer": "test",
        "statistic": "test",
        "min_kernel_op": "test",
        "gemm": [
            {"m": m, "k": k, "n": n, "x": flop_per_element(m, k, n), "flops_per_s": r} for (m, k, n), r in rates.items()
        ],
        "elementwise": {t: {"bytes_per_s": v} for t, v in bw.items()},
        "copy": {t: {"bytes_per_s": v} for t, v in copy_bw.items()},
        "fresh": {"s_per_byte": fresh_s_per_byte, "min_bytes": FRESH_BYTES, "op": "test"},
        "min_kernel_s": 0.0,
        "host": {
            "dispatch_s": 1e-7,
            "op_s": op_s,
            "op_module": "test block",
            "sync_s": 0.0,
            "cpu": "t",
            "torch": "x",
            "threads": 1,
        },
    }


def test_version_2_figures_gemm_by_flops_per_element_tiers_fresh_pages_and_host_per_kernel():
    # GEMM points: a GEMV-like one (x = 2·1·64·64 / (64 + 4096 + 64)) and a square 64³ one (x = 2·64/3)
    gemv_x, square_x = 2 * 64 * 64 / (64 + 64 * 64 + 64), 2 * 64 / 3
    rates = {(1, 64, 64): 1e9, (64, 64, 64): 8e9}
    bw = {"small": 4e10, "medium": 2e10, "large": 1e10}
    copy_bw = {"small": 2e10, "medium": 1e10, "large": 5e9}
    lv = _levels_v2(rates, bw, copy_bw, fresh_s_per_byte=1e-9, op_s=4e-6)
    dev = device_from_calibration(lv, "cpu", True, 1e9)
    host = host_from_calibration(lv)
    assert dev.gemm_axis == "x" and host.dispatch_s == 4e-6  # the module forward's per-kernel cost, not the bare add
    # read at the calibrated points exactly, log-log between them, clamped outside
    assert dev.gemm_rate(gemv_x) == pytest.approx(1e9) and dev.gemm_rate(square_x) == pytest.approx(8e9)
    mid = (gemv_x * square_x) ** 0.5
    assert dev.gemm_rate(mid) == pytest.approx((1e9 * 8e9) ** 0.5)
    assert dev.gemm_rate(1e6) == pytest.approx(8e9)
    # the linear of the hand-made block: T x HIDDEN @ HIDDEN x OUT (no bias), x from its FLOPs and elements moved
    flops, nbytes = 2 * TOKENS * HIDDEN * OUT, (HIDDEN * OUT + TOKENS * HIDDEN + TOKENS * OUT) * B
    x = flops / (nbytes / B)
    t, bound = kernel_time(dev, "gemm", TOKENS, flops, nbytes, TOKENS * OUT * B)
    # an 8-row product: halfway in log M between the 1-row (1 GFLOP/s) and the 64-row (8 GFLOP/s) curves
    assert dev.row_rate(TOKENS, x) == pytest.approx((1e9 * 8e9) ** 0.5)
    assert t == pytest.approx(max(flops / (1e9 * 8e9) ** 0.5, nbytes / bw["small"])) and bound in ("compute", "memory")
    # bandwidth tiers: small up to 1 MiB, medium up to 32 MiB, large above; layout copies their own figures
    assert kernel_time(dev, "elementwise", 0, 0, 1 << 20)[0] == pytest.approx((1 << 20) / bw["small"])
    assert kernel_time(dev, "elementwise", 0, 0, 1 << 24)[0] == pytest.approx((1 << 24) / bw["medium"])
    assert kernel_time(dev, "copy", 0, 0, 1 << 24)[0] == pytest.approx((1 << 24) / copy_bw["medium"])
    # a result above the mmap threshold pays its fresh pages, a stated one or the kind's share of the bytes
    big = 3 * (64 << 20)  # an add of two 64 MiB tensors into a fresh 64 MiB result
    t, _ = kernel_time(dev, "elementwise", 0, 0, big, 64 << 20)
    assert t == pytest.approx(big / bw["large"] + (64 << 20) * 1e-9)
    t, _ = kernel_time(dev, "elementwise", 0, 0, big)  # not stated: half the bytes (OUT_SHARE)
    assert t == pytest.approx(big / bw["large"] + big // 2 * 1e-9)
    assert kernel_time(dev, "elementwise", 0, 0, 3 * (8 << 20), 8 << 20)[0] == pytest.approx(
        3 * (8 << 20) / bw["medium"]
    )
    # the eager level of the block: kernels + one per-kernel host cost each (CPU: serial)
    lt = LevelPredictor(TimeModel(ROOF, dev, host)).levels([_block()], 0.0)
    assert lt.eager_s == pytest.approx(lt.kernel_s + 3 * 4e-6)


def test_version_4_figures_streaming_gemv_attention_curve_and_fresh_pages_serial_with_compute():
    from llm_perf_opt.measure.calibrate_levels import attention_work

    rates = {(1, 64, 64): 2e10, (64, 64, 64): 8e10}
    bw = {"small": 4e10, "medium": 2e10, "large": 1e10}
    lv = _levels_v2(rates, bw, bw, fresh_s_per_byte=1e-9, op_s=4e-6)
    # a 1 x 2048 @ 2048 x 16384 float32 GEMV streamed at 5 GB/s; two attention points (x, FLOP/s)
    k, n = 2048, 16384
    lv.update(version=4, gemv={"m": 1, "k": k, "n": n, "bytes_per_s": 5e9, "op": "test gemv"})
    f_small, b_small = attention_work(16, 2, 196, 64, True, 4)
    f_big, b_big = attention_work(1, 1, 4096, 64, False, 4)
    x_small, x_big = f_small / (b_small / 4), f_big / (b_big / 4)
    lv["attention"] = [{"x": x_small, "flops_per_s": 2e9}, {"x": x_big, "flops_per_s": 6e9}]
    dev = device_from_calibration(lv, "cpu", True, 1e9)
    assert dev.gemm_bw_large == 5e9 and dev.attention == ((round(x_small, 6), 2e9), (round(x_big, 6), 6e9))
    # a decode GEMV over 64 MiB of weights (above the mmap threshold): its bytes at the streaming GEMV's bandwidth
    w = 64 << 20
    flops = 2 * (w // 4)
    t, bound = kernel_time(dev, "gemm", 1, flops, w + 8, 4)
    assert bound == "memory" and t == pytest.approx(max(flops / dev.gemm_rate(flops / ((w + 8) / 4)), (w + 8) / 5e9))
    # elementwise kernels of that size keep the large-add bandwidth (their result, half the bytes, is 32 MiB: at
    # the mmap threshold, not above it: no fresh pages)
    assert kernel_time(dev, "elementwise", 0, 0, w)[0] == pytest.approx(w / bw["large"])
    # attention kernels read their own curve (at its points exactly), not the GEMM one
    t, _ = kernel_time(dev, "attention", 196, f_small, b_small, 0)
    assert t == pytest.approx(max(f_small / 2e9, b_small / dev.bandwidth("attention", b_small)), rel=1e-6)
    t, _ = kernel_time(dev, "gemm", 196, f_small, b_small, 0)
    assert t == pytest.approx(max(f_small / dev.gemm_rate(x_small), b_small / dev.bandwidth("gemm", b_small)))
    # a compute-bound GEMM writing a fresh 128 MiB result: its threads fault the pages, after computing
    out = 128 << 20
    gm, gk, gn = 2048, 4096, out // 4 // 2048
    flops, nbytes = 2 * gm * gk * gn, (gm * gk + gk * gn + gm * gn) * 4
    compute = flops / dev.gemm_rate(flops / (nbytes / 4))
    t, bound = kernel_time(dev, "gemm", gm, flops, nbytes, out)
    assert compute > nbytes / dev.bandwidth("gemm", nbytes)
    assert t == pytest.approx(compute + out * 1e-9)


def test_version_8_writes_at_the_write_bandwidth_and_a_products_large_result_is_written_back_serially():
    """The add and the fill of each size split a kernel's bytes: its result at the fill's bandwidth, its inputs at
    what the add leaves for them. An add costs what the calibrated add took; a kernel that mostly writes costs more
    per byte, one that mostly reads less. On the CPU a matrix product's result beyond the cache is written back
    after its work; a device that is not synchronous, or a calibration without a fill, keeps one bandwidth."""
    rates = {(1, 64, 64): 1e9, (64, 64, 64): 8e9}
    bw = {"small": 6e10, "medium": 1.5e10, "large": 1.4e10}
    lv = _levels_v2(rates, bw, bw, fresh_s_per_byte=0.0, op_s=4e-6)
    numel = {"small": 1 << 16, "medium": 1 << 21, "large": 1 << 25}
    write = {"small": 4e10, "medium": 8e9, "large": 8e9}
    for tier, n in numel.items():
        lv["elementwise"][tier].update(numel=n, bytes=3 * n * 4, seconds=3 * n * 4 / bw[tier])
    lv.update(
        version=8,
        write={
            t: {"numel": n, "bytes": n * 4, "bytes_per_s": write[t], "seconds": n * 4 / write[t]}
            for t, n in numel.items()
        },
    )
    dev = device_from_calibration(lv, "cpu", True, 1e12)
    assert dev.write_bw == (4e10, 8e9, 8e9)
    # medium: the add's 8 MiB result took 8 MiB / 8 GB/s of its 24 MiB / 15 GB/s; its 16 MiB of inputs the rest
    b = numel["medium"] * 4
    read = 2 * b / (3 * b / 1.5e10 - b / 8e9)
    assert dev.read_bw[1] == pytest.approx(read)
    add = kernel_time(dev, "elementwise", 0, 0, 3 * b, b)[0]
    assert add == pytest.approx(3 * b / 1.5e10)  # the calibrated add, by construction
    bias = kernel_time(dev, "elementwise", 0, 0, b + b // 16, b)[0]  # 8 MiB written from 0.5 MiB read
    assert bias == pytest.approx(b / 8e9 + (b // 16) / read) and bias > (b + b // 16) / 1.5e10
    mean = kernel_time(dev, "reduction", 0, 0, b + 4, 4)[0]  # reads 8 MiB, writes 4 bytes
    assert mean == pytest.approx(b / read + 4 / 8e9) and mean < (b + 4) / 1.5e10
    layout = kernel_time(dev, "copy", 0, 0, 2 * b, b)[0]  # a layout copy keeps its own figure
    assert layout == pytest.approx(2 * b / 1.5e10)
    # a GEMM whose 4 MiB result leaves the cache: its work, then the result at the write bandwidth
    m, k, n = 1024, 64, 1024
    flops, nbytes, out = 2 * m * k * n, (m * k + k * n + m * n) * 4, m * n * 4
    t, _ = kernel_time(dev, "gemm", m, flops, nbytes, out)
    assert t == pytest.approx(
        max(flops / dev.row_rate(m, flops / (nbytes / 4)), nbytes / dev.bandwidth("gemm", nbytes)) + out / 8e9
    )
    small = kernel_time(dev, "gemm", 64, 2 * 64 * 64 * 64, 3 * 64 * 64 * 4, 64 * 64 * 4)[0]
    assert small == pytest.approx(max(2 * 64**3 / dev.row_rate(64, 128 / 3), 3 * 64 * 64 * 4 / 6e10))  # in cache
    # not the CPU, or a fill slower than the add (no time left for the reads: noise): one bandwidth per tier
    gpu = device_from_calibration(lv, "gpu", False, 1e12)
    assert gpu.read_bw is None and gpu.write_bw is None and gpu.writeback_s("gemm", out) == 0.0
    noisy = copy.deepcopy(lv)
    noisy["write"]["large"]["bytes_per_s"] = 3e9  # its 128 MiB fill longer than the add of 384 MiB moved
    assert device_from_calibration(noisy, "cpu", True, 1e12).write_bw is None


def test_an_async_devices_gemm_adds_its_fixed_device_time_to_its_work():
    rates = {(1, 64, 64): 2e10, (64, 64, 64): 8e10}
    bw = {"small": 4e10, "medium": 2e10, "large": 1e10}
    lv = dict(_levels_v2(rates, bw, bw, fresh_s_per_byte=0.0, op_s=4e-6), version=6, min_kernel_s=1.5e-6)
    plain = device_from_calibration(lv, "gpu", False, 1e9)
    fixed = device_from_calibration(dict(lv, gemm_fixed_s=2.2e-6, gemm_fixed_op="test"), "gpu", False, 1e9)
    cpu = device_from_calibration(dict(lv, gemm_fixed_s=2.2e-6, gemm_fixed_op="test"), "cpu", True, 1e9)
    assert (plain.gemm_fixed_s, fixed.gemm_fixed_s, cpu.gemm_fixed_s) == (0.0, 2.2e-6, 0.0)  # the CPU: none
    assert fixed.sources["gemm_fixed"] == "test" and "gemm_fixed" not in plain.sources
    # a tiny product: its work is under the min kernel time; the fixed time + its work, bound "launch"
    tiny = costs.linear(4, 16, 16, bias=False, dtype_bytes=B).kernels
    (key,) = tiny.counts
    work, _ = kernel_time(plain, *key)
    assert work == plain.min_kernel_s
    t, bound = kernel_time(fixed, *key)
    raw, _ = kernel_time(device_from_calibration(dict(lv, min_kernel_s=0.0), "gpu", False, 1e9), *key)  # its work
    assert t == pytest.approx(2.2e-6 + raw) and bound == "launch" and raw < 2.2e-6
    # a large product: the fixed time is added to its work, which keeps its bound
    big = costs.linear(4096, 1024, 1024, bias=False, dtype_bytes=B).kernels
    (key,) = big.counts
    (w, wb), (t, tb) = kernel_time(plain, *key), kernel_time(fixed, *key)
    assert t == pytest.approx(w + 2.2e-6) and tb == wb == "compute"
    # other kinds and the CPU are not touched
    ew = ("elementwise", 0, 0, 1 << 20, 0)
    assert kernel_time(fixed, *ew) == kernel_time(plain, *ew)
    assert kernel_time(cpu, *key) == kernel_time(device_from_calibration(lv, "cpu", True, 1e9), *key)


def test_an_async_devices_convolution_adds_its_fixed_call_time_to_its_work():
    rates = {(1, 64, 64): 2e10, (64, 64, 64): 8e10}
    bw = {"small": 4e10, "medium": 2e10, "large": 1e10}
    lv = dict(_levels_v2(rates, bw, bw, fresh_s_per_byte=0.0, op_s=4e-6), version=7, min_kernel_s=1.1e-6)
    plain = device_from_calibration(lv, "gpu", False, 1e9)
    fixed = device_from_calibration(dict(lv, conv_fixed_s=9e-6, conv_fixed_op="test"), "gpu", False, 1e9)
    cpu = device_from_calibration(dict(lv, conv_fixed_s=9e-6, conv_fixed_op="test"), "cpu", True, 1e9)
    assert (plain.conv_fixed_s, fixed.conv_fixed_s, cpu.conv_fixed_s) == (0.0, 9e-6, 0.0)  # the CPU: none
    assert (
        fixed.sources["conv_fixed"] == "test" and "conv_fixed" not in plain.sources and "conv_fixed" not in cpu.sources
    )
    # a convolution on a tiny map: its work under the min kernel time; the call's fixed time + its work
    key = ("conv", 4, 2 * 4 * 8 * 8, 2 * (8 * 4 + 8 * 8 + 8 * 4), 2 * 8 * 4)  # 4 pixels, 8 -> 8 channels, 1 x 1
    raw, _ = kernel_time(device_from_calibration(dict(lv, min_kernel_s=0.0), "gpu", False, 1e9), *key)
    assert kernel_time(plain, *key) == (1.1e-6, "launch") and raw < 1.1e-6
    t, bound = kernel_time(fixed, *key)
    assert t == pytest.approx(9e-6 + raw) and bound == "launch"
    # a large one: the fixed time on top of its work, which keeps its bound
    big = ("conv", 1 << 16, 1 << 36, 1 << 24, 1 << 22)
    (w, wb), (t, tb) = kernel_time(plain, *big), kernel_time(fixed, *big)
    assert t == pytest.approx(w + 9e-6) and tb == wb == "compute"
    # GEMMs and the CPU are not touched
    (g,) = costs.linear(4, 16, 16, bias=False, dtype_bytes=B).kernels.counts
    assert kernel_time(fixed, *g) == kernel_time(plain, *g)
    assert kernel_time(cpu, *key) == kernel_time(device_from_calibration(lv, "cpu", True, 1e9), *key)


def test_an_async_devices_small_kernel_of_more_than_one_block_costs_its_kinds_one_wave_time():
    from llm_perf_opt.analytic.time.kernel import WAVE_ELEMENTS

    rates = {(1, 64, 64): 2e10, (64, 64, 64): 8e10}
    bw = {"small": 4e10, "medium": 2e10, "large": 1e10}
    lv = dict(_levels_v2(rates, bw, bw, fresh_s_per_byte=0.0, op_s=4e-6), version=7, min_kernel_s=1e-6)
    wave = {"elementwise": 1.4e-6, "copy": 2.7e-6, "cast": 1.1e-6, "reduction": 3.5e-6}
    ops = {k: f"test {k}" for k in wave}
    plain = device_from_calibration(lv, "gpu", False, 1e9)
    dev = device_from_calibration(dict(lv, wave_kernel_s=wave, wave_kernel_op=ops), "gpu", False, 1e9)
    cpu = device_from_calibration(dict(lv, wave_kernel_s=wave, wave_kernel_op=ops), "cpu", True, 1e9)
    assert dict(dev.wave_kernel) == wave and not plain.wave_kernel and not cpu.wave_kernel  # the CPU: none
    assert dev.sources["wave_kernel.copy"] == "test copy" and not any(k.startswith("wave") for k in plain.sources)
    item = dev.itemsize
    for kind in ("elementwise", "copy", "relayout", "cast", "reduction"):
        figure = wave["copy" if kind == "relayout" else kind]
        # one block's result (a decode step's kernels): the min kernel time, as before
        block = (kind, 0, 0, 2 * WAVE_ELEMENTS * item, WAVE_ELEMENTS * item)
        assert kernel_time(dev, *block) == kernel_time(plain, *block) == (1e-6, "launch")
        # more than one block, little work: the kind's one-wave time, not the shortest kernel's
        wave_key = (kind, 0, 0, 8 * WAVE_ELEMENTS * item, 4 * WAVE_ELEMENTS * item)
        assert kernel_time(plain, *wave_key) == (1e-6, "launch")
        assert kernel_time(dev, *wave_key) == (figure, "launch")
        # without a stated result the kind's share of its bytes is the result (`OUT_SHARE`)
        assert kernel_time(dev, kind, 0, 0, 8 * WAVE_ELEMENTS * item)[0] == figure
        # a kernel whose work takes longer: its work, whatever the figure
        big = (kind, 0, 0, 1 << 30, 1 << 29)
        assert kernel_time(dev, *big) == kernel_time(plain, *big) and kernel_time(dev, *big)[0] > figure
    # a widening cast (an autocast float32 op's bfloat16 input: result twice its input) runs the casting copy: the copy
    # kind's one-wave time; a narrowing one the cast's
    n = 4 * WAVE_ELEMENTS
    assert kernel_time(dev, "cast", 0, 0, 6 * n, 4 * n) == (wave["copy"], "launch")  # bf16 in, float32 out
    assert kernel_time(dev, "cast", 0, 0, 6 * n, 2 * n) == (wave["cast"], "launch")  # float32 in, bf16 out
    assert kernel_time(dev, "cast", 0, 0, 6 * n)[0] == wave["cast"]  # no stated result: its kind's
    # other kinds and the CPU are not touched
    g = costs.linear(64, 1024, 1024, bias=False, dtype_bytes=B).kernels
    (key,) = g.counts
    assert kernel_time(dev, *key) == kernel_time(plain, *key)
    ew = ("elementwise", 0, 0, 1 << 16, 1 << 15)
    assert kernel_time(cpu, *ew) == kernel_time(device_from_calibration(lv, "cpu", True, 1e9), *ew)


def test_a_fused_attention_runs_at_its_occupancy_of_the_multiprocessors():
    from llm_perf_opt.analytic.time.figures import attention_at_full_occupancy, occupancy
    from llm_perf_opt.measure.calibrate_levels import attention_work

    assert (occupancy(33, 132), occupancy(264, 132), occupancy(0.5, 132), occupancy(5, 0)) == (0.25, 1.0, 1 / 132, 1)
    rates = {(1, 64, 64): 2e10, (64, 64, 64): 8e10}
    bw = {"small": 1e16, "medium": 1e16, "large": 1e16}  # compute-bound: the rates alone
    lv = dict(_levels_v2(rates, bw, bw, fresh_s_per_byte=0.0, op_s=4e-6), version=6, min_kernel_s=1e-9)
    # two calibrated points: 16 windows x 2 heads of 196 tokens (4 tiles each: 128 of 132 multiprocessors) and one
    # head of 2048 tokens (32 tiles)
    f1, b1 = attention_work(16, 2, 196, 64, True, 4)
    f2, b2 = attention_work(1, 1, 2048, 64, False, 4)
    x1, x2 = f1 / (b1 / 4), f2 / (b2 / 4)
    points = [
        {"batch": 16, "heads": 2, "tokens": 196, "x": x1, "flops_per_s": 1e12},
        {"batch": 1, "heads": 1, "tokens": 2048, "x": x2, "flops_per_s": 2e12},
    ]
    assert attention_at_full_occupancy(points, 132) == (
        (round(x1, 6), 1e12 * 132 / 128),
        (round(x2, 6), 2e12 * 132 / 32),
    )
    assert attention_at_full_occupancy(points, 0) == () and attention_at_full_occupancy([{"x": 1.0}], 132) == ()
    dev = device_from_calibration(dict(lv, attention=points, multiprocessors=132), "gpu", False, 1e15)
    flat = device_from_calibration(dict(lv, attention=points), "gpu", False, 1e15)  # no multiprocessors: as calibrated
    assert (dev.multiprocessors, flat.multiprocessors, flat.attention_full) == (132, 0, ())
    # SAM's windows on the device: the calibrated point's shape runs at its calibrated rate; 9 windows x 12 heads
    # (432 tiles) fill the device; 1 window x 1 head (4 tiles) 4 of its multiprocessors
    for bh, rate in ((32, 1e12), (108, 1e12 * 132 / 128), (1, 1e12 * 132 / 128 * 4 / 132)):
        kernels = costs.sdpa(bh, 1, 196, 196, 64, mask=True, fused=True, dtype_bytes=4, backend="cudnn").kernels
        ((key, _),) = [(k, n) for k, n in kernels.counts.items() if k[0] == "attention"]
        t, bound = kernel_time(dev, *key)
        assert bound == "compute" and t == pytest.approx(key[2] / rate, rel=1e-9), bh
        assert kernel_time(flat, *key)[0] == pytest.approx(key[2] / 1e12, rel=1e-9)  # one rate for every size
    # the CPU's fused kernel (m: the query length) and a synchronous device: no occupancy
    cpu = device_from_calibration(dict(lv, attention=points, multiprocessors=132), "cpu", True, 1e15)
    assert (cpu.multiprocessors, cpu.attention_full) == (0, ())


def test_gemm_curve_leaves_out_fixed_cost_samples_and_never_falls_with_x():
    # (x, FLOP/s, seconds): the two fastest calls (10 and 20 us, under 3 x 10 us) measure the call's fixed cost
    grid = [
        {"x": 2.0, "flops_per_s": 1e9, "seconds": 10e-6},
        {"x": 30.0, "flops_per_s": 2e9, "seconds": 20e-6},
        {"x": 2.0, "flops_per_s": 5e9, "seconds": 80e-6},
        {"x": 8.0, "flops_per_s": 2e10, "seconds": 60e-6},
        {"x": 16.0, "flops_per_s": 1e10, "seconds": 500e-6},
        {"x": 64.0, "flops_per_s": 4e10, "seconds": 1e-3},
    ]
    curve, dropped = gemm_curve(grid)
    assert dropped == 2
    # the faster of the points at x = 2 kept; 16 lifted to 8's rate (running maximum); 30 left out
    assert curve == ((2.0, 5e9), (8.0, 2e10), (16.0, 2e10), (64.0, 4e10))


def test_a_decode_gemv_above_the_cache_tier_streams_its_weights():
    rates = {(1, 64, 64): 2e10, (64, 64, 64): 8e10}
    bw = {"small": 4e10, "medium": 2e10, "large": 1e10}
    lv = dict(
        _levels_v2(rates, bw, bw, fresh_s_per_byte=0.0, op_s=4e-6),
        version=4,
        gemv={"bytes_per_s": 5e9, "op": "test gemv"},
    )
    dev = device_from_calibration(lv, "cpu", True, 1e9)
    w = 4 << 20  # a 4 MiB weight matrix: the medium tier by size
    assert dev.bandwidth("gemm", w, m=1) == dev.bandwidth("gemm", w, m=GEMV_ROWS) == 5e9  # streamed
    assert dev.bandwidth("gemm", w, m=GEMV_ROWS + 1) == bw["medium"]  # a prefill product: the tier's
    assert dev.bandwidth("gemm", 1 << 19, m=1) == bw["small"]  # cache-resident
    assert dev.bandwidth("elementwise", w) == bw["medium"]


def test_a_decode_step_the_last_level_cache_holds_reads_its_weights_at_the_cached_gemv_rate():
    """A CPU calibration with `gemv_cached` and `llc`: a decode step moving no more than `llc` bytes (the tiny twin's:
    its 33 MB lm_head) reads the weights its GEMVs would stream from memory at the cached rate, the step before having
    left them in the cache; a larger step, a prefill, a device without the figures: the streaming rate."""
    from llm_perf_opt.analytic.stage import StageCost
    from llm_perf_opt.analytic.time.ideal import predict
    from llm_perf_opt.analytic.time.levels import stage_levels

    rates = {(1, 64, 64): 2e10, (64, 64, 64): 8e10}
    bw = {"small": 4e10, "medium": 2e10, "large": 1e10}
    base = dict(_levels_v2(rates, bw, bw, fresh_s_per_byte=0.0, op_s=4e-6), version=8, gemv={"bytes_per_s": 5e9})
    figures_ = {"gemv_cached": {"bytes_per_s": 2e10, "op": "test cached"}, "llc": {"bytes": 64 << 20, "op": "test"}}

    def lm_head(out_features: int) -> CostNode:  # a decode step's GEMV above the cache tier
        return CostNode(children=(("lm_head", CostNode(costs.linear(1, 64, out_features, bias=False, dtype_bytes=4))),))

    small, big = lm_head(129280), lm_head(4 * 129280)  # 33 MB, 132 MB of weights
    cpu = time_model_for(ROOF, calibration_levels={"float32": {**base, **figures_}}, synchronous=True)
    assert cpu.device.gemv_cached_bw == 2e10 and cpu.device.llc_bytes == 64 << 20
    assert "test cached" in cpu.device.sources["gemv_cached"]
    plain = time_model_for(ROOF, calibration_levels={"float32": base}, synchronous=True)
    cuda = time_model_for(ROOF, calibration_levels={"float32": {**base, **figures_}}, synchronous=False)
    assert plain.device.llc_bytes == 0 and cuda.device.gemv_cached_bw is None  # not calibrated / not the CPU

    def kernel_s(model: TimeModel, name: str, root: CostNode) -> float:
        stage = StageCost(name, root)
        return stage_levels(stage, LevelPredictor(model), predict(stage, ROOF))[""].kernel_s

    nbytes = small.total.io_bytes
    assert nbytes > FRESH_BYTES and cpu.device.holds(nbytes) and not cpu.device.holds(big.total.io_bytes)
    assert kernel_s(cpu, "decode", small) == pytest.approx(nbytes / 2e10)  # from the cache
    for model, name, root in ((cpu, "prefill", small), (plain, "decode", small), (cuda, "decode", small)):
        assert kernel_s(model, name, root) == pytest.approx(nbytes / 5e9), (name, model.device.label)  # streamed
    assert kernel_s(cpu, "decode", big) == pytest.approx(big.total.io_bytes / 5e9)
    # the resident figures scale with the device (a faster device of this kind)
    assert cpu.device.scaled(bandwidth=2.0).gemv_cached_bw == 4e10
    assert cpu.device.resident().gemm_bw_large == 2e10 and plain.device.resident() is plain.device


def test_a_product_of_a_few_rows_streams_its_weights_at_its_row_counts_share():
    """A CPU calibration with `gemv_rows`: a GEMV-like product of m <= GEMV_ROWS rows above the cache tier reads its
    weights at the streaming GEMV's rate times the share of its row count and its weight's shorter side K (log-log
    in m and in K between the calibrated ones, the nearest beyond), the resident step at the cached GEMV's rate times
    the cached share; a prefill's product, a product in the cache tier, a device without the figure: as before. The
    kernel level finds K from a linear's FLOPs and stated result (`weight_side`)."""
    from llm_perf_opt.analytic.time.kernel import kernel_time, weight_side

    bw = {"small": 4e10, "medium": 2e10, "large": 1e10}
    shares = {  # (k, m): (share, cached share)
        (64, 1): (0.5, 0.8),
        (64, 4): (0.4, 0.6),
        (2048, 1): (1.0, 1.0),
        (2048, 2): (0.9, 1.0),
        (2048, 4): (0.5, 0.4),
        (2048, 8): (0.3, 0.25),
    }
    rows = {
        "rows": [{"k": k, "m": m, "share": a, "cached_share": c} for (k, m), (a, c) in shares.items()],
        "op": "test rows",
    }
    lv = dict(
        _levels_v2({(1, 64, 64): 2e10, (64, 64, 64): 8e10}, bw, bw, fresh_s_per_byte=0.0, op_s=4e-6),
        version=8,
        gemv={"bytes_per_s": 5e9},
        gemv_cached={"bytes_per_s": 2e10},
        llc={"bytes": 64 << 20},
        gemv_rows=rows,
    )
    dev = device_from_calibration(lv, "cpu", True, 1e9)
    assert dev.gemv_rows == ((64, ((1, 0.5), (4, 0.4))), (2048, ((1, 1.0), (2, 0.9), (4, 0.5), (8, 0.3))))
    assert "test rows" in dev.sources["gemv_rows"]
    w = 4 << 20  # the medium tier by size: GEMV-like at up to GEMV_ROWS rows
    assert dev.bandwidth("gemm", w, m=1) == dev.bandwidth("gemm", w, m=1, k=4096) == 5e9  # K unknown / beyond
    assert dev.bandwidth("gemm", w, m=4, k=2048) == pytest.approx(5e9 * 0.5)

    def log_between(a: float, b: float, f: float) -> float:
        return a * (b / a) ** f

    assert dev.bandwidth("gemm", w, m=3, k=2048) == pytest.approx(5e9 * log_between(0.9, 0.5, math.log2(1.5)))
    assert dev.bandwidth("gemm", w, m=GEMV_ROWS, k=2048) == pytest.approx(5e9 * 0.3)  # beyond the last: its share
    assert dev.bandwidth("gemm", w, m=4, k=32) == pytest.approx(5e9 * 0.4)  # below the smallest K: its share
    at_64 = log_between(0.5, 0.4, 0.5)  # K = 64 at m = 2: log-log between its rows 1 and 4
    assert dev.bandwidth("gemm", w, m=2, k=256) == pytest.approx(
        5e9 * log_between(at_64, 0.9, math.log(4) / math.log(32))
    )
    assert dev.bandwidth("gemm", w, m=GEMV_ROWS + 1, k=64) == bw["medium"]  # a prefill product: the tier's
    assert dev.bandwidth("gemm", 1 << 19, m=4, k=64) == bw["small"]  # cache-resident
    resident = dev.resident()
    assert resident.bandwidth("gemm", w, m=4, k=2048) == pytest.approx(2e10 * 0.4)
    assert resident.bandwidth("gemm", w, m=1, k=64) == pytest.approx(2e10 * 0.8)
    assert dev.scaled(bandwidth=2.0).bandwidth("gemm", w, m=4, k=2048) == pytest.approx(2 * 5e9 * 0.5)
    # the kernel level: the tiny twin's lm_head at batch 4, (4 x 64) @ (64 x 129280), K from its FLOPs and result
    (key,) = costs.linear(4, 64, 129280, bias=False, dtype_bytes=4).kernels.counts
    _, m, flops, nbytes, out = key
    assert weight_side(m, flops, out, 4) == pytest.approx(64)
    compute = flops / dev.row_rate(4, flops / (nbytes / 4))
    expected = max(compute, nbytes / (5e9 * 0.4)) + dev.writeback_s("gemm", out)
    assert kernel_time(dev, *key)[0] == pytest.approx(expected)
    lv.pop("gemv_rows")
    assert device_from_calibration(lv, "cpu", True, 1e9).bandwidth("gemm", w, m=4, k=64) == 5e9  # not calibrated
    assert device_from_calibration({**lv, "gemv_rows": rows}, "cuda", False, 1e9).gemv_rows == ()  # the CPU's only


def test_calibration_without_the_dtype_or_a_datasheet_without_figures_makes_levels_absent_with_the_field():
    tm = time_model_for(
        Roof("t", "t", "measured", "bfloat16", "bfloat16", 1e9, 1e8, 1e9), None, {"float32": _levels(1e9, 1e9, 1e-6)}
    )
    assert tm.device is None and "bfloat16" in tm.missing["kernel"] and "bfloat16" in tm.missing["eager"]
    lt = LevelPredictor(tm).levels([_block()], 1.0)
    assert lt.kernel_s is None and lt.eager_s is None and lt.ideal_s == 1.0

    class Sheet:  # a datasheet with a minimum kernel time and no launch_us
        min_kernel_us = type("F", (), {"value": 2.0})()

    fast = Roof("t", "t", "datasheet", "float32", "float32", 1e18, 1e18, 1e18)  # every kernel below the floor
    tm = time_model_for(fast, Sheet(), None, cache_dir="/nonexistent")
    assert tm.device is not None and tm.device.min_kernel_s == pytest.approx(2e-6)
    assert "launch_us" in tm.missing["eager"]
    assert LevelPredictor(tm).levels([_block()], 1.0).kernel_s == pytest.approx(3 * 2e-6)  # each at the floor


def _cache_file(path, version: int, op_s: float) -> None:
    host = {
        "name": "a CPU",
        "torch": "2.x",
        "threads": 2,
        "op_s": op_s,
        "op_module": "a module forward",
        "dispatch_s": 1e-6,
    }
    data = {"device": "cpu", "levels": {"float32": {"version": version, "host": host}}}
    path.write_text(json.dumps({"schema": "calibration", "schema_version": 1, "data": data}))


def test_a_cached_calibration_older_than_one_thread_host_figures_is_not_used(tmp_path):
    """A CPU cache of kernel-level version < 7 timed the host figures on all threads (a loaded host read the wait
    for the second thread into every op: 5.8 ms): the eager level never takes it, and says which file and why;
    a version-7 file beside it is taken."""
    _cache_file(tmp_path / "old.json", 5, 5.8e-3)
    host, why = figures.host_from_cache(tmp_path)
    assert host is None and "old.json (version 5)" in why and "./dev calibrate" in why
    _cache_file(tmp_path / "new.json", figures.HOST_FIGURES_SINCE, 9.8e-6)
    host, why = figures.host_from_cache(tmp_path)
    assert why == "" and host.dispatch_s == 9.8e-6
