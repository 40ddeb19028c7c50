"""Read-only wrappers a family's runtime patches are built from (`patches.Patch.apply` bodies and helpers).

* `wrap_with_log`: wrap the patch target, bind each call's arguments, hand them to a logger, then run the
  original with exactly the arguments it was given (outputs stay bit-identical);
* `loop_patch`: a `Patch` logging one `block_loop` event per call of a forward that loops over a module list
  (the list's length: what the grouped graph's `for N` is checked against);
* `seq_len`, `past_len`: the tokens a call feeds and the tokens already in its KV cache;
* `apply_quiet_prints`: shadow `print` in the target module (a vendor forward's debugging prints).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import torch

from llm_perf_opt.model_runtime.patches import Patch, PatchContext


def bind(signature: inspect.Signature, args: tuple, kwargs: dict) -> dict[str, Any]:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:  # let the original raise its own error
        return {}
    bound.apply_defaults()
    return dict(bound.arguments)


def seq_len(arguments: dict[str, Any]) -> int | None:
    for name in ("input_ids", "inputs_embeds"):
        value = arguments.get(name)
        if isinstance(value, torch.Tensor) and value.dim() >= 2:
            return int(value.shape[1])
    return None


def past_len(past: Any) -> int:
    """Tokens already in the KV cache: a transformers `Cache` or the legacy tuple of (key, value) per layer."""
    if past is None:
        return 0
    get_len = getattr(past, "get_seq_length", None)
    if callable(get_len):
        return int(get_len())
    try:
        first = past[0][0]
    except (IndexError, TypeError, KeyError):
        return 0
    return int(first.shape[-2]) if isinstance(first, torch.Tensor) else 0


def wrap_with_log(ctx: PatchContext, on_call: Callable[[Any, dict[str, Any]], None]) -> None:
    """Wrap the patch target read-only: bind each call's arguments, hand them to `on_call`, then run the
    original with exactly the arguments it was given (outputs stay bit-identical)."""

    def factory(original):
        signature = inspect.signature(original)

        @functools.wraps(original)
        def wrapper(self, *args, **kwargs):
            arguments = bind(signature, (self,) + args, kwargs)
            if arguments:
                on_call(self, arguments)
            return original(self, *args, **kwargs)

        return wrapper

    ctx.wrap(ctx.target(), factory)


def loop_patch(name: str, loop: str, attribute: str, targets: dict[str, tuple[str, str]]) -> Patch:
    """A read-only wrapper of a forward that loops over `self.<attribute>`: one `block_loop` event per call
    with the list's length (`loop` names the loop by its module path under the model root)."""

    def apply(ctx: PatchContext) -> None:
        def on_call(module: Any, _arguments: dict[str, Any]) -> None:
            items = module
            for name_ in attribute.split("."):  # a dotted attribute: `model.layers` of a wrapper
                items = getattr(items, name_, None)
            ctx.log.record(
                "block_loop",
                loop=loop,
                owner_class=type(module).__name__,
                attribute=attribute,
                length=len(items) if items is not None else None,
            )

        wrap_with_log(ctx, on_call)

    return Patch(
        name=name, summary=f"log the length of the loop over {loop} (block_loop events)", apply=apply, targets=targets
    )


def _silent_print(*args, **kwargs) -> None:
    return None


def apply_quiet_prints(ctx: PatchContext) -> None:
    """Shadow `print` in the target module (created if absent; removed again on exit)."""
    ctx.replace(ctx.target(), _silent_print, create=True)
