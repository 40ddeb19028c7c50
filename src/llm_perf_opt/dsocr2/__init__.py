"""DeepSeek-OCR 2: the second model family (SAM ViT-B -> Qwen2 decoder-as-encoder with learned query banks ->
linear projector -> the DeepSeek-V2 MoE decoder). A plug-in above the generic layers, reached through `families`;
the pieces identical to DeepSeek-OCR v1 (SAM, the projector, the DeepSeek-V2 decoder, their specs, costs and twin
modules, the layout rules, the page inputs, the analytic model's base, the session, the family's base class) are
imported from `llm_perf_opt.deepseek_ocr_shared`, what any family runs with (session, patches, decode, routing) from
`llm_perf_opt.model_runtime`; nothing of v1 (`dsocr`) is imported.

| file | job |
|---|---|
| `family.py` | DeepSeek-OCR 2 behind the model-family seam: `FAMILY`, v2's own members on the shared base class |
| `spec.py` | `ModelSpec` of DeepSeek-OCR 2: every dimension the pipeline needs, read in the vendor code |
| `parts.py` | the vocabulary of DeepSeek-OCR 2: its parts (alias, module path, label, colour, stage) |
| `layout.py` | the view layout of a page under v2's `infer()`: crop grid, tensor sizes, image-token counts |
| `inputs.py` | the tensors v2's `infer()` builds for one page, without running `infer()` |
| `cost_formulas.py` | cost formulas of v2's own module classes, registered under the family prefix `dsocr2.` |
| `analytic.py` | the DeepSeek-OCR 2 analytic model: per-stage, per-module costs from `ModelSpec` + `ViewLayout` |
| `agreement.py` | analytic against measured for v2: v1's verification with the family's cost namespace |
| `session.py` | v2's loaders for the shared session: the twin by `model.spec`, or the vendor code |
| `patches.py` | v2's runtime patches: the bodies both generations share, aimed at v2's classes |
| `checks.py` | v2's runtime checks, plugged into the generic grouping (`RUNTIME_CHECKS`) |
| `report_columns.py` | v2's own report columns: what its encoder does per page, read from the run's layout |
| `twin/` | the architecture twin of DeepSeek-OCR 2: DeepEncoder V2 and the assembly |
"""
