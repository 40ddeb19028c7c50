"""`model_runtime.random_weights`: one seeding rule for the twin and the vendor fill; every seed its own weights."""

from __future__ import annotations

import torch
from torch import nn

from llm_perf_opt.deepseek_ocr_shared.twin.weights import INIT_STD
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.dsocr.twin import build_twin
from llm_perf_opt.model_runtime.random_weights import (
    linear_weights_on_meta,
    materialise_meta_parameters,
    param_seed,
    seeded_normal_,
)


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(10, 4, padding_idx=0)
        self.proj = nn.Linear(4, 4)
        self.head = nn.Linear(4, 10, bias=False)
        self.head.weight = self.embed.weight  # tied: filled once, stays shared


def vendor_style(seed: int) -> Small:
    """Built the way the vendor model is built without a checkpoint: weights on meta, then filled."""
    with linear_weights_on_meta():
        model = Small()
    assert model.proj.weight.device.type == "meta"
    materialise_meta_parameters(model, torch.device("cpu"), seed, std=0.02)
    return model


def test_every_seed_gives_its_own_weights():
    weights = [vendor_style(seed).proj.weight for seed in (0, 1, 2, 4)]
    for i in range(len(weights)):
        for j in range(i + 1, len(weights)):
            assert not torch.equal(weights[i], weights[j]), (i, j)
    assert torch.equal(vendor_style(2).proj.weight, vendor_style(2).proj.weight)
    assert len({param_seed(s, "w") for s in range(64)}) == 64


def test_vendor_fill_keeps_padding_rows_zero_and_ties_shared():
    model = vendor_style(3)
    assert torch.count_nonzero(model.embed.weight[0]) == 0
    assert model.head.weight is model.embed.weight
    assert model.proj.bias.device.type == "cpu"  # built for real, not on meta


def test_twin_and_vendor_fill_follow_one_rule():
    """The same (seed, parameter name, std) draws the same values in the twin and in the vendor fill."""
    twin = build_twin(ModelSpec.tiny(), seed=5)
    name = "model.layers.0.self_attn.q_proj.weight"
    expected = seeded_normal_(torch.empty_like(twin.get_parameter(name)), INIT_STD, 5, name)
    assert torch.equal(twin.get_parameter(name), expected)
