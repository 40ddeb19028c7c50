"""The twin modules both DeepSeek-OCR generations build (the same vendor code in both):

| file | job |
|---|---|
| `sam.py` | SAM ViT-B (`ImageEncoderViT`), its blocks and neck |
| `projector.py` | `MlpProjector` (linear) |
| `decoder.py` | the DeepSeek-V2 decoder: Llama attention, dense MLP, MoE (gate, routed and shared experts), RoPE |
| `model.py` | the language side and the forward around a vision stack, the causal-LM root, `build_root` |
| `config.py` | `TwinConfig`: the config attributes the decoder code reads |
| `weights.py` | seeded initialisation of a built twin (one rule for every family) |
"""
