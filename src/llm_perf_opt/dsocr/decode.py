"""Greedy decoding with a KV cache, the loop `generate()` runs after the prefill, in one place.

A decode step feeds the greedy token of the previous output (`input_ids` of shape (1, 1)) with that
output's `past_key_values` and `use_cache=True`; the vision branch is skipped (the model runs it only
when `input_ids` has more than one column). Decode step k (1-based) attends over the prompt's
seq_len + k - 1 cached keys plus its own. The caller runs each step (`run_step`), so a measurement can
wrap the steps it counts and run the others plainly.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Mapping

import torch


@dataclass
class DecodeResult:
    """A prefill with a KV cache followed by greedy decode steps."""

    prefill: Any  # the prefill output (logits over the prompt, past_key_values)
    tokens: list[int]  # the greedy token after the prefill and after each decode step
    last: Any  # the output of the last call


def next_token(logits: torch.Tensor) -> torch.Tensor:
    """The greedy token of the last position, shaped (batch, 1)."""
    return logits[:, -1:].argmax(dim=-1)


def greedy_decode(run_step: Callable[[int, dict[str, Any]], Any], prefill: Any, steps: int,
                  step_kwargs: Mapping[str, Any] | None = None) -> DecodeResult:
    """`steps` decode steps after `prefill` (an output with `logits` and `past_key_values`).

    `run_step(k, kwargs)` runs step k (1-based) with the model's keyword arguments and returns its
    output. The arguments are `step_kwargs` (e.g. the prefill's other inputs, or `images=None`) with
    the greedy token as `input_ids`, the previous `past_key_values`, `use_cache=True` and no
    `attention_mask`.
    """
    out = prefill
    token = next_token(out.logits)
    tokens = [int(token.item())]
    for step in range(1, steps + 1):
        kwargs = dict(step_kwargs or {})
        input_ids = kwargs.get("input_ids")
        kwargs.update(input_ids=token.to(input_ids.dtype) if isinstance(input_ids, torch.Tensor) else token,
                      past_key_values=out.past_key_values, use_cache=True)
        kwargs.pop("attention_mask", None)
        out = run_step(step, kwargs)
        token = next_token(out.logits)
        tokens.append(int(token.item()))
    return DecodeResult(prefill=prefill, tokens=tokens, last=out)
