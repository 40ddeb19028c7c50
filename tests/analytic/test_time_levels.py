"""The kernel and eager levels on a small module whose kernel list is known by hand, and the kernel census of
the cost primitives against the ops a real TorchLens capture records."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from llm_perf_opt.analytic import costs as C
from llm_perf_opt.analytic import time_levels as TL
from llm_perf_opt.analytic.hardware import Roof
from llm_perf_opt.analytic.stage import CostNode
from llm_perf_opt.callgraph import op_families
from llm_perf_opt.errors import ConfigError

TOKENS, HIDDEN, OUT, B = 8, 64, 32, 4  # float32

ROOF = Roof("test", "test device", "measured", "float32", "float32", 1e9, 1e8, 1e9)


def _levels(gemm_rate: float, bw: float, dispatch: float, min_kernel: float = 0.0) -> dict:
    """A calibration's levels as measure.calibrate_levels writes them, with round figures."""
    return {
        "gemm": [{"m": 1, "n": 64, "k": 64, "flops_per_s": gemm_rate}, {"m": 64, "n": 64, "k": 64, "flops_per_s": gemm_rate}],
        "elementwise": {"small": {"bytes_per_s": bw}, "large": {"bytes_per_s": bw}},
        "copy": {"small": {"bytes_per_s": bw}, "large": {"bytes_per_s": bw}},
        "min_kernel_s": min_kernel, "timer": "test", "min_kernel_op": "test",
        "host": {"dispatch_s": dispatch, "sync_s": 0.0, "cpu": "test", "torch": "x", "threads": 1},
    }


def _block() -> CostNode:
    """linear (T x HIDDEN -> OUT, no bias), GELU over its output, LayerNorm: three kernels."""
    return CostNode(children=(
        ("fc", CostNode(C.linear(TOKENS, HIDDEN, OUT, bias=False, dtype_bytes=B))),
        ("act", CostNode(C.elementwise(TOKENS * OUT, "gelu", 1, B))),
        ("norm", CostNode(C.layer_norm(TOKENS, OUT, B))),
    ))


def test_kernel_list_by_hand():
    k = _block().total.kernels
    assert k.count == 3 and k.by_kind() == {"gemm": 1, "elementwise": 1, "reduction": 1}
    gemm = [key for key in k.counts if key[0] == "gemm"]
    assert gemm == [("gemm", TOKENS, 2 * TOKENS * HIDDEN * OUT, (HIDDEN * OUT + TOKENS * HIDDEN + TOKENS * OUT) * B,
                     TOKENS * OUT * B)]  # (kind, M, FLOPs, bytes read + written, result bytes)


def test_kernel_and_eager_levels_from_calibrated_figures():
    gemm_rate, bw, dispatch = 2e9, 1e9, 5e-6
    tm = TL.TimeModel(ROOF, TL.device_from_calibration(_levels(gemm_rate, bw, dispatch), "test", True, 1e8),
                      TL.host_from_calibration(_levels(gemm_rate, bw, dispatch)))
    pred = TL.LevelPredictor(tm)
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
    dev = TL.DeviceFigures("gpu", False, ((1, 1e12),), 1e12, 1e12, 1e12, min_kernel_s=1e-6, launch_s=1e-6, sync_s=2e-6)
    host = TL.HostFigures("host", 4e-6, "test")
    pred = TL.LevelPredictor(TL.TimeModel(ROOF, dev, host))
    # two tiny kernels then a sync, then one tiny kernel: each kernel 1 µs on the device, 5 µs on the host
    first = C.elementwise(4, "add", 2, B) + C.elementwise(4, "add", 2, B).with_kernels(
        C.elementwise(4, "add", 2, B).kernels, syncs=1)
    node = CostNode(children=(("a", CostNode(first)), ("b", CostNode(C.elementwise(4, "add", 2, B)))))
    lt = pred.levels([node], 0.0)
    assert lt.kernels == 3 and lt.syncs == 1 and lt.kernel_s == pytest.approx(3e-6)
    assert lt.eager_s == pytest.approx((2 * 5e-6 + 2e-6) + 5e-6)  # host-bound segments + the sync round trip
    assert lt.verdict == "host"


def test_missing_figures_make_levels_absent_not_zero():
    dev, missing = TL.device_from_datasheet(ROOF, None, None)
    assert dev is None and "min_kernel_us" in missing["kernel"]
    lt = TL.LevelPredictor(TL.TimeModel(ROOF, None, None, missing)).levels([_block()], 1.0)
    assert lt.kernel_s is None and lt.eager_s is None and lt.kernels == 3 and "kernel" in lt.to_dict()["missing"]
    with pytest.raises(ConfigError, match="time.level"):
        TL.check_level("fused")


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
