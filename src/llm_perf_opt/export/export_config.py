"""The `export` section: torch.export of submodules (`./dev export`, `trace.export=true`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from llm_perf_opt.config.fields import _one_of
from llm_perf_opt.errors import ConfigError

EXPORT_MOE_REMEDIES = ("fixed_routing", "none")


@dataclass
class ExportConfig:
    """`./dev export` / `trace.export`: torch.export of submodules at the shapes of this workload and page."""

    submodules: Optional[list[str]] = None  # null: every one the workload produces (no crops: no *.crops)
    moe_layer: Optional[int] = None  # decoder layer exported as `moe_layer`; null: the first MoE layer
    decode_layer: int = 0  # decoder layer exported as `decode_layer` (one token over a KV cache)
    decode_context: Optional[int] = None  # KV-cache length for decode_layer; null: the prompt (first step)
    moe_remedy: str = "fixed_routing"  # when MoE routing refuses export: fixed_routing or none
    callgraph: bool = True  # TorchLens capture of each submodule alone, to reconcile op counts
    check_outputs: bool = True  # run each exported program on the recorded inputs against the real output
    onnx: bool = False  # ONNX files for a CLIP block and the dense decoder layer (needs the `onnx` extra)
    onnx_rtol: float = 1e-4  # ONNX Runtime (CPU) vs the eager module: |ort - eager| <= atol + rtol·|eager|
    onnx_atol: float = 1e-4

    def __post_init__(self) -> None:
        if self.submodules is not None:
            if len(self.submodules) == 0:
                raise ConfigError.field(
                    "export.submodules", self.submodules, "must name at least one submodule (or be null)"
                )
            # which names exist is the model family's rule (ModelFamily.check_export, at validation)
        if self.moe_layer is not None and self.moe_layer < 0:
            raise ConfigError.field("export.moe_layer", self.moe_layer, "must be >= 0 or null")
        if self.decode_layer < 0:
            raise ConfigError.field("export.decode_layer", self.decode_layer, "must be >= 0")
        if self.decode_context is not None and self.decode_context < 1:
            raise ConfigError.field("export.decode_context", self.decode_context, "must be >= 1 or null")
        _one_of("export.moe_remedy", self.moe_remedy, EXPORT_MOE_REMEDIES)
        for name in ("onnx_rtol", "onnx_atol"):
            value = getattr(self, name)
            if not 0 <= value < 1:
                raise ConfigError.field(f"export.{name}", value, "must be in [0, 1)")
