"""Measure a model's forward (vendor or twin): the prefill, then decode steps with a KV cache.

A decode step is what `generate()` runs after the prefill: `input_ids` of shape (1, 1) (the greedy
next token), `past_key_values` from the previous call, `use_cache=True`; the vision branch is skipped
(the vendor runs it only when `input_ids` has more than one column). Decode step k (1-based) attends
over seq_len + k - 1 cached keys plus its own.

Per decode step the measurement keeps the step's facts from the loop (`model_runtime.decode.DecodeStep`: past
length, tokens fed, the bytes of the KV-cache tensors the model holds after it), and, for the steps it
counts, the FLOPs of that step alone (`FlopCounterMode` around that one forward). `kv_cache_bytes[0]`
is the cache after the prefill (only with decode steps: the prefill runs with `use_cache=True` then).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import torch

from llm_perf_opt.measure.flops import MeasuredFlops, count_flops
from llm_perf_opt.model_runtime.decode import DecodeStep, greedy_decode


@dataclass
class ForwardMeasurement:
    seq_len: int
    prefill: MeasuredFlops
    decode: dict[int, MeasuredFlops] = field(default_factory=dict)  # context length -> one decode step
    steps: list[DecodeStep] = field(default_factory=list)  # every decode step that ran, counted or not
    kv_cache_bytes: dict[int, int] = field(default_factory=dict)  # step (0: prefill) -> cache bytes after it

    def step_of_context(self, context_len: int) -> int:
        """The decode step that ran over `context_len` cached tokens (step k: seq_len + k - 1)."""
        return context_len - self.seq_len + 1

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq_len": self.seq_len,
            "prefill": self.prefill.to_dict(with_ops=False),
            "decode": {str(k): v.to_dict(with_ops=False) for k, v in sorted(self.decode.items())},
            "steps": [s.to_dict() for s in self.steps],
            "kv_cache_bytes": {str(k): v for k, v in sorted(self.kv_cache_bytes.items())},
        }


def _autocast(model: torch.nn.Module, dtype: torch.dtype | None):
    if dtype is None:
        return torch.autocast("cpu", enabled=False)
    return torch.autocast(next(model.parameters()).device.type, dtype=dtype)


def measure_forward(
    model: torch.nn.Module,
    forward_kwargs: Mapping[str, Any],
    decode_steps: Sequence[int] = (),
    autocast_dtype: torch.dtype | None = None,
) -> ForwardMeasurement:
    """Count the prefill forward, then run greedy decode steps and count those in `decode_steps` (1-based)."""
    kwargs = dict(forward_kwargs)
    kwargs["use_cache"] = bool(decode_steps)
    seq_len = int(kwargs["input_ids"].shape[1])

    def prefill_fn():
        with _autocast(model, autocast_dtype):
            return model(**kwargs)

    prefill, out = count_flops(prefill_fn, model, label="prefill")
    result = ForwardMeasurement(seq_len=seq_len, prefill=prefill)
    if not decode_steps:
        return result
    wanted = sorted(set(int(s) for s in decode_steps))
    if wanted[0] < 1:
        raise ValueError(f"decode steps are 1-based, got {decode_steps!r}")

    def run_step(step: int, step_kwargs: dict[str, Any]) -> Any:
        context = seq_len + step - 1

        def step_fn():
            with _autocast(model, autocast_dtype):
                return model(**step_kwargs)

        if step not in wanted:
            with torch.no_grad():
                return step_fn()
        measured, step_out = count_flops(step_fn, model, label=f"decode@{context}")
        result.decode[context] = measured
        return step_out

    decoded = greedy_decode(run_step, out, wanted[-1], kwargs)
    result.steps = list(decoded.steps)
    result.kv_cache_bytes = {0: decoded.prefill_kv_bytes, **{s.step: s.kv_cache_bytes for s in decoded.steps}}
    return result
