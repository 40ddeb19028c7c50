"""The runtime patch bodies both DeepSeek-OCR generations use (each family registers them at its own targets),
and the one patch they share as it is:

* `apply_vision_inputs`: wraps the model's forward (`DeepseekOCRModel.forward`, `DeepseekOCR2Model.forward`) and
  logs what the vision branch will see (`vision_inputs` events: images, crop grid, views, vision passes);
* `apply_llm_stack`: wraps the decoder stack (the vendor's `DeepseekV2Model.forward`, which the model's forward
  reaches through `super().forward(...)`; the twin's `_decode`) and logs one `llm_stack` event per call (`step`:
  0 for the prefill, k for decode step k; `past_len`: tokens in the KV cache before the call; `new_tokens`:
  tokens it feeds), plus a `decode_step` event for calls with a past cache;
* `routing` (registered here): wraps the MoE gate (`MoEGate.forward`, vendor and twin: the same DeepSeek-V2
  decoder code) and logs, per gate call, which experts its top-k indices selected and how many tokens each got
  (`routing` events: the gate's module path, its decoder layer, the call's index per gate — 0 for the prefill,
  k for decode step k — the tokens routed, top_k, the number of routed experts, the experts hit and their token
  counts). It reads the indices the gate returned (`tolist()`: no torch op, none a tracer or counter sees) and
  returns them untouched. `model_runtime.routing` turns these events into `routing.json`.

All are read-only: they never change an argument or an output, and call no torch op a tracer sees.
"""

from __future__ import annotations

import functools
from typing import Any

import torch

from llm_perf_opt.deepseek_ocr_shared.parts import decoder_layer_index
from llm_perf_opt.model_runtime.patches import PATCHES, Patch, PatchContext, register_patch, untracked
from llm_perf_opt.model_runtime.wrappers import past_len, seq_len, wrap_with_log


# ---------------------------------------------------------------------------------------------- vision_inputs
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
    tokens = seq_len(arguments)
    images = arguments.get("images")
    runs = (
        getattr(module, "sam_model", None) is not None
        and images is not None
        and len(images) > 0
        and (tokens != 1 or bool(getattr(module, "training", False)))
    )
    if not runs:
        return {"vision": False, "seq_len": tokens}
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
        "seq_len": tokens,
    }


def apply_vision_inputs(ctx: PatchContext) -> None:
    wrap_with_log(ctx, lambda model, arguments: ctx.log.record("vision_inputs", **_vision_event(model, arguments)))


# ---------------------------------------------------------------------------------------------- llm_stack
def apply_llm_stack(ctx: PatchContext) -> None:
    log = ctx.log
    state = ctx.state
    state.setdefault("llm_stack_calls", 0)

    def on_call(stack: Any, arguments: dict[str, Any]) -> None:
        step = state["llm_stack_calls"]
        state["llm_stack_calls"] = step + 1
        tokens = seq_len(arguments)
        cached = past_len(arguments.get("past_key_values"))
        layers = getattr(stack, "layers", None)
        log.record(
            "llm_stack",
            num_layers=len(layers) if layers is not None else None,
            seq_len=tokens,
            past_len=cached,
            step=step,
            use_cache=arguments.get("use_cache"),
            new_tokens=tokens,
        )
        if cached > 0:
            log.record("decode_step", step=step, new_tokens=tokens, past_len=cached, context_len=cached + (tokens or 0))

    wrap_with_log(ctx, on_call)


# ---------------------------------------------------------------------------------------------- routing
def _module_paths(session: Any) -> dict[int, str]:
    """{id(module): path} of the session's model (or of the model itself)."""
    model = getattr(session, "model", None) if not isinstance(session, torch.nn.Module) else session
    if model is None:
        return {}
    return {id(m): name for name, m in model.named_modules()}


def _layer_of(gate_path: str) -> int | None:
    """The decoder layer index of `model.layers.<i>.mlp.gate`, else None."""
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


if "routing" not in PATCHES:
    register_patch(
        Patch(
            name="routing",
            summary="log, per MoE gate call, the experts its top-k selected and the tokens each got (read-only)",
            apply=_apply_routing,
            targets={"vendor": ("modeling_deepseekv2", "MoEGate.forward"), "twin": ("decoder", "MoEGate.forward")},
        )
    )
