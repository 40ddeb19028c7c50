"""The toy model: a patch convolution and a projection (the vision encoder), a token embedding, two decoder layers
(LayerNorm, eager attention without a mask, LayerNorm, GELU MLP, residual adds) with a KV cache, a final norm and
an LM head. The image features replace the image-token positions (one `cat`); a one-token step skips the vision
encoder, as the DeepSeek-OCR forwards do."""

from __future__ import annotations

import math
from typing import Any, Optional

import torch
from torch import nn
from transformers.modeling_outputs import CausalLMOutputWithPast

from toy_family.spec import ToySpec


class ToyVisionEncoder(nn.Module):
    def __init__(self, spec: ToySpec) -> None:
        super().__init__()
        self.patch = nn.Conv2d(spec.channels, spec.vision_dim, spec.patch, stride=spec.patch)
        self.proj = nn.Linear(spec.vision_dim, spec.hidden)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = self.patch(images).flatten(2).transpose(1, 2)  # (B, patches, vision_dim): views
        return self.proj(x)


class ToyAttention(nn.Module):
    def __init__(self, spec: ToySpec) -> None:
        super().__init__()
        self.heads, self.head_dim = spec.heads, spec.head_dim
        self.scale = 1.0 / math.sqrt(spec.head_dim)
        self.q = nn.Linear(spec.hidden, spec.hidden)
        self.k = nn.Linear(spec.hidden, spec.hidden)
        self.v = nn.Linear(spec.hidden, spec.hidden)
        self.o = nn.Linear(spec.hidden, spec.hidden)

    def _heads(self, x: torch.Tensor) -> torch.Tensor:
        b, t, _ = x.shape
        return x.view(b, t, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x: torch.Tensor, past: Optional[tuple[torch.Tensor, torch.Tensor]] = None) -> Any:
        q, k, v = self._heads(self.q(x)), self._heads(self.k(x)), self._heads(self.v(x))
        if past is not None:
            k, v = torch.cat([past[0], k], dim=2), torch.cat([past[1], v], dim=2)
        scores = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        out = torch.matmul(torch.softmax(scores, dim=-1), v)
        b, _, t, _ = out.shape
        return self.o(out.transpose(1, 2).reshape(b, t, self.heads * self.head_dim)), (k, v)


class ToyMLP(nn.Module):
    def __init__(self, spec: ToySpec) -> None:
        super().__init__()
        self.up = nn.Linear(spec.hidden, spec.intermediate)
        self.act = nn.GELU()
        self.down = nn.Linear(spec.intermediate, spec.hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.down(self.act(self.up(x)))


class ToyDecoderLayer(nn.Module):
    def __init__(self, spec: ToySpec) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(spec.hidden)
        self.attn = ToyAttention(spec)
        self.norm2 = nn.LayerNorm(spec.hidden)
        self.mlp = ToyMLP(spec)

    def forward(self, x: torch.Tensor, past: Any = None) -> Any:
        attended, cache = self.attn(self.norm1(x), past)
        x = x + attended
        return x + self.mlp(self.norm2(x)), cache


class ToyOCRForCausalLM(nn.Module):
    def __init__(self, spec: ToySpec) -> None:
        super().__init__()
        self.spec = spec
        self.embed = nn.Embedding(spec.vocab, spec.hidden)
        self.vision = ToyVisionEncoder(spec)
        self.layers = nn.ModuleList(ToyDecoderLayer(spec) for _ in range(spec.layers))
        self.norm = nn.LayerNorm(spec.hidden)
        self.lm_head = nn.Linear(spec.hidden, spec.vocab, bias=False)

    def forward(
        self,
        input_ids: torch.Tensor,
        images: Optional[torch.Tensor] = None,
        past_key_values: Any = None,
        use_cache: bool = False,
        **_: Any,
    ) -> CausalLMOutputWithPast:
        x = self.embed(input_ids)
        if images is not None and input_ids.shape[1] > 1:  # the prefill: the image tokens follow BOS
            features = self.vision(images)
            x = torch.cat([x[:, :1], features, x[:, 1 + features.shape[1] :]], dim=1)
        cache = []
        for i, layer in enumerate(self.layers):
            x, kv = layer(x, past_key_values[i] if past_key_values is not None else None)
            cache.append(kv)
        logits = self.lm_head(self.norm(x))
        return CausalLMOutputWithPast(logits=logits, past_key_values=tuple(cache) if use_cache else None)


def build_twin(spec: ToySpec, seed: int, device: torch.device, dtype: torch.dtype) -> ToyOCRForCausalLM:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = ToyOCRForCausalLM(spec)
    return model.to(device=device, dtype=dtype).eval()
