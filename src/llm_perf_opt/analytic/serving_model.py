"""`ServingModel`: everything the serving math needs about one model on one page shape, family-agnostic.

A model family builds it from its analytic model (DeepSeek-OCR: `deepseek_ocr_shared.serving`, through
`analytic_model.serving_model`): the prefill's units (vision + the whole prompt, one sequence), a decode step's
units as an affine function of the context,
the prompt length, the model's position limit, its parameter bytes, KV-cache bytes per token and its MoE
shape; for the serving engines above the ideal level (`analytic.serve_engines`) its batch rules (`rules`) and
`stage_at(stage, batch, context, kernels)`: the family's stage ("prefill" or "decode" at `context`) at batch B, with
the model's own attention (`kernels="hf"`) or the fused attention a vLLM-like engine runs (`"vllm"`).
`serving`, `memory_model` and `sizing` read nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Optional

import numpy as np

from llm_perf_opt.analytic.moe_batch import MoEShape
from llm_perf_opt.analytic.stage import StageCost
from llm_perf_opt.analytic.time.batch import BatchRules, BatchTimes, DecodeTable, UnitTable, level_times
from llm_perf_opt.analytic.time.convention import IDEAL
from llm_perf_opt.analytic.time.hardware import Roof
from llm_perf_opt.errors import ConfigError


@dataclass(frozen=True, eq=False)
class ServingModel:
    name: str  # model and page, for outputs
    prefill: UnitTable  # one sequence: vision + the whole prompt (its time is the time to first token)
    decode: DecodeTable  # one decode step (one new token per sequence), affine in the context length
    prompt_tokens: int  # tokens in the KV cache after the prefill (BOS + image tokens + prompt)
    max_positions: int  # the model's position limit: prompt + generated tokens must stay within it
    weight_bytes: int  # every parameter, as stored (the memory a replica holds)
    kv_bytes_per_token: int  # KV cache of one sequence per cached token, all layers
    input_bytes: int  # the forward's inputs of one sequence on the device (pixel values, token ids, masks)
    dtype: str
    moe: Optional[MoEShape] = None
    shapes: Mapping[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    rules: Optional[BatchRules] = None
    stage_at: Optional[Callable[[str, int, Optional[int], str], StageCost]] = None

    def max_output_tokens(self) -> int:
        return self.max_positions - self.prompt_tokens

    def check_output_tokens(self, output_tokens: int, name: str = "serve.output_tokens") -> int:
        if isinstance(output_tokens, bool) or not isinstance(output_tokens, int) or output_tokens < 1:
            raise ConfigError.field(name, output_tokens, "must be a positive integer (tokens generated per page)")
        if output_tokens > self.max_output_tokens():
            raise ConfigError.field(
                name,
                output_tokens,
                f"the prompt holds {self.prompt_tokens} positions and the model has "
                f"{self.max_positions}: at most {self.max_output_tokens()} tokens can be generated",
            )
        return output_tokens

    @staticmethod
    def mean_decode_context(prompt_tokens: int, output_tokens: int) -> float:
        """The prefill yields the first token; decode steps k = 0 .. N-2 each attend over prompt + k cached
        positions: their mean context is prompt + (N - 2) / 2 (the prompt itself for N = 1)."""
        return prompt_tokens + max(output_tokens - 2, 0) / 2

    def prefill_times(self, batches, roof: Roof, level: str = IDEAL) -> BatchTimes:
        return level_times(self.prefill, batches, roof, self.moe, level)

    def decode_times(self, batches, roof: Roof, context: float, level: str = IDEAL) -> BatchTimes:
        return level_times(self.decode.at(context), batches, roof, self.moe, level)

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "prompt_tokens": self.prompt_tokens,
            "max_positions": self.max_positions,
            "weight_bytes": self.weight_bytes,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "input_bytes": self.input_bytes,
            "dtype": self.dtype,
            "moe": self.moe.describe() if self.moe else None,
            "shapes": dict(self.shapes),
            "notes": list(self.notes),
        }


def as_batches(batches) -> np.ndarray:
    return np.asarray(batches, dtype=float)
