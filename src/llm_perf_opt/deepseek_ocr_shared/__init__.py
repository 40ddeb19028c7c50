"""What DeepSeek-OCR v1 (`dsocr`) and DeepSeek-OCR 2 (`dsocr2`) really share: SAM ViT-B, the linear projector and
the DeepSeek-V2 MoE decoder (the same vendor code in both), their specs, cost formulas and twin modules, the
runtime patch bodies and the session. Not a family: only the two family packages import it, never a generic layer.

| file | job |
|---|---|
| `spec.py` | `SamSpec`, `ProjectorSpec`, `DecoderSpec`, the `config.json` readers and checks both `ModelSpec`s use |
| `parts.py` | the parts both have (embedding, SAM, projector, decoder stack, norm, lm_head), `parts_with(encoder)` |
| `session.py` | `DeepSeekSession`: the separators, the decode step's inputs and the vendor's quiet prints |
| `patches.py` | the patch bodies both register (`vision_inputs`, `llm_stack`) and the `routing` patch |
| `twin/` | the twin modules both build: `sam`, `projector`, `decoder` (DeepSeek-V2, MoE), `config`, `weights` |
"""
