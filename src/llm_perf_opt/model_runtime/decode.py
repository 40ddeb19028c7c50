"""Greedy decoding with a KV cache, the loop `generate()` runs after the prefill, in one place.

A decode step feeds the greedy token of the previous output (`input_ids` of shape (1, 1)) with that
output's `past_key_values` and `use_cache=True`; the vision branch is skipped (the model runs it only
when `input_ids` has more than one column). Decode step k (1-based) attends over the prompt's
seq_len + k - 1 cached keys plus its own, and leaves seq_len + k tokens in the cache. The caller runs
each step (`run_step`), so a measurement can wrap the steps it counts and run the others plainly; the
trace job's capture runs the whole loop inside one traced call (`DecodeProgram`).

Every run records, per step, what the cache held before it (`past_len`), the tokens it fed
(`new_tokens`, always 1) and the bytes of the cache tensors the model holds after it
(`kv_cache_bytes`: the distinct storages of the `past_key_values` it returned, legacy tuples and
transformers `Cache` objects alike).

Limits (`check_decode_steps`): a step count is a non-negative integer, and the prompt plus the steps
must fit the model's positions (`max_position_embeddings`: 8192 for DeepSeek-OCR); a model whose
forward has no KV-cache path (no `past_key_values` / `use_cache` arguments, or no cache in its output)
cannot decode (`check_kv_cache_path`, and `greedy_decode` after the prefill). Each is one `ConfigError`
naming `trace.decode_steps`.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

from llm_perf_opt.callgraph.torchlens_adapter import paused_if_loaded
from llm_perf_opt.errors import ConfigError

if TYPE_CHECKING:
    import torch

FIELD = "trace.decode_steps"  # the config field every decode refusal names


@dataclass(frozen=True)
class DecodeStep:
    """One greedy decode step, as it ran."""

    step: int  # 1-based
    past_len: int  # tokens in the KV cache before the step (its context)
    new_tokens: int  # tokens fed (1: the previous greedy token)
    token: int  # the token fed
    next_token: int  # the greedy token of its output
    kv_cache_bytes: int  # bytes of the cache tensors after the step (past_len + new_tokens tokens)
    # a batch (B > 1): the sequences, and each one's own context before the step (past_len counts the left
    # padding of the shorter prompts too: the cache holds past_len positions for every sequence)
    batch: int = 1
    sequence_past_lens: tuple[int, ...] = ()

    @property
    def context_len(self) -> int:
        """Tokens in the cache after the step."""
        return self.past_len + self.new_tokens

    def to_dict(self) -> dict[str, Any]:
        out = {
            "step": self.step,
            "past_len": self.past_len,
            "new_tokens": self.new_tokens,
            "token": self.token,
            "next_token": self.next_token,
            "context_len": self.context_len,
            "kv_cache_bytes": self.kv_cache_bytes,
        }
        if self.batch > 1:
            out.update(
                batch=self.batch,
                sequence_past_lens=list(self.sequence_past_lens),
                kv_cache_bytes_per_sequence=self.kv_cache_bytes // self.batch,
            )
        return out


@dataclass
class DecodeResult:
    """A prefill with a KV cache followed by greedy decode steps."""

    prefill: Any  # the prefill output (logits over the prompt, past_key_values)
    tokens: list[int]  # the greedy token after the prefill and after each decode step
    last: Any  # the output of the last call
    steps: list[DecodeStep] = field(default_factory=list)
    prefill_kv_bytes: int = 0  # bytes of the cache after the prefill


# ---------------------------------------------------------------------------------------------- limits
def max_decode_steps(max_positions: int, seq_len: int) -> int:
    """The most steps after a prompt of `seq_len` tokens that stay within the model's positions."""
    return max(int(max_positions) - int(seq_len), 0)


def check_decode_steps(steps: Any, seq_len: int, max_positions: int) -> int:
    """`steps` as an int when it is a valid count for this prompt; ConfigError naming the field otherwise."""
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 0:
        raise ConfigError.field(FIELD, steps, "must be a non-negative integer (0: prefill only)")
    limit = max_decode_steps(max_positions, seq_len)
    if steps > limit:
        raise ConfigError.field(
            FIELD,
            steps,
            f"must be at most {limit}: the model has {max_positions} positions "
            f"(max_position_embeddings) and the prompt takes {seq_len}",
        )
    return steps


def check_prompt_positions(
    steps: Any, prompt: tuple[list[int], list[int], str], image_tokens: int, max_positions: int
) -> int:
    """The prompt's text tokens (`prompt`: the text before and after the image, as `prompt_tokens` gives them),
    after checking BOS, the image tokens, the text and the decode steps fit the model's positions."""
    before, after, _ = prompt
    check_decode_steps(steps, 1 + image_tokens + len(before) + len(after), max_positions)
    return len(before) + len(after)


def check_kv_cache_path(model: Any, steps: int) -> None:
    """ConfigError unless `model`'s forward takes `past_key_values` and `use_cache` (steps > 0 only)."""
    if steps <= 0:
        return
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return  # no signature to read: the prefill's output decides (greedy_decode)
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return
    missing = [name for name in ("past_key_values", "use_cache") if name not in params]
    if missing:
        raise ConfigError.field(
            FIELD,
            steps,
            f"needs a KV-cache path, but {type(model).__name__}.forward takes no "
            f"{' / '.join(missing)} argument; use {FIELD}=0",
        )


# ---------------------------------------------------------------------------------------------- the cache
def cache_tensors(past: Any) -> Iterator[torch.Tensor]:
    """Every tensor of a KV cache: a transformers `Cache` (key_cache / value_cache lists) or the legacy
    tuple of (key, value) per layer (any nesting of tuples and lists)."""
    import torch

    if past is None:
        return
    if isinstance(past, torch.Tensor):
        yield past
        return
    for name in ("key_cache", "value_cache"):
        if hasattr(past, name):
            for t in getattr(past, name):
                yield from cache_tensors(t)
    if isinstance(past, (tuple, list)):
        for item in past:
            yield from cache_tensors(item)


def kv_cache_bytes(past: Any) -> int:
    """Bytes the cache really holds: each distinct storage of its tensors once (a view shares one)."""
    storages: dict[tuple[str, int], int] = {}
    with paused_if_loaded():  # inside a capture: reading storages is not an op of the model
        for t in cache_tensors(past):
            storage = t.untyped_storage()
            storages[(str(t.device), storage.data_ptr())] = storage.nbytes()
    return sum(storages.values())


def cache_len(past: Any) -> int:
    """Tokens in a KV cache (its sequence axis); 0 for no cache."""
    get_len = getattr(past, "get_seq_length", None)
    if callable(get_len):
        return int(get_len())
    for t in cache_tensors(past):
        return int(t.shape[-2])
    return 0


# ---------------------------------------------------------------------------------------------- the loop
def next_token(logits: torch.Tensor) -> torch.Tensor:
    """The greedy token of the last position, shaped (batch, 1)."""
    return logits[:, -1:].argmax(dim=-1)


def _first(token: torch.Tensor) -> int:
    """The first sequence's greedy token (the only one at batch 1)."""
    return int(token.item()) if token.numel() == 1 else int(token.tolist()[0][0])


def _past_of(out: Any, steps: int) -> Any:
    past = getattr(out, "past_key_values", None)
    if past is None:
        raise ConfigError.field(
            FIELD,
            steps,
            f"needs a KV-cache path, but the model's output "
            f"({type(out).__name__}) has no past_key_values with use_cache=True; "
            f"use {FIELD}=0",
        )
    return past


def greedy_decode(
    run_step: Callable[[int, dict[str, Any]], Any],
    prefill: Any,
    steps: int,
    step_kwargs: Mapping[str, Any] | None = None,
    on_step: Callable[[DecodeStep], None] | None = None,
) -> DecodeResult:
    """`steps` decode steps after `prefill` (an output with `logits` and `past_key_values`).

    `run_step(k, kwargs)` runs step k (1-based) with the model's keyword arguments and returns its
    output. The arguments are `step_kwargs` (e.g. the prefill's other inputs, or `images=None`) with
    the greedy token as `input_ids`, the previous `past_key_values`, `use_cache=True` and no
    `attention_mask`. `on_step(DecodeStep)` runs after each step (progress, a job's stage record).

    A batch (B sequences left-padded to one length, `step_kwargs` with generate()'s 2-D attention mask)
    feeds B tokens with the mask grown by one column of ones and each sequence's next position (its real
    tokens so far, as generate() derives them); every sequence's cache holds the padded length.
    """
    import torch

    out = prefill
    token = next_token(out.logits)
    tokens = [_first(token)]
    result = DecodeResult(prefill=prefill, tokens=tokens, last=out)
    if steps <= 0:
        return result
    past = _past_of(out, steps)
    result.prefill_kv_bytes = kv_cache_bytes(past)
    for step in range(1, steps + 1):
        kwargs = dict(step_kwargs or {})
        input_ids = kwargs.get("input_ids")
        fed = token.to(input_ids.dtype) if isinstance(input_ids, torch.Tensor) else token
        kwargs.update(input_ids=fed, past_key_values=past, use_cache=True)
        mask = kwargs.pop("attention_mask", None)
        kwargs.pop("position_ids", None)
        own_past: tuple[int, ...] = ()
        if mask is not None:
            with paused_if_loaded():  # generate()'s bookkeeping, not an op of the model
                own_past = tuple(int(n) for n in mask.sum(dim=1).tolist())
                mask = torch.cat([mask, mask.new_ones((mask.shape[0], 1))], dim=1)
                kwargs.update(attention_mask=mask, position_ids=mask.sum(dim=1, keepdim=True) - 1)
            step_kwargs = dict(step_kwargs or {}, attention_mask=mask)
        past_len, fed_token = cache_len(past), tokens[-1]
        out = run_step(step, kwargs)
        past = _past_of(out, steps)
        token = next_token(out.logits)
        tokens.append(_first(token))
        record = DecodeStep(
            step=step,
            past_len=past_len,
            new_tokens=int(fed.shape[-1]),
            token=fed_token,
            next_token=tokens[-1],
            kv_cache_bytes=kv_cache_bytes(past),
            batch=int(fed.shape[0]),
            sequence_past_lens=own_past,
        )
        result.steps.append(record)
        result.last = out
        if on_step is not None:
            on_step(record)
    return result


class DecodeProgram:
    """The prefill and `steps` greedy steps as one program for `callgraph.capture(program=...)`: the capture
    traces one call of the root whose body is this loop, so the decoder's modules show 1 + steps calls
    and the vision modules one. `result` holds the `DecodeResult` after the run."""

    def __init__(
        self,
        steps: int,
        step_kwargs: Mapping[str, Any] | None = None,
        on_step: Callable[[DecodeStep], None] | None = None,
    ) -> None:
        self.steps = steps
        self.step_kwargs = step_kwargs
        self.on_step = on_step
        self.result: DecodeResult | None = None

    def __call__(self, forward: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        prefill = forward(*args, **kwargs)
        step_kwargs = kwargs if self.step_kwargs is None else self.step_kwargs
        self.result = greedy_decode(lambda _k, kw: forward(**kw), prefill, self.steps, step_kwargs, self.on_step)
        return self.result.last
