"""DeepSeek-OCR 2's loaders for the shared session (`deepseek_ocr_shared.session.DeepSeekSession`): the twin by
`model.spec` (`dsocr2.twin.build_twin`) and the vendor code (`modeling_deepseekocr2`, `deepencoderv2`, the
shared `modeling_deepseekv2`) through `model_runtime.vendor.load_vendor` with v2's class names and spec: the
loaders both generations share (`deepseek_ocr_shared.session.family_loaders`) with v2's names."""

from __future__ import annotations

from llm_perf_opt.deepseek_ocr_shared.session import DECODER_VENDOR_NAMES, family_loaders
from llm_perf_opt.dsocr2.spec import FAMILY, ModelSpec

# What the pipeline relies on in the vendor code, by module (the classes the twin mirrors, the patch points).
REQUIRED_VENDOR_NAMES: dict[str, tuple[str, ...]] = {
    "modeling_deepseekocr2": (
        "DeepseekOCR2ForCausalLM",
        "DeepseekOCR2Model",
        "DeepseekOCR2Config",
        "DeepseekOCR2Model.forward",
    ),
    "modeling_deepseekv2": DECODER_VENDOR_NAMES,
    "deepencoderv2": (
        "ImageEncoderViT",
        "ImageEncoderViT.forward",
        "Qwen2Decoder2Encoder",
        "CustomQwen2Decoder",
        "CustomQwen2Decoder.forward",
        "MlpProjector",
    ),
}


LOADERS = family_loaders(
    spec_class=ModelSpec,
    twin_module="llm_perf_opt.dsocr2.twin",
    required=REQUIRED_VENDOR_NAMES,
    model_module="modeling_deepseekocr2",
    model_class="DeepseekOCR2ForCausalLM",
    family=FAMILY,
)
