"""The named runtime patches for DeepSeek-OCR (vendor code and twin alike).

Observation patches (read-only: they never change an argument or an output, and call no torch op):

* `quick_gelu`: the CLIP MLP activation is a `@torch.jit.script` function, one opaque op for TorchLens;
  during the block the module global is an equivalent plain function, so its multiply, sigmoid and
  multiply are seen. Same aten ops in the same order, so the values do not change.
* `vision_inputs`: wraps `DeepseekOCRModel.forward` and logs what the vision branch will see.
* `llm_stack`: wraps the decoder stack (the vendor's `DeepseekV2Model.forward`, which
  `DeepseekOCRModel.forward` reaches through `super().forward(...)`; the twin's `DeepseekOCRModel._decode`)
  and logs one `llm_stack` event per call (`step`: 0 for the prefill, k for decode step k; `past_len`:
  tokens in the KV cache before the call; `new_tokens`: tokens it feeds), plus a `decode_step` event
  for calls with a past cache.
* `routing`: wraps the MoE gate (`MoEGate.forward`, vendor and twin) and logs, per gate call, which
  experts its top-k indices selected and how many tokens each got (`routing` events: the gate's module
  path, its decoder layer, the call's index per gate — 0 for the prefill, k for decode step k — the
  tokens routed, top_k, the number of routed experts, the experts hit and their token counts). It
  reads the indices the gate returned (`tolist()`: no torch op, none a tracer or counter sees) and
  returns them untouched. `dsocr.routing` turns these events into `routing.json`.
* `sam_blocks`, `clip_layers`: wrap `ImageEncoderViT.forward` and `NoTPTransformer.forward`, whose bodies
  loop `for blk in self.blocks` / `for layer in self.layers`, and log one `block_loop` event per call with
  the length of the list the loop runs over (what the grouped graph's `for N` is checked against).

Run-time measures (what the vendor code needs to run off CUDA):

* `cuda_to_device`: the vendor's forward hard-codes `.cuda()` (the `masked_scatter_` mask); during the
  block `Tensor.cuda` moves to the session's device instead (a no-op on CPU tensors).
* `autocast`: the session's `torch.autocast(device, bf16)` (the vendor's `infer()` runs under CUDA bf16
  autocast; on CPU the equivalent is CPU bf16 autocast).
* `quiet_prints`: silences the vendor forward's debugging `print`s (shadows `print` in its module).
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import torch

from llm_perf_opt.dsocr.patches.framework import Patch, PatchContext, register_patch, untracked

DEFAULT_TRACE_PATCHES = ("quick_gelu", "vision_inputs", "llm_stack")
LOOP_PATCHES = ("sam_blocks", "clip_layers")  # the vision block loops' lengths, for the grouping's `for N` checks
# what the trace job's capture runs under: the loops' lengths and the MoE gates' routing (read-only)
TRACE_PATCHES = DEFAULT_TRACE_PATCHES + LOOP_PATCHES + ("routing",)


# ---------------------------------------------------------------------------------------------- quick_gelu
def quick_gelu_eager(x: torch.Tensor) -> torch.Tensor:
    """x·sigmoid(1.702·x) as plain Python: the ops a tracer can see (same aten ops as the scripted one)."""
    return x * torch.sigmoid(1.702 * x)


def _apply_quick_gelu(ctx: PatchContext) -> None:
    ctx.replace(ctx.target(), quick_gelu_eager)


register_patch(
    Patch(
        name="quick_gelu",
        summary="CLIP's TorchScript quick_gelu -> an equivalent plain function (visible ops)",
        apply=_apply_quick_gelu,
        targets={"vendor": ("deepencoder", "quick_gelu"), "twin": ("clip", "quick_gelu")},
    )
)


# ---------------------------------------------------------------------------------------------- helpers
def _bind(signature: inspect.Signature, args: tuple, kwargs: dict) -> dict[str, Any]:
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:  # let the original raise its own error
        return {}
    bound.apply_defaults()
    return dict(bound.arguments)


def _seq_len(arguments: dict[str, Any]) -> int | None:
    for name in ("input_ids", "inputs_embeds"):
        value = arguments.get(name)
        if isinstance(value, torch.Tensor) and value.dim() >= 2:
            return int(value.shape[1])
    return None


def _past_len(past: Any) -> int:
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


def _crop_grid(images_spatial_crop: Any, n: int) -> list[list[int]]:
    if images_spatial_crop is None:
        return [[1, 1]] * n
    if isinstance(images_spatial_crop, torch.Tensor):
        with untracked():
            rows = (
                images_spatial_crop.detach().cpu().tolist()
                if images_spatial_crop.device.type != "cpu"
                else images_spatial_crop.tolist()
            )
    else:
        rows = [list(r) for r in images_spatial_crop]
    return [[int(v) for v in row] for row in rows]


def _vision_event(module: Any, arguments: dict[str, Any]) -> dict[str, Any]:
    seq_len = _seq_len(arguments)
    images = arguments.get("images")
    runs = (
        getattr(module, "sam_model", None) is not None
        and images is not None
        and len(images) > 0
        and (seq_len != 1 or bool(getattr(module, "training", False)))
    )
    if not runs:
        return {"vision": False, "seq_len": seq_len}
    grid = _crop_grid(arguments.get("images_spatial_crop"), len(images))
    crops = []
    for (patches, _global), (w, h) in zip(images, grid):
        # infer() passes a zero crop tensor exactly when the grid is 1x1; the vendor tests `sum != 0`
        crops.append(int(patches.shape[0]) if w * h > 1 else 0)
    return {
        "vision": True,
        "num_images": len(images),
        "images_spatial_crop": grid,
        "crops_per_image": crops,
        "views": len(images) + sum(crops),
        "vision_passes": sum(2 if c else 1 for c in crops),
        "global_view_shapes": [list(g.shape) for _, g in images],
        "crop_shapes": [list(p.shape) if c else [] for (p, _), c in zip(images, crops)],
        "seq_len": seq_len,
    }


# ---------------------------------------------------------------------------------------------- logging wrappers
def _wrap_with_log(ctx: PatchContext, on_call: Callable[[Any, dict[str, Any]], None]) -> None:
    """Wrap the patch target read-only: bind each call's arguments, hand them to `on_call`, then run the
    original with exactly the arguments it was given (outputs stay bit-identical)."""

    def factory(original):
        signature = inspect.signature(original)

        @functools.wraps(original)
        def wrapper(self, *args, **kwargs):
            arguments = _bind(signature, (self,) + args, kwargs)
            if arguments:
                on_call(self, arguments)
            return original(self, *args, **kwargs)

        return wrapper

    ctx.wrap(ctx.target(), factory)


# ---------------------------------------------------------------------------------------------- vision_inputs
def _apply_vision_inputs(ctx: PatchContext) -> None:
    _wrap_with_log(ctx, lambda model, arguments: ctx.log.record("vision_inputs", **_vision_event(model, arguments)))


register_patch(
    Patch(
        name="vision_inputs",
        summary="log num_images, crop grid, views and vision passes at DeepseekOCRModel.forward",
        apply=_apply_vision_inputs,
        targets={
            "vendor": ("modeling_deepseekocr", "DeepseekOCRModel.forward"),
            "twin": ("model", "DeepseekOCRModel.forward"),
        },
    )
)


# ---------------------------------------------------------------------------------------------- llm_stack
def _apply_llm_stack(ctx: PatchContext) -> None:
    log = ctx.log
    state = ctx.state
    state.setdefault("llm_stack_calls", 0)

    def on_call(stack: Any, arguments: dict[str, Any]) -> None:
        step = state["llm_stack_calls"]
        state["llm_stack_calls"] = step + 1
        seq_len = _seq_len(arguments)
        past_len = _past_len(arguments.get("past_key_values"))
        layers = getattr(stack, "layers", None)
        log.record(
            "llm_stack",
            num_layers=len(layers) if layers is not None else None,
            seq_len=seq_len,
            past_len=past_len,
            step=step,
            use_cache=arguments.get("use_cache"),
            new_tokens=seq_len,
        )
        if past_len > 0:
            log.record(
                "decode_step", step=step, new_tokens=seq_len, past_len=past_len, context_len=past_len + (seq_len or 0)
            )

    _wrap_with_log(ctx, on_call)


register_patch(
    Patch(
        name="llm_stack",
        summary="log num_layers, seq_len, past_len and step at the decoder stack; decode_step with a past cache",
        apply=_apply_llm_stack,
        targets={
            "vendor": ("modeling_deepseekv2", "DeepseekV2Model.forward"),
            "twin": ("model", "DeepseekOCRModel._decode"),
        },
    )
)


# ---------------------------------------------------------------------------------------------- block loops
def _loop_patch(name: str, loop: str, attribute: str, targets: dict[str, tuple[str, str]]) -> Patch:
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

        _wrap_with_log(ctx, on_call)

    return Patch(
        name=name, summary=f"log the length of the loop over {loop} (block_loop events)", apply=apply, targets=targets
    )


register_patch(
    _loop_patch(
        "sam_blocks",
        "model.sam_model.blocks",
        "blocks",
        {"vendor": ("deepencoder", "ImageEncoderViT.forward"), "twin": ("sam", "ImageEncoderViT.forward")},
    )
)
register_patch(
    _loop_patch(
        "clip_layers",
        "model.vision_model.transformer.layers",
        "layers",
        {"vendor": ("deepencoder", "NoTPTransformer.forward"), "twin": ("clip", "NoTPTransformer.forward")},
    )
)


# ---------------------------------------------------------------------------------------------- run-time measures
def _apply_cuda_to_device(ctx: PatchContext) -> None:
    device = ctx.device

    def cuda(self, device_=None, non_blocking=False, memory_format=torch.preserve_format, **kwargs):
        # `.cuda()` in the vendor forward means "the compute device": move there instead (no copy if there)
        return self.to(device, non_blocking=non_blocking, memory_format=memory_format)

    ctx.replace(ctx.target(), cuda)


register_patch(
    Patch(
        name="cuda_to_device",
        summary="Tensor.cuda() -> Tensor.to(session device) (the vendor forward's hard-coded .cuda())",
        apply=_apply_cuda_to_device,
        targets={"*": ("torch", "Tensor.cuda")},
    )
)


def _apply_autocast(ctx: PatchContext) -> None:
    make = getattr(ctx.session, "autocast_context", None)
    if make is None:
        raise ctx_error("autocast", "needs a session with autocast_context()")
    ctx.enter(make())


def ctx_error(name: str, message: str):
    from llm_perf_opt.errors import PatchError

    return PatchError(f"patch {name!r}: {message}")


register_patch(
    Patch(
        name="autocast",
        summary="torch.autocast(session device, bf16) around the block when the session asks for autocast",
        apply=_apply_autocast,
    )
)


def _silent_print(*args, **kwargs) -> None:
    return None


def _apply_quiet_prints(ctx: PatchContext) -> None:
    ctx.replace(ctx.target(), _silent_print, create=True)


register_patch(
    Patch(
        name="quiet_prints",
        summary="silence the debugging print() calls of the vendor's DeepseekOCRModel.forward",
        apply=_apply_quiet_prints,
        targets={"vendor": ("modeling_deepseekocr", "print"), "twin": ("model", "print")},
        create=True,
    )
)


# ---------------------------------------------------------------------------------------------- routing
def _module_paths(session: Any) -> dict[int, str]:
    """{id(module): path} of the session's model (or of the model itself)."""
    model = getattr(session, "model", None) if not isinstance(session, torch.nn.Module) else session
    if model is None:
        return {}
    return {id(m): name for name, m in model.named_modules()}


def _layer_of(gate_path: str) -> int | None:
    """The decoder layer index of `model.layers.<i>.mlp.gate`, else None."""
    from llm_perf_opt.dsocr.parts import decoder_layer_index

    parts = gate_path.split(".")
    for cut in range(len(parts), 0, -1):
        index = decoder_layer_index(".".join(parts[:cut]))
        if index is not None:
            return index
    return None


def routing_event(path: str, call: int, gate: Any, topk_ids: Any) -> dict[str, Any]:
    """The `routing` event of one gate call: experts hit (ascending) and the tokens each got."""
    with untracked():
        rows = topk_ids.tolist() if isinstance(topk_ids, torch.Tensor) else list(topk_ids)
    counts: dict[int, int] = {}
    for row in rows:
        for expert in row if isinstance(row, list) else [row]:
            counts[int(expert)] = counts.get(int(expert), 0) + 1
    experts = sorted(counts)
    top_k = int(getattr(gate, "top_k", 0) or (len(rows[0]) if rows and isinstance(rows[0], list) else 1))
    return {
        "gate": path,
        "layer": _layer_of(path),
        "call": call,
        "tokens": len(rows),
        "top_k": top_k,
        "n_experts": int(getattr(gate, "n_routed_experts", 0) or 0),
        "experts": experts,
        "tokens_per_expert": [counts[e] for e in experts],
    }


def _apply_routing(ctx: PatchContext) -> None:
    log = ctx.log
    paths = _module_paths(ctx.session)
    weights = getattr(ctx.session, "weights", None)  # a session says "random" or "checkpoint"; a bare model nothing
    calls: dict[str, int] = ctx.state.setdefault("routing_calls", {})

    def factory(original):
        @functools.wraps(original)
        def wrapper(self, *args, **kwargs):
            out = original(self, *args, **kwargs)
            path = paths.get(id(self), type(self).__name__)
            call = calls.get(path, 0)
            calls[path] = call + 1
            ids = out[0] if isinstance(out, (tuple, list)) else out
            log.record("routing", **routing_event(path, call, self, ids), weights=weights)
            return out

        return wrapper

    ctx.wrap(ctx.target(), factory)


register_patch(
    Patch(
        name="routing",
        summary="log, per MoE gate call, the experts its top-k selected and the tokens each got (read-only)",
        apply=_apply_routing,
        targets={"vendor": ("modeling_deepseekv2", "MoEGate.forward"), "twin": ("decoder", "MoEGate.forward")},
    )
)
