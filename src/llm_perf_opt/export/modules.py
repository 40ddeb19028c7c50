"""What `torch.export` is given for a recorded call: a module and its example inputs.

Most targets are the submodule itself with the recorded arguments. A decoder layer in decode takes
its KV cache as a transformers `Cache` object, which a static graph cannot take as input:
`DecodeLayerWithCache` wraps the layer so that the cache's key and value tensors for this layer are
inputs (and the updated ones outputs), rebuilding a `DynamicCache` around them inside the forward.
The layer itself runs unchanged, including its own cache update (a concatenation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from llm_perf_opt.export.hooks import CacheSnapshot, RecordedCall

WRAPPED = "layer"  # attribute of the wrapped module in DecodeLayerWithCache (stripped from module paths)


class DecodeLayerWithCache(nn.Module):
    """A decoder layer with its KV cache as tensors: (hidden, past_key, past_value, ...) ->
    (hidden, key, value), key/value (B, kv_heads, context + 1, head_dim)."""

    def __init__(self, layer: nn.Module, layer_idx: int) -> None:
        super().__init__()
        self.layer = layer
        self.layer_idx = layer_idx

    def forward(self, hidden_states: torch.Tensor, past_key: torch.Tensor, past_value: torch.Tensor, **kwargs: Any):
        from transformers.cache_utils import DynamicCache

        cache = DynamicCache()
        # layers below this one have no entry (DynamicCache marks skipped layers with empty lists)
        cache.key_cache = [[] for _ in range(self.layer_idx)] + [past_key]
        cache.value_cache = [[] for _ in range(self.layer_idx)] + [past_value]
        out = self.layer(hidden_states, past_key_value=cache, **kwargs)
        return out[0], cache.key_cache[self.layer_idx], cache.value_cache[self.layer_idx]


@dataclass
class ExportCall:
    """`module(*args, **kwargs)` is the recorded call; `prefix` is the wrapper's attribute path to strip
    from module paths ("" when the module is the submodule itself)."""

    module: nn.Module
    args: tuple
    kwargs: dict
    prefix: str = ""

    def run(self) -> Any:
        return self.module(*self.args, **self.kwargs)

    def relative_path(self, path: str) -> str | None:
        """A module path inside the exported module, relative to the submodule (None: the wrapper)."""
        if not self.prefix:
            return path
        if path == self.prefix:
            return ""
        if path.startswith(self.prefix + "."):
            return path[len(self.prefix) + 1 :]
        return None


def call_for(model: nn.Module, rec: RecordedCall) -> ExportCall:
    """The module and inputs to export for a recorded call."""
    module = model.get_submodule(rec.target.path)
    cache = rec.kwargs.get("past_key_value")
    if isinstance(cache, CacheSnapshot):
        kwargs = {k: v for k, v in rec.kwargs.items() if k != "past_key_value"}
        kwargs.update(past_key=cache.key, past_value=cache.value)
        return ExportCall(DecodeLayerWithCache(module, cache.layer_idx), rec.args, kwargs, prefix=WRAPPED)
    return ExportCall(module, rec.args, dict(rec.kwargs))


def flat_tensors(value: Any) -> list[torch.Tensor]:
    """Every tensor of an output, in order (a CacheSnapshot gives its key then its value)."""
    if isinstance(value, torch.Tensor):
        return [value]
    if isinstance(value, CacheSnapshot):
        return [value.key, value.value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in flat_tensors(v)]
    if isinstance(value, dict):
        return [t for v in value.values() for t in flat_tensors(v)]
    return []
