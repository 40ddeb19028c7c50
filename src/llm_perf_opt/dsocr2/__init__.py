"""DeepSeek-OCR 2: the second model family (SAM ViT-B -> Qwen2 decoder-as-encoder with learned query banks ->
linear projector -> the DeepSeek-V2 MoE decoder). Self-contained; the pieces identical to DeepSeek-OCR v1
(SAM, the projector, the DeepSeek-V2 decoder, their specs, costs and twin modules, the layout rules, the page
inputs, the analytic model's base, the session) are imported from `llm_perf_opt.deepseek_ocr_shared`, what any
family runs with (session, patches, decode, routing) from `llm_perf_opt.model_runtime`; the one v1 import left is
the family class (`family.py`), until the family contract replaces that subclassing."""
