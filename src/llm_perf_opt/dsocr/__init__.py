"""The DeepSeek-OCR (v1) model family: everything v1-specific behind the family seam (spec, view layout, parts and
modes, inputs, the architecture twin, the session, runtime patches and checks, cost formulas and their
composition). A plug-in above the generic layers: they reach it through `families`, never by import; what v1
shares with DeepSeek-OCR 2 is imported from `deepseek_ocr_shared`.

| file | job |
|---|---|
| `family.py` | v1 behind the model-family seam: `FAMILY`, v1's own members on the shared base class |
| `spec.py` | `ModelSpec`: every dimension of DeepSeek-OCR the pipeline needs (CLIP-L's own: `ClipSpec`) |
| `parts.py` | the one vocabulary of DeepSeek-OCR: its parts (alias, module path, label, colour) and its modes |
| `layout.py` | the view layout of a page: crop grid, tensor sizes, image-token counts, as the vendor's `infer()` |
| `inputs.py` | the tensors v1's `infer()` builds for one page, without running `infer()` |
| `costs.py` | cost formulas of v1's own module classes (CLIP-L fed with SAM features) and v1's vision |
| `analytic.py` | the DeepSeek-OCR analytic model: per-stage, per-module costs from `ModelSpec` + `ViewLayout` |
| `session.py` | v1's session: the twin by `model.spec`, or the vendor code, in the shared `DeepSeekSession` |
| `checks.py` | v1's runtime checks, plugged into the generic grouping (`RUNTIME_CHECKS`) |
| `patches/` | v1's runtime patches of the loaded model code (vendor or twin) |
| `twin/` | the architecture twin of DeepSeek-OCR: the vendor's module tree and shapes, random weights |
"""
