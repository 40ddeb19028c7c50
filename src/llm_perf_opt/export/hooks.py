"""The real inputs of each target call, taken from one real forward with module hooks.

The forward is the session's own (vendor or twin, with the session's patches), so the shapes handed to
`torch.export` are exactly those the forward gives its submodules: no shape is rebuilt by hand. A
forward pre-hook (with kwargs) copies the arguments of the wanted call, a forward hook copies its
output (to check the exported program against it), and for a MoE decoder layer a hook on its gate
records the routing of that call: tokens per routed expert (for the fixed-routing remedy).

Decode targets need a decode step whose KV cache holds `context` tokens: the prefill runs with a
cache, then greedy decode steps run until the cache has that length, and only that step is hooked.
A transformers `Cache` argument is recorded as a `CacheSnapshot` of the layer's key and value tensors
taken before the call (the call appends to them).
"""

from __future__ import annotations

from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Optional

import torch
from torch import nn

from llm_perf_opt.errors import TraceError
from llm_perf_opt.export.targets import ExportTarget

Progress = Callable[[str], None]


@dataclass
class CacheSnapshot:
    """The KV cache a decoder layer got, as tensors: (B, kv_heads, context, head_dim) each."""

    layer_idx: int
    key: torch.Tensor
    value: torch.Tensor

    @property
    def context(self) -> int:
        return int(self.key.shape[-2])


@dataclass
class RecordedCall:
    """Arguments and output of one call, detached copies; `routing` for MoE layers."""

    target: ExportTarget
    args: tuple
    kwargs: dict
    output: Any = None
    routing: Optional[list[int]] = None  # tokens per routed expert in this call (from the gate's top-k ids)

    def tensor_inputs(self) -> list[tuple[str, torch.Tensor]]:
        """(name, tensor) of every tensor input, in call order (`args[i]`, kwargs by name, cache k/v)."""
        out: list[tuple[str, torch.Tensor]] = []
        for i, a in enumerate(self.args):
            if isinstance(a, torch.Tensor):
                out.append((f"args[{i}]", a))
        for k, v in self.kwargs.items():
            if isinstance(v, torch.Tensor):
                out.append((k, v))
            elif isinstance(v, CacheSnapshot):
                out.extend(((f"{k}.key", v.key), (f"{k}.value", v.value)))
        return out


def _copy(value: Any, layer_idx: Optional[int]) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().clone()
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return type(value)(_copy(v, layer_idx) for v in value)
    if isinstance(value, dict):
        return {k: _copy(v, layer_idx) for k, v in value.items()}
    key_cache = getattr(value, "key_cache", None)
    if isinstance(key_cache, list):  # a transformers Cache: keep this layer's tensors only
        if layer_idx is None or layer_idx >= len(key_cache) or not isinstance(key_cache[layer_idx], torch.Tensor):
            raise TraceError(f"a KV cache was passed without an entry for layer {layer_idx}: cannot record it")
        return CacheSnapshot(
            layer_idx, key_cache[layer_idx].detach().clone(), value.value_cache[layer_idx].detach().clone()
        )
    return value


def _layer_index(module: nn.Module) -> Optional[int]:
    attn = getattr(module, "self_attn", None)
    idx = getattr(attn, "layer_idx", None)
    return int(idx) if idx is not None else None


def _moe_of(module: nn.Module) -> Optional[nn.Module]:
    mlp = getattr(module, "mlp", None)
    if mlp is not None and hasattr(mlp, "gate") and hasattr(mlp, "experts"):
        return mlp
    return None


class _Recorder:
    """Hooks for a set of targets of one forward (all with the same `stage`)."""

    def __init__(self, model: nn.Module, targets: Iterable[ExportTarget]) -> None:
        self.model = model
        self.targets = list(targets)
        calls = [(t.path, t.call) for t in self.targets]
        if len(set(calls)) != len(calls):
            raise ValueError(f"two targets name the same call: {sorted(calls)}")
        self.calls: dict[str, int] = {}
        self.recorded: dict[str, RecordedCall] = {}
        self.active: dict[str, RecordedCall] = {}  # path -> the call being recorded right now

    def install(self, stack: ExitStack) -> None:
        paths = dict.fromkeys(t.path for t in self.targets)
        for path in paths:
            try:
                module = self.model.get_submodule(path)
            except AttributeError:
                raise TraceError(f"the model has no submodule {path!r} to export (vendor code changed?)") from None
            stack.callback(module.register_forward_pre_hook(self._pre(path, module), with_kwargs=True).remove)
            stack.callback(module.register_forward_hook(self._post(path, module), with_kwargs=True).remove)
            moe = _moe_of(module)
            if moe is not None:
                stack.callback(moe.gate.register_forward_hook(self._gate(path)).remove)

    def _pre(self, path: str, module: nn.Module):
        wanted = {t.call: t for t in self.targets if t.path == path}

        def hook(mod, args, kwargs):
            n = self.calls.get(path, 0)
            self.calls[path] = n + 1
            target = wanted.get(n)
            if target is not None:
                layer_idx = _layer_index(module)
                self.active[path] = RecordedCall(
                    target=target, args=_copy(tuple(args), layer_idx), kwargs=_copy(dict(kwargs), layer_idx)
                )
            return None

        return hook

    def _post(self, path: str, module: nn.Module):
        def hook(mod, args, kwargs, output):
            rec = self.active.pop(path, None)
            if rec is not None:
                rec.output = _copy(output, _layer_index(module))
                self.recorded[rec.target.name] = rec
            return None

        return hook

    def _gate(self, path: str):
        def hook(mod, args, output):
            rec = self.active.get(path)
            if rec is None:
                return None
            ids = output[0]
            counts = torch.bincount(ids.reshape(-1).to(torch.int64), minlength=int(getattr(mod, "n_routed_experts", 0)))
            rec.routing = [int(c) for c in counts.tolist()]
            return None

        return hook


def _check(recorded: dict[str, RecordedCall], targets: list[ExportTarget], calls: dict[str, int]) -> None:
    for t in targets:
        if t.name not in recorded:
            raise TraceError(
                f"export: {t.name} ({t.path}) was called {calls.get(t.path, 0)} time(s) in the "
                f"{t.stage} forward; its call #{t.call + 1} never happened"
            )
        rec = recorded[t.name]
        first = next((a for a in rec.args if isinstance(a, torch.Tensor)), None)
        if t.expected_batch is not None and first is not None and int(first.shape[0]) != t.expected_batch:
            raise TraceError(
                f"export: {t.name} got a batch of {int(first.shape[0])} in the real forward, the "
                f"layout says {t.expected_batch} (layout and forward disagree)"
            )


def record_calls(
    session: Any, inputs: Any, targets: Iterable[ExportTarget], progress: Progress | None = None
) -> dict[str, RecordedCall]:
    """Run the session's forward once (plus decode steps when a target needs them) and return the
    recorded call of every target, by name."""
    say = progress or (lambda _msg: None)
    targets = list(targets)
    prefill = [t for t in targets if t.stage == "prefill"]
    decode = [t for t in targets if t.stage == "decode"]
    contexts = sorted({t.context for t in decode})
    if len(contexts) > 1:
        raise TraceError(f"export: decode targets at different cache lengths {contexts}: one at a time")
    model = session.model
    recorded: dict[str, RecordedCall] = {}
    if prefill:
        pre = _Recorder(model, prefill)
        with ExitStack() as stack:
            pre.install(stack)
            with session.forward_context():
                kwargs = session.forward_kwargs(inputs)
                say(
                    f"export: recording submodule inputs from the real forward "
                    f"({int(kwargs['input_ids'].shape[1])} tokens)"
                )
                model(**kwargs)
        _check(pre.recorded, prefill, pre.calls)
        recorded.update(pre.recorded)
    if decode:
        context = contexts[0]
        dec = _Recorder(model, decode)
        with session.forward_context():
            kwargs = session.forward_kwargs(inputs, use_cache=True)
            seq_len = int(kwargs["input_ids"].shape[1])
            steps = context - seq_len + 1
            say(f"export: prefill with a KV cache, then {steps} decode step(s) to reach a cache of {context} tokens")
            out = model(**kwargs)
            for step in range(1, steps + 1):
                token = out.logits[:, -1:].argmax(dim=-1)
                with ExitStack() as stack:
                    if step == steps:
                        dec.install(stack)
                    out = model(
                        input_ids=token,
                        past_key_values=out.past_key_values,
                        use_cache=True,
                        images=None,
                        images_seq_mask=None,
                        images_spatial_crop=None,
                    )
        _check(dec.recorded, decode, dec.calls)
        for name, rec in dec.recorded.items():
            cache = rec.kwargs.get("past_key_value")
            if not isinstance(cache, CacheSnapshot) or cache.context != rec.target.context:
                got = cache.context if isinstance(cache, CacheSnapshot) else None
                raise TraceError(
                    f"export: {name} was to see a KV cache of {rec.target.context} tokens, the "
                    f"real decode step passed {got}"
                )
        recorded.update(dec.recorded)
    return recorded
