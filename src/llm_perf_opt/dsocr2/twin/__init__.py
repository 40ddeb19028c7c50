"""Architecture twin of DeepSeek-OCR 2: the vendor's module tree, shapes, call pattern and FLOPs, random weights.

`build_twin(ModelSpec.deepseek_ocr2())` is the released model's structure (3,389,119,360 parameters, 4,204
named modules, the 2,707 names of the vendor's weight index); `build_twin(ModelSpec.tiny())` a narrow copy
for tests. SAM, the projector and the DeepSeek-V2 decoder are the modules both generations share
(`deepseek_ocr_shared.twin`).

| file | job |
|---|---|
| `encoder.py` | DeepEncoder V2 (`model.qwen2_model`): a Qwen2 model as encoder, query banks appended to SAM tokens |
| `model.py` | the whole v2 twin: `DeepseekOCR2Model` (vision + decoder), `DeepseekOCR2ForCausalLM`, `build_twin` |
"""

from llm_perf_opt.dsocr2.twin.model import DeepseekOCR2ForCausalLM, DeepseekOCR2Model, build_twin

__all__ = ["build_twin", "DeepseekOCR2ForCausalLM", "DeepseekOCR2Model"]
