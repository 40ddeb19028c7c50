"""Verification mechanics on synthetic stages and measurements: pass, fail, containers, unmatched modules."""

from __future__ import annotations

import json
import math

import torch

from llm_perf_opt.analytic.costs import LayerCost
from llm_perf_opt.analytic.stage import CostNode, StageCost, leaf
from llm_perf_opt.measure.agreement import check_agreement, check_stage, relative_error, render_table
from llm_perf_opt.measure.flops import MeasuredFlops


def _measured(by_module: dict[str, int], no_formula=None, classes=None) -> MeasuredFlops:
    return MeasuredFlops(
        total=by_module[""],
        by_module=by_module,
        by_module_op={},
        by_op={},
        op_calls={},
        ops_without_formula=no_formula or {},
        extra_formulas=[],
        module_classes=classes or {},
    )


def _stage(qkv=300, sdpa=50, experts=(40, 60)) -> StageCost:
    mm = lambda n: leaf(LayerCost(flops_matmul=n))  # noqa: E731
    attn = CostNode(LayerCost(flops_matmul=sdpa), (("qkv", mm(qkv)),))
    moe = CostNode(children=(("experts", CostNode(LayerCost(flops_matmul=sum(experts)), container=True)),))
    layers = CostNode(children=(("0", CostNode(children=(("attn", attn), ("mlp", moe)))),), container=True)
    root = CostNode(children=(("model", CostNode(children=(("layers", layers),))), ("lm_head", mm(7))))
    return StageCost("prefill", root)


def _good_measurement() -> dict[str, int]:
    return {
        "": 457,
        "model": 450,
        "model.layers.0": 450,
        "model.layers.0.attn": 350,
        "model.layers.0.attn.qkv": 300,
        "model.layers.0.mlp": 100,
        "model.layers.0.mlp.experts.3": 40,
        "model.layers.0.mlp.experts.3.up_proj": 20,
        "model.layers.0.mlp.experts.5": 60,
        "lm_head": 7,
    }


def test_relative_error():
    assert relative_error(0, 0) == 0.0
    assert math.isinf(relative_error(1, 0))
    assert relative_error(1001, 1000) == 1e-3


def test_exact_match_passes_with_containers_summed():
    check = check_stage(_stage(), _measured(_good_measurement()))
    assert check.passed, [r for r in check.rows if not r.ok]
    rows = {r.part: r for r in check.rows}
    assert rows["model.layers"].measured == 450  # ModuleList: sum of its children
    assert rows["model.layers.0.mlp.experts"].measured == 100  # experts.3 + experts.5, not their children again
    assert rows[""].analytic == rows[""].measured == 457


def test_wrong_part_fails_and_is_rendered():
    v = check_agreement([(_stage(sdpa=51), _measured(_good_measurement()))])
    assert not v.passed
    failing = {r.part for r in v.failures}
    assert "model.layers.0.attn" in failing and "" in failing
    table = render_table(v)
    assert "FAIL" in table and "NO" in table
    data = v.to_dict()
    json.dumps(data)
    assert data["passed"] is False and data["n_failures"] == len(v.failures)


def test_tolerance_is_applied():
    m = _good_measurement()
    m[""] = 458  # 1 FLOP outside any module: 0.22% off
    assert not check_stage(_stage(), _measured(m), rtol=1e-3).passed
    assert check_stage(_stage(), _measured(m), rtol=3e-3).passed


def test_flops_in_unnamed_module_or_uncounted_matmul_fail():
    m = _good_measurement()
    m["model.layers.0.router_bias_mm"] = 0  # zero: fine
    m["model.layers.0.extra"] = 5  # FLOPs the analytic model does not know about
    check = check_stage(_stage(), _measured(m))
    assert check.unmatched_measured == {"model.layers.0.extra": 5}
    assert not check.passed
    check = check_stage(_stage(), _measured(_good_measurement(), {"aten.mv": 2, "aten.add": 9}))
    assert check.matmul_like_without_formula == {"aten.mv": 2}
    assert all(r.ok for r in check.rows) and not check.passed


def test_module_class_without_a_cost_formula_is_reported_and_fails():
    from torch import nn

    from llm_perf_opt.measure.flops import count_flops

    class MambaMixer(nn.Module):  # a class the cost registry has never heard of
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(4, 4)

        def forward(self, x):
            return self.proj(x)

    root = nn.Sequential(MambaMixer(), nn.Linear(4, 2))
    measured, _ = count_flops(lambda: root(torch.randn(3, 4)), root)
    assert measured.module_classes == {"Sequential": 1, "MambaMixer": 1, "Linear": 2}
    check = check_stage(_stage(), _measured(_good_measurement(), classes=measured.module_classes))
    assert check.unsupported_modules == {"MambaMixer": 1}
    assert all(r.ok for r in check.rows) and not check.passed
    v = check_agreement([(_stage(), _measured(_good_measurement(), classes=measured.module_classes))])
    assert v.to_dict()["stages"][0]["unsupported_modules"] == {"MambaMixer": 1}
    assert "WITHOUT an analytic cost formula" in render_table(v)
    covered = check_agreement([(_stage(), _measured(_good_measurement(), classes={"Linear": 2, "ModuleList": 1}))])
    assert covered.passed and "unsupported_modules" not in covered.to_dict()["stages"][0]
