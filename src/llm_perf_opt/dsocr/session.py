"""DeepSeek-OCR v1's session: the twin by `model.spec` (`dsocr.twin.build_twin`) and the vendor code
(`modeling_deepseekocr`, `deepencoder`, `modeling_deepseekv2`) through `model_runtime.vendor.load_vendor` (the
loaders both generations share, `deepseek_ocr_shared.session.family_loaders`, with v1's names), in the session
both generations share (`deepseek_ocr_shared.session.DeepSeekSession`).

    with DeepSeekOCRSession.open(cfg.model, cfg.runtime) as session:
        out = session.forward(inputs)
"""

from __future__ import annotations

from llm_perf_opt.deepseek_ocr_shared.session import DECODER_VENDOR_NAMES, DeepSeekSession, family_loaders
from llm_perf_opt.dsocr.parts import PARTS
from llm_perf_opt.dsocr.patches import builtin  # noqa: F401 - registers v1's patches and its twin package
from llm_perf_opt.dsocr.spec import ModelSpec

FAMILY = "DeepSeek-OCR"
# What the pipeline relies on in the vendor code, by module: the classes the twin mirrors and the patch
# points. A missing name means the vendor code changed; the session refuses it with a PatchError.
REQUIRED_VENDOR_NAMES: dict[str, tuple[str, ...]] = {
    "modeling_deepseekocr": (
        "DeepseekOCRForCausalLM",
        "DeepseekOCRModel",
        "DeepseekOCRConfig",
        "DeepseekOCRModel.forward",
    ),
    "modeling_deepseekv2": DECODER_VENDOR_NAMES,
    "deepencoder": ("ImageEncoderViT", "VitModel", "MlpProjector", "quick_gelu", "Block", "NoTPTransformerBlock"),
}


LOADERS = family_loaders(
    spec_class=ModelSpec,
    twin_module="llm_perf_opt.dsocr.twin",
    required=REQUIRED_VENDOR_NAMES,
    model_module="modeling_deepseekocr",
    model_class="DeepseekOCRForCausalLM",
    family=FAMILY,
)


class DeepSeekOCRSession(DeepSeekSession):
    """DeepSeek-OCR v1's loaded model (vendor or twin) and how to run it; open with `DeepSeekOCRSession.open(...)`."""

    loaders = LOADERS
    parts = PARTS
