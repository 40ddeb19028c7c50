"""Architecture twin of DeepSeek-OCR: the vendor's module tree, shapes, call pattern and FLOPs, random weights.

`build_twin(ModelSpec.deepseek_ocr())` is the released model's structure (3,336,106,240 parameters,
the vendor's 4083 module names and classes, its state-dict keys); `build_twin(ModelSpec.tiny())` is a
narrow copy for tests. Modules by idea: `sam` (SAM ViT-B), `clip` (CLIP-L fed with SAM features),
`projector`, `decoder` (DeepSeek-V2 with Llama attention and MoE), `model` (assembly, forward,
`build_twin`), `weights` (seeded initialisation), `config` (`TwinConfig`).
"""

from llm_perf_opt.deepseek_ocr_shared.twin.config import TwinConfig
from llm_perf_opt.dsocr.twin.model import DeepseekOCRForCausalLM, DeepseekOCRModel, build_twin

__all__ = ["build_twin", "DeepseekOCRForCausalLM", "DeepseekOCRModel", "TwinConfig"]
