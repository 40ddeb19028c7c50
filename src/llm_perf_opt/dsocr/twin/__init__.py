"""Architecture twin of DeepSeek-OCR: the vendor's module tree, shapes, call pattern and FLOPs, random weights.

`build_twin(ModelSpec.deepseek_ocr())` is the released model's structure (3,336,106,240 parameters,
the vendor's 4083 module names and classes, its state-dict keys); `build_twin(ModelSpec.tiny())` is a
narrow copy for tests. SAM ViT-B, the projector, the DeepSeek-V2 decoder (Llama attention and MoE), the shared
forward, the seeded initialisation and `TwinConfig` are the modules both generations share
(`deepseek_ocr_shared.twin`).

| file | job |
|---|---|
| `clip.py` | CLIP-L/14 of DeepSeek-OCR (`model.vision_model`): a ViT whose patch embeddings are SAM's features |
| `model.py` | the whole v1 twin: `DeepseekOCRModel` (SAM -> CLIP-L -> projector), its causal LM, `build_twin` |
"""

from llm_perf_opt.deepseek_ocr_shared.twin.config import TwinConfig
from llm_perf_opt.dsocr.twin.model import DeepseekOCRForCausalLM, DeepseekOCRModel, build_twin

__all__ = ["build_twin", "DeepseekOCRForCausalLM", "DeepseekOCRModel", "TwinConfig"]
