"""DeepSeek-OCR (v1) behind the model-family seam (`llm_perf_opt.family.ModelFamily`).

One object, `FAMILY`, created once; the family registry (`llm_perf_opt.families`) names it
"llm_perf_opt.dsocr.family:FAMILY". Each method hands the generic layers one thing this package knows: the
spec, the workload knobs and their rules, the view layout, the modes, the analytic model, the session, the
inputs, the runtime checks and patches, the measured forward, the decode program, the routing record. Modules
that import torch are imported inside the methods, so asking for the family (a sweep, `./dev analyze`)
imports no torch.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from llm_perf_opt.deepseek_ocr_shared.family_base import DeepSeekOCRFamilyBase
from llm_perf_opt.dsocr import parts as v1_parts

# The submodules the export stage knows for this family (llm_perf_opt.export.targets maps each to a call).
EXPORT_SUBMODULES = (
    "sam.crops",
    "sam.global",
    "clip.crops",
    "clip.global",
    "projector.crops",
    "projector.global",
    "dense_layer",
    "moe_layer",
    "decode_layer",
)


class DeepSeekOCRFamily(DeepSeekOCRFamilyBase):
    name = "dsocr"
    label = "DeepSeek-OCR"
    parts = v1_parts.VOCABULARY
    cost_namespace = "dsocr"
    twin_specs = ("deepseek_ocr", "tiny")
    export_submodules = EXPORT_SUBMODULES
    # export_blocks (none: no block inside a vision part is exported on its own) and onnx_block (None: the first
    # CLIP block, export.targets.onnx_targets' default) are the contract's defaults
    vendor_architectures = ("DeepseekOCRForCausalLM",)

    # ------------------------------------------------------------------ configuration
    def spec_named(self, name: str) -> Any:
        from llm_perf_opt.dsocr.spec import ModelSpec

        return ModelSpec.named(name)

    def spec_from_config_json(self, path: Any) -> Any:
        from llm_perf_opt.dsocr.spec import ModelSpec

        return ModelSpec.from_config_json(path)

    def workload_for(self, workload_cfg: Any) -> Any:
        """The workload's knobs as the DeepSeek-OCR type, which checks the model's rules."""
        from llm_perf_opt.dsocr.layout import VisionWorkload

        w = workload_cfg
        bounds = {k: getattr(w, k) for k in ("min_num", "max_num") if getattr(w, k, None) is not None}
        return VisionWorkload(
            base_size=w.base_size, image_size=w.image_size, crop_mode=w.crop_mode, tile_size=w.tile_size, **bounds
        )

    def layout(self, workload: Any, width: int, height: int) -> Any:
        from llm_perf_opt.dsocr.layout import compute_view_layout

        return compute_view_layout(workload, width, height)

    def modes(self, conf: Any = None) -> dict[str, Any]:
        return v1_parts.modes(conf)

    def single_view_workload(self, side: int) -> Any:
        """A no-crop workload whose one view has this side (one call of each vision part)."""
        from llm_perf_opt.dsocr.layout import VisionWorkload

        return VisionWorkload(base_size=side, image_size=side, crop_mode=False)

    # ------------------------------------------------------------------ the analytic model
    def analytic_model(self, spec: Any, layout: Any, seq_len: Optional[int] = None, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel

        return DeepseekOCRAnalyticModel(spec, layout, seq_len, **kwargs)

    # ------------------------------------------------------------------ the runtime
    def vendor_required_names(self) -> Mapping[str, tuple[str, ...]]:
        """v1's vendor classes and functions (`dsocr.session.REQUIRED_VENDOR_NAMES`)."""
        from llm_perf_opt.dsocr.session import REQUIRED_VENDOR_NAMES

        return REQUIRED_VENDOR_NAMES

    def open_session(self, model_cfg: Any, runtime_cfg: Any = None, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr.session import DeepSeekOCRSession

        session = DeepSeekOCRSession.open(model_cfg, runtime_cfg, **kwargs)
        session.family = self  # the stages that get the session (export) reach the family through it
        return session

    def build_inputs(self, spec: Any, workload: Any, **kwargs: Any) -> Any:
        """One page's model inputs (`dsocr.inputs.build_inputs`)."""
        from llm_perf_opt.dsocr.inputs import build_inputs

        return build_inputs(spec, workload, **kwargs)

    @property
    def runtime_checks(self) -> Sequence[Callable[..., Any]]:
        """The grouping's checks (`dsocr.checks.RUNTIME_CHECKS`)."""
        from llm_perf_opt.dsocr.checks import RUNTIME_CHECKS

        return RUNTIME_CHECKS

    @property
    def trace_patches(self) -> tuple[str, ...]:
        """`dsocr.patches.TRACE_PATCHES` (importing it registers the family's patches)."""
        from llm_perf_opt.dsocr.patches import TRACE_PATCHES

        return TRACE_PATCHES

    def runtime_patches(self, session: Any, names: Iterable[str]) -> Any:
        from llm_perf_opt.dsocr.patches import runtime_patches

        return runtime_patches(session, names)


FAMILY = DeepSeekOCRFamily()
