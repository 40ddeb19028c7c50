"""Serving engines: what a serving figure means. Each engine is a documented model of one way to run the model
(its time level, its batching, its memory, what it assumes), registered by name (`serve.engine`), printed and
written into serving.json with every figure. Pure Python + numpy; the family gives the stages at batch B.

| file | job |
|---|---|
| `engine.py` | `Engine` (level, kernels, batching, memory, assumptions) and the registry by name |
| `ideal_engine.py` | `ideal`: no engine, the roofline (the default) |
| `hf_eager.py` | `hf_eager`: the vendor's `infer()`, the eager level of the batch-B census + the generate loop |
| `cuda_graphs.py` | `cuda_graphs`: the same kernels replayed as a CUDA graph, the kernel level |
| `vllm.py` | `vllm`: continuous batching, paged KV, chunked prefill, fused kernels, the kernel level |
| `vllm_kernels.py` | the vLLM-like engine's fused kernel list, rewritten from the cost formulas' census |
| `paged_memory.py` | the vLLM-like engine's memory: a paged KV pool, the concurrency it holds |
| `generate_host.py` | `GenerateHost`: `generate()`'s host work per decode step (measured: `measure.generate_host`) |
| `timing.py` | `Timing`: prefill and decode step at batch B at an engine's level (`IdealTiming`, `LevelTiming`) |
| `select.py` | an engine's `Timing` for a model and device, refused by name when a figure it needs is missing |
"""
