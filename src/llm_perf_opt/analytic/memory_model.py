"""Device memory of a serving replica at batch B: what it holds, whether it fits, the largest batch that does.

Convention (`CONVENTION`, in every output):

* weights: every parameter as stored (`ServingModel.weight_bytes`), once per replica;
* KV cache: B sequences × positions cached × KV bytes per token (all layers);
* inputs: what the forward is handed per sequence (`ServingModel.input_bytes`: pixel values of every view,
  token ids, masks), × the prefill's batch, held through the generation (`generate` keeps its inputs);
* activations: the peak live bytes of a stage = the largest unit's inputs + every tensor it produces
  (`UnitTable.peak_live`), × B (a unit the forward runs once per sample holds one sample's);
* the two phases of a static batch: prefill (KV of the prompt + the prefill's peak) and the last decode
  step (KV of prompt + output tokens + that step's peak); the replica needs the larger;
* allowance: a fixed workspace (runtime context, library workspaces; `Allowance.workspace_bytes`) plus a
  fraction of the KV cache and activations for the allocator's rounding and fragmentation.

Everything but the weights and the fixed workspace grows linearly with B, so the largest batch that fits
is found exactly by a search over B.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from llm_perf_opt.analytic.serving_model import ServingModel
from llm_perf_opt.errors import ConfigError

GB = 1e9
# Default allowance: a CUDA context with cuBLAS/cuDNN workspaces and the framework's own buffers take a few
# hundred MB to about 1 GB on current GPUs (PyTorch: ~0.3-0.5 GB context + 32 MiB cuBLAS workspace per
# stream, more with cuDNN); PyTorch's caching allocator rounds blocks up and fragments, typically 5-15% of
# what it hands out. 1 GB + 10% covers both without claiming precision.
DEFAULT_WORKSPACE_GB = 1.0
DEFAULT_FRAGMENTATION = 0.10
MAX_SEARCH_BATCH = 1 << 24

CONVENTION = {
    "weights": "every parameter as stored, once per replica",
    "kv_cache": "batch x cached positions x KV bytes per token (all layers, keys and values)",
    "inputs": "prefill batch x the forward's inputs of one sequence (pixel values of every view, token ids, "
    "masks), held through the generation",
    "activations": "peak live bytes of a stage: the largest unit's inputs + every tensor it produces, x batch "
    "(units the forward runs once per sample: one sample's)",
    "phases": "static batching: max(prefill: KV of the prompt + prefill peak, last decode step: KV of prompt + "
    "output + its peak); continuous batching: the same with the prefill at batch 1 (one page prefilled while B "
    "slots hold KV of prompt + output, an upper bound)",
    "allowance": "workspace (fixed) + fragmentation x (KV cache + inputs + activations)",
}


@dataclass(frozen=True)
class Allowance:
    workspace_bytes: float = DEFAULT_WORKSPACE_GB * GB
    fragmentation: float = DEFAULT_FRAGMENTATION
    note: str = (
        f"default: {DEFAULT_WORKSPACE_GB:g} GB workspace (runtime context, library workspaces) + "
        f"{DEFAULT_FRAGMENTATION:.0%} of KV cache and activations (allocator rounding and fragmentation)"
    )

    def __post_init__(self) -> None:
        if not self.workspace_bytes >= 0:
            raise ConfigError.field("serve.workspace_gb", self.workspace_bytes / GB, "must be >= 0")
        if not 0 <= self.fragmentation < 1:
            raise ConfigError.field("serve.fragmentation", self.fragmentation, "must be in [0, 1)")


@dataclass(frozen=True)
class MemoryUse:
    batch: int
    output_tokens: int
    weights: float
    kv_cache: float
    inputs: float
    activations: float
    allowance: float
    phase: str  # the phase that needs the most: "prefill" or "decode"
    capacity: Optional[float] = None

    @property
    def total(self) -> float:
        return self.weights + self.kv_cache + self.inputs + self.activations + self.allowance

    @property
    def fits(self) -> Optional[bool]:
        return None if self.capacity is None else self.total <= self.capacity

    @property
    def dominant(self) -> str:
        terms = {
            "weights": self.weights,
            "kv_cache": self.kv_cache,
            "inputs": self.inputs,
            "activations": self.activations,
            "allowance": self.allowance,
        }
        return max(terms, key=terms.__getitem__)

    def to_dict(self) -> dict[str, Any]:
        return {
            "batch": self.batch,
            "output_tokens": self.output_tokens,
            "weights_bytes": self.weights,
            "kv_cache_bytes": self.kv_cache,
            "input_bytes": self.inputs,
            "activation_bytes": self.activations,
            "allowance_bytes": self.allowance,
            "total_bytes": self.total,
            "phase": self.phase,
            "dominant": self.dominant,
            "capacity_bytes": self.capacity,
            "fits": self.fits,
        }


def memory_use(
    model: ServingModel,
    batch: int,
    output_tokens: int,
    allowance: Allowance = Allowance(),
    capacity: Optional[float] = None,
    prefill_batch: Optional[int] = None,
) -> MemoryUse:
    """`prefill_batch`: the batch the prefill runs at (static batching: `batch`, the default; continuous
    batching: 1, one page prefilled between decode steps while the other slots hold their KV cache)."""
    pb = batch if prefill_batch is None else prefill_batch
    prompt = model.prompt_tokens
    last_ctx = prompt + max(output_tokens - 2, 0)  # the last decode step's cached positions
    kv_prefill = batch * prompt * model.kv_bytes_per_token
    kv_decode = batch * (prompt + output_tokens) * model.kv_bytes_per_token
    act_prefill = model.prefill.peak_live(pb)
    act_decode = model.decode.at(last_ctx).peak_live(batch)
    prefill, decode = kv_prefill + act_prefill, kv_decode + act_decode
    if prefill > decode:
        kv, act, phase = kv_prefill, act_prefill, "prefill"
    else:
        kv, act, phase = kv_decode, act_decode, "decode"
    inputs = pb * model.input_bytes
    extra = allowance.workspace_bytes + allowance.fragmentation * (kv + inputs + act)
    return MemoryUse(
        batch,
        output_tokens,
        float(model.weight_bytes),
        float(kv),
        float(inputs),
        float(act),
        float(extra),
        phase,
        capacity,
    )


def max_batch(
    model: ServingModel,
    output_tokens: int,
    capacity: float,
    allowance: Allowance = Allowance(),
    continuous: bool = False,
) -> int:
    """The largest batch whose memory fits `capacity` bytes (0: not even one sequence fits); `continuous`:
    prefills at batch 1 (continuous batching), else at the batch (static)."""

    def fits(b: int) -> bool:
        prefill_batch = 1 if continuous else None
        return memory_use(model, b, output_tokens, allowance, prefill_batch=prefill_batch).total <= capacity

    if not fits(1):
        return 0
    hi = 1
    while hi < MAX_SEARCH_BATCH and fits(hi * 2):
        hi *= 2
    lo, hi = hi, min(hi * 2, MAX_SEARCH_BATCH)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo
