"""`analytic.kernels_taken_off`: a stage with some paths' own kernels taken off (the MoE experts a routing left
idle)."""

from __future__ import annotations

import pytest

from llm_perf_opt.analytic.costs import Kernels, LayerCost
from llm_perf_opt.analytic.kernels_taken_off import kernels_taken_off
from llm_perf_opt.analytic.stage import CostNode, StageCost


def _stage() -> StageCost:
    # 4 identical experts (5 kernels each), shared by two layers as the stage shares identical blocks
    experts = CostNode(
        LayerCost(flops_matmul=100, kernels=Kernels.of("gemm", 10, 64, n=12) + Kernels.of("copy", 0, 8, n=8)),
        container=True,
    )
    gate = CostNode(LayerCost(kernels=Kernels.of("reduction", 0, 16, n=3)))
    mlp = CostNode(children=(("gate", gate), ("experts", experts)))
    layers = CostNode(children=(("0", CostNode(children=(("mlp", mlp),))), ("1", CostNode(children=(("mlp", mlp),)))))
    return StageCost("prefill", CostNode(children=(("layers", layers),)))


def test_the_named_path_loses_its_kernels_and_nothing_else():
    stage = _stage()
    out = kernels_taken_off(stage, {"layers.1.mlp.experts": 5})  # one of 4 experts idle: 20 -> 15 kernels
    assert out.parts["layers.1.mlp.experts"].kernels.count == 15
    assert out.parts["layers.1.mlp.experts"].kernels.by_kind() == {"gemm": 9, "copy": 6}
    assert out.parts["layers.0.mlp.experts"].kernels.count == 20  # the shared block elsewhere is untouched
    assert out.parts["layers.1.mlp.gate"].kernels.count == 3
    assert out.total.kernels.count == stage.total.kernels.count - 5
    assert out.total.flops == stage.total.flops  # FLOPs and bytes do not depend on the routing


def test_nothing_to_take_off_is_the_same_stage():
    stage = _stage()
    assert kernels_taken_off(stage, {}) is stage and kernels_taken_off(stage, {"layers.0.mlp.experts": 0}) is stage


def test_a_path_whose_kernels_are_not_its_own_or_too_few_is_refused():
    with pytest.raises(ValueError, match="only a path's own kernels"):
        kernels_taken_off(_stage(), {"layers.1.mlp": 5})  # the gate's kernels are a child's
    with pytest.raises(ValueError, match="lists 20"):
        kernels_taken_off(_stage(), {"layers.1.mlp.experts": 21})
