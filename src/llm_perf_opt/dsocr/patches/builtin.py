"""The named runtime patches of DeepSeek-OCR v1 (vendor code and twin alike), registered at v1's targets.

Observation patches (read-only: they never change an argument or an output, and call no torch op):

* `quick_gelu`: the CLIP MLP activation is a `@torch.jit.script` function, one opaque op for TorchLens;
  during the block the module global is an equivalent plain function, so its multiply, sigmoid and
  multiply are seen. Same aten ops in the same order, so the values do not change.
* `vision_inputs`, `llm_stack`: the bodies both generations share (`deepseek_ocr_shared.patches`) at
  `DeepseekOCRModel.forward` and at the decoder stack (the vendor's `DeepseekV2Model.forward`; the twin's
  `DeepseekOCRModel._decode`).
* `routing`: registered by `deepseek_ocr_shared.patches` (the same MoE gate in both generations).
* `sam_blocks`, `clip_layers`: wrap `ImageEncoderViT.forward` and `NoTPTransformer.forward`, whose bodies
  loop `for blk in self.blocks` / `for layer in self.layers`, and log one `block_loop` event per call with
  the length of the list the loop runs over (what the grouped graph's `for N` is checked against).

Run-time measures: `cuda_to_device` and `autocast` are any session's (`model_runtime.session_patches`);
`quiet_prints` silences the v1 vendor forward's debugging `print`s (shadows `print` in its module).

The twin package `llm_perf_opt.dsocr.twin` is registered here to reach the shared twin modules too.
"""

from __future__ import annotations

import torch

from llm_perf_opt.deepseek_ocr_shared import patches as shared_patches  # noqa: F401 - registers `routing`
from llm_perf_opt.deepseek_ocr_shared.parts import SAM_BLOCKS
from llm_perf_opt.deepseek_ocr_shared.patches import apply_llm_stack, apply_vision_inputs
from llm_perf_opt.model_runtime import session_patches  # noqa: F401 - registers cuda_to_device and autocast
from llm_perf_opt.model_runtime.patches import Patch, PatchContext, register_patch, register_twin_package
from llm_perf_opt.model_runtime.wrappers import apply_quiet_prints, loop_patch

register_twin_package("llm_perf_opt.dsocr.twin", "llm_perf_opt.deepseek_ocr_shared.twin")

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


register_patch(
    Patch(
        name="vision_inputs",
        summary="log num_images, crop grid, views and vision passes at DeepseekOCRModel.forward",
        apply=apply_vision_inputs,
        targets={
            "vendor": ("modeling_deepseekocr", "DeepseekOCRModel.forward"),
            "twin": ("model", "DeepseekOCRModel.forward"),
        },
    )
)


# ---------------------------------------------------------------------------------------------- llm_stack
register_patch(
    Patch(
        name="llm_stack",
        summary="log num_layers, seq_len, past_len and step at the decoder stack; decode_step with a past cache",
        apply=apply_llm_stack,
        targets={
            "vendor": ("modeling_deepseekv2", "DeepseekV2Model.forward"),
            "twin": ("model", "DeepseekOCRModel._decode"),
        },
    )
)


# ---------------------------------------------------------------------------------------------- block loops
register_patch(
    loop_patch(
        "sam_blocks",
        SAM_BLOCKS,
        "blocks",
        {"vendor": ("deepencoder", "ImageEncoderViT.forward"), "twin": ("sam", "ImageEncoderViT.forward")},
    )
)
register_patch(
    loop_patch(
        "clip_layers",
        "model.vision_model.transformer.layers",
        "layers",
        {"vendor": ("deepencoder", "NoTPTransformer.forward"), "twin": ("clip", "NoTPTransformer.forward")},
    )
)


# ---------------------------------------------------------------------------------------------- quiet_prints
register_patch(
    Patch(
        name="quiet_prints",
        summary="silence the debugging print() calls of the vendor's DeepseekOCRModel.forward",
        apply=apply_quiet_prints,
        targets={"vendor": ("modeling_deepseekocr", "print"), "twin": ("model", "print")},
        create=True,
    )
)
