"""The vision -> language projector (`model.projector`), the released "linear" type only.

Input: concat(CLIP output without the class token, flattened SAM features), width
`clip.width + sam.out_dim`; output: the decoder width. The vendor keeps the linear layer in an attribute
named `layers`, so the state-dict key is `model.projector.layers.weight`.
"""

from __future__ import annotations

import torch
from torch import nn

from llm_perf_opt.deepseek_ocr_shared.spec import ProjectorSpec
from llm_perf_opt.errors import ConfigError


class MlpProjector(nn.Module):
    """`Linear(input_dim, n_embed)` with bias, stored as `layers`."""

    def __init__(self, spec: ProjectorSpec) -> None:
        super().__init__()
        if spec.projector_type != "linear":
            raise ConfigError.field(
                "model spec projector.projector_type",
                spec.projector_type,
                "must be 'linear' (the released DeepSeek-OCR projector)",
            )
        self.spec = spec
        self.layers = nn.Linear(spec.input_dim, spec.n_embed)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)
