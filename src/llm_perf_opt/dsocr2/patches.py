"""DeepSeek-OCR 2's runtime patches: the bodies both generations share (`deepseek_ocr_shared.patches`,
`model_runtime.wrappers`) aimed at v2's classes.

The events are v1's (`vision_inputs`, `llm_stack`, `decode_step`, `block_loop`, `routing`), so the runtime
checks read them the same way; only the targets differ:

* `dsocr2.vision_inputs`: `DeepseekOCR2Model.forward` (vendor: `modeling_deepseekocr2`; twin: `dsocr2.twin.model`);
* `dsocr2.llm_stack`: the decoder stack (vendor: `DeepseekV2Model.forward`, which `DeepseekOCR2Model.forward`
  reaches through `super().forward`; twin: `DeepseekOCR2Model._decode`);
* `dsocr2.sam_blocks`: `ImageEncoderViT.forward` (vendor: `deepencoderv2`; twin: the shared `sam` module);
* `dsocr2.encoder_layers`: the encoder stack's loop. The vendor's stack class (`CustomQwen2ModelInner`) is made
  inside a method, so the wrapper around it (`CustomQwen2Decoder.forward`, module level in both) logs the
  length of its `model.layers`;
* `dsocr2.quiet_prints`: `quiet_prints` (the debugging `print`s of the vendor's forward) aimed at
  `modeling_deepseekocr2`; the session asks for it in place of v1's (`DeepSeekSession.patch_names`);
* `routing`: the shared patch as it is (the same `MoEGate` of `modeling_deepseekv2`, and the shared twin
  `decoder`).

The twin package `llm_perf_opt.dsocr2.twin` is registered to reach the shared twin modules too (`sam`, `decoder`).
"""

from __future__ import annotations

from llm_perf_opt.deepseek_ocr_shared import patches as shared_patches  # noqa: F401 - registers `routing`
from llm_perf_opt.deepseek_ocr_shared.patches import apply_llm_stack, apply_vision_inputs
from llm_perf_opt.dsocr2.parts import ENCODER_STACK, SAM_BLOCKS
from llm_perf_opt.model_runtime import session_patches  # noqa: F401 - registers cuda_to_device and autocast
from llm_perf_opt.model_runtime.patches import PATCHES, Patch, register_patch, register_twin_package
from llm_perf_opt.model_runtime.wrappers import apply_quiet_prints, loop_patch

register_twin_package("llm_perf_opt.dsocr2.twin", "llm_perf_opt.deepseek_ocr_shared.twin")

PREFIX = "dsocr2."
VENDOR_MODEL = "modeling_deepseekocr2"
VENDOR_ENCODER = "deepencoderv2"


def _register(patch: Patch) -> None:
    if patch.name not in PATCHES:  # a module imported twice (tests) registers once
        register_patch(patch)


_register(
    Patch(
        name=PREFIX + "vision_inputs",
        summary="log num_images, crop grid, views and vision passes at DeepseekOCR2Model.forward",
        apply=apply_vision_inputs,  # the shared patch body, v2's target
        targets={"vendor": (VENDOR_MODEL, "DeepseekOCR2Model.forward"), "twin": ("model", "DeepseekOCR2Model.forward")},
    )
)
_register(
    Patch(
        name=PREFIX + "llm_stack",
        summary="log num_layers, seq_len, past_len and step at the decoder stack; decode_step with a past cache",
        apply=apply_llm_stack,
        targets={
            "vendor": ("modeling_deepseekv2", "DeepseekV2Model.forward"),
            "twin": ("model", "DeepseekOCR2Model._decode"),
        },
    )
)
_register(
    loop_patch(
        PREFIX + "sam_blocks",
        SAM_BLOCKS,
        "blocks",
        {
            "vendor": (VENDOR_ENCODER, "ImageEncoderViT.forward"),
            "twin": ("sam", "ImageEncoderViT.forward"),
        },
    )
)
_register(
    loop_patch(
        PREFIX + "encoder_layers",
        ENCODER_STACK,
        "model.layers",
        {
            "vendor": (VENDOR_ENCODER, "CustomQwen2Decoder.forward"),
            "twin": ("encoder", "CustomQwen2Decoder.forward"),
        },
    )
)

_register(
    Patch(
        name=PREFIX + "quiet_prints",
        summary="silence the debugging print() calls of the vendor's DeepseekOCR2Model.forward",
        apply=apply_quiet_prints,
        targets={"vendor": (VENDOR_MODEL, "print"), "twin": ("model", "print")},
        create=True,
    )
)

# the session's required patches that are v1's by name (`DeepSeekOCRSession.patch_names`)
SESSION_PATCH_NAMES = {"quiet_prints": PREFIX + "quiet_prints"}

DEFAULT_TRACE_PATCHES = (PREFIX + "vision_inputs", PREFIX + "llm_stack")
LOOP_PATCHES = (PREFIX + "sam_blocks", PREFIX + "encoder_layers")
TRACE_PATCHES = DEFAULT_TRACE_PATCHES + LOOP_PATCHES + ("routing",)
