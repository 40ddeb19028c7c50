"""DeepSeek-OCR 2: the second model family (SAM ViT-B -> Qwen2 decoder-as-encoder with learned query banks ->
linear projector -> the DeepSeek-V2 MoE decoder). Self-contained; the pieces identical to DeepSeek-OCR v1
(SAM, the decoder, the seeded weights, the decode loop) are imported from `llm_perf_opt.dsocr`."""
