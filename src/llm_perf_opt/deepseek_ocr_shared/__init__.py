"""What DeepSeek-OCR v1 (`dsocr`) and DeepSeek-OCR 2 (`dsocr2`) really share: SAM ViT-B, the linear projector and
the DeepSeek-V2 MoE decoder (the same vendor code in both), their specs, cost formulas and twin modules, the
runtime patch bodies, the session and the families' base class. Not a family: only the two family packages import
it, never a generic layer.

| file | job |
|---|---|
| `workload_config.py` | `DeepSeekWorkloadConfig`: the workload schema both declare (`infer()`'s knobs, torch-free) |
| `spec.py` | `SamSpec`, `ProjectorSpec`, `DecoderSpec`, the `config.json` readers and checks both `ModelSpec`s use |
| `parts.py` | the parts both have (embedding, SAM, projector, decoder stack, norm, lm_head), `parts_with(encoder)` |
| `layout.py` | `ViewLayout`, the vendor's grid search, `layout_of` (each family's constants and knobs) |
| `inputs.py` | what `infer()` builds for a page (`Inputs`, `page_inputs`, `inputs_builder`, prompt tokens, batches) |
| `costs.py` | cost formulas of SAM, the projector, the decoder and the model (a family's vision: `register_vision`) |
| `analytic.py` | `DeepSeekOCRAnalyticBase`: the stages of a page, `StageCache`, `clear_caches`, `costs_dict` |
| `serving.py` | the serving model of an analytic model: batch rules, SAM's and the decoder's parameters, MoE shape |
| `checks.py` | the runtime checks both run (vision passes, decoder layers, decode loop, MoE routing, block loops) |
| `family_base.py` | `DeepSeekOCRFamilyBase`: the family contract's members both families run alike, one base class |
| `session.py` | `DeepSeekSession` (separators, decode step inputs, quiet prints); `family_loaders` (twin, vendor) |
| `patches.py` | the patch bodies both register (`vision_inputs`, `llm_stack`) and the `routing` patch |
| `twin/` | the twin modules both build: `sam`, `projector`, `decoder` (DeepSeek-V2), `model`, `config`, `weights` |
"""
