"""A vLLM-like engine's memory: a paged KV pool.

The engine takes `gpu_memory_utilization` x the device's memory; from it the weights, the peak activations of one
prefill chunk (`chunk_tokens` tokens: the prefill's batched units scaled to the chunk, the vision encoder one page's:
`UnitTable.peak_live`), one page's inputs and the fixed workspace are taken; what remains is the KV pool, in blocks
of `block_size` tokens. A page holds ceil((prompt + output tokens) / block_size) blocks for its whole life. The
largest concurrency is the pool / one page's blocks; the engine runs min(serve.concurrency, that) pages at once
(its scheduler admits no more). No fragmentation allowance: blocks are allocated whole (the last one of a page
partly empty, counted).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from llm_perf_opt.analytic.memory_model import Allowance, MemoryUse
from llm_perf_opt.analytic.serving_model import ServingModel

CONVENTION = {
    "pool": "gpu_memory_utilization x memory - weights - peak activations of one prefill chunk - one page's inputs "
    "- workspace",
    "page": "ceil((prompt + output tokens) / block_size) blocks x block_size x KV bytes per token",
    "concurrency": "min(serve.concurrency, pool / one page's blocks)",
}


@dataclass(frozen=True)
class PagedPool:
    utilization: float
    block_size: int
    chunk_tokens: int
    concurrency: int

    def page_bytes(self, model: ServingModel, output_tokens: int) -> float:
        blocks = math.ceil((model.prompt_tokens + output_tokens) / self.block_size)
        return float(blocks * self.block_size * model.kv_bytes_per_token)

    def fixed(self, model: ServingModel, allowance: Allowance) -> tuple[float, float, float]:
        """(weights, chunk activations, inputs + workspace)."""
        chunk = max(self.chunk_tokens / model.prompt_tokens, 1.0)
        act = model.prefill.peak_live(chunk)
        return float(model.weight_bytes), float(act), float(model.input_bytes + allowance.workspace_bytes)

    def max_batch(self, model: ServingModel, output_tokens: int, capacity: float, allowance: Allowance) -> int:
        w, act, rest = self.fixed(model, allowance)
        pool = self.utilization * capacity - w - act - rest
        return max(0, int(pool // self.page_bytes(model, output_tokens)))

    def use(
        self, model: ServingModel, batch: int, output_tokens: int, allowance: Allowance, capacity: float | None
    ) -> MemoryUse:
        w, act, rest = self.fixed(model, allowance)
        budget = self.utilization * capacity if capacity else None
        return MemoryUse(
            batch,
            output_tokens,
            w,
            batch * self.page_bytes(model, output_tokens),
            float(model.input_bytes),
            act,
            float(allowance.workspace_bytes),
            "paged",
            budget,
        )

    def describe(self) -> dict[str, Any]:
        return {
            "gpu_memory_utilization": self.utilization,
            "block_size": self.block_size,
            "chunk_tokens": self.chunk_tokens,
            "max_num_seqs": self.concurrency,
            "convention": dict(CONVENTION),
        }
