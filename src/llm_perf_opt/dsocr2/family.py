"""DeepSeek-OCR 2 behind the model-family seam (`llm_perf_opt.family.ModelFamily`).

One object, `FAMILY`, registered as "dsocr2" (`llm_perf_opt.families.BUILTIN`). It stands on the contract's
base class both DeepSeek-OCR families share (`deepseek_ocr_shared.family_base.DeepSeekOCRFamilyBase`), not on
v1's family: what is the same code as v1 (the prompt tokens, the measured forward, the decode program, the MoE
routing record, the vendor-code check) is that base's; what differs is v2's own: the spec and its named twins,
the workload knobs and their rules (768/1024 views, 2-6 crops of 768), the layout, the modes
(`conf/workload/ocr2/*.yaml`), the analytic model (cost namespace `dsocr2`), the twin and vendor loaders,
the runtime patches and checks (SAM's blocks and the encoder's layers as `for N` loops), the vendor code
it recognises (`DeepseekOCR2ForCausalLM`). Modules that import torch are imported inside the methods.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from llm_perf_opt.deepseek_ocr_shared.family_base import DeepSeekOCRFamilyBase
from llm_perf_opt.dsocr2 import parts as v2_parts
from llm_perf_opt.errors import ConfigError

MODES_FOLDER = "ocr2"  # conf/workload/ocr2/*.yaml: v2's modes (v1's are conf/workload/*.yaml)


class DeepSeekOCR2Family(DeepSeekOCRFamilyBase):
    name = "dsocr2"
    label = "DeepSeek-OCR 2"
    parts = v2_parts.VOCABULARY
    cost_namespace = "dsocr2"
    twin_specs = ("deepseek_ocr2", "ocr2_tiny")
    # The export stage's targets (`llm_perf_opt.export.targets`): v1's with CLIP-L replaced by one encoder layer
    # (the first Qwen2 layer) on the crop batch and on the global view; the whole encoder is refused by name.
    export_submodules = v2_parts.EXPORT_SUBMODULES
    export_blocks = (v2_parts.ENCODER_LAYER,)
    export_refused = (
        v2_parts.EXPORT_REFUSED
    )  # the whole encoder: its mask is data-dependent (one line each, at validation)
    onnx_block = v2_parts.ENCODER_LAYER  # written as ONNX (export.onnx) on the global view, with the dense layer 0
    vendor_architectures = ("DeepseekOCR2ForCausalLM",)
    # supports_batch (the shared batched inputs): the analytic model prices one page, a ConfigError at batch > 1

    # ------------------------------------------------------------------ configuration
    def spec_named(self, name: str) -> Any:
        from llm_perf_opt.dsocr2.spec import ModelSpec

        return ModelSpec.named(name)

    def spec_from_config_json(self, path: Any) -> Any:
        from llm_perf_opt.dsocr2.spec import ModelSpec

        return ModelSpec.from_config_json(path)

    def workload_for(self, workload_cfg: Any) -> Any:
        """v2's knobs (`dsocr2.layout.VisionWorkload`): a v1-only value is one line naming the field and v2."""
        from llm_perf_opt.dsocr2.layout import workload_from_config

        return workload_from_config(workload_cfg)

    def layout(self, workload: Any, width: int, height: int) -> Any:
        from llm_perf_opt.dsocr2.layout import compute_view_layout

        return compute_view_layout(workload, width, height)

    def modes(self, conf: Any = None) -> dict[str, Any]:
        """{mode name: VisionWorkload} of every `conf/workload/ocr2/*.yaml` (crop mode first)."""
        if conf is None:
            from llm_perf_opt.config.paths import conf_dir

            conf = conf_dir()
        return dict(_modes(Path(conf)))

    def single_view_workload(self, side: int) -> Any:
        from llm_perf_opt.dsocr2.layout import VisionWorkload

        return VisionWorkload(base_size=side, image_size=side, crop_mode=False)

    def report_columns(self) -> tuple[Any, ...]:
        """The sweep report's columns of this family (`dsocr2.report_columns`: the encoder's queries per page)."""
        from llm_perf_opt.dsocr2.report_columns import COLUMNS

        return COLUMNS

    # ------------------------------------------------------------------ the analytic model
    def analytic_model(self, spec: Any, layout: Any, seq_len: Optional[int] = None, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr2.analytic import DeepseekOCR2AnalyticModel

        return DeepseekOCR2AnalyticModel(spec, layout, seq_len, **kwargs)

    # ------------------------------------------------------------------ the runtime
    def vendor_required_names(self) -> Mapping[str, tuple[str, ...]]:
        """v2's vendor classes and functions (`dsocr2.session.REQUIRED_VENDOR_NAMES`)."""
        from llm_perf_opt.dsocr2.session import REQUIRED_VENDOR_NAMES

        return REQUIRED_VENDOR_NAMES

    def open_session(self, model_cfg: Any, runtime_cfg: Any = None, **kwargs: Any) -> Any:
        from llm_perf_opt.deepseek_ocr_shared.session import DeepSeekSession as DeepSeekOCRSession
        from llm_perf_opt.dsocr2 import patches  # noqa: F401 - registers v2's twin package and patches
        from llm_perf_opt.dsocr2.session import LOADERS

        session = DeepSeekOCRSession.open(model_cfg, runtime_cfg, loaders=LOADERS, part_list=v2_parts.PARTS, **kwargs)
        session.family = self
        session.patch_names = dict(patches.SESSION_PATCH_NAMES)
        return session

    def build_inputs(self, spec: Any, workload: Any, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr2.inputs import build_inputs

        return build_inputs(spec, workload, **kwargs)

    @property
    def runtime_checks(self) -> Sequence[Callable[..., Any]]:
        from llm_perf_opt.dsocr2.checks import RUNTIME_CHECKS

        return RUNTIME_CHECKS

    @property
    def trace_patches(self) -> tuple[str, ...]:
        from llm_perf_opt.dsocr2.patches import TRACE_PATCHES

        return TRACE_PATCHES

    def runtime_patches(self, session: Any, names: Iterable[str]) -> Any:
        from llm_perf_opt.dsocr2 import patches  # noqa: F401 - registers v2's patches
        from llm_perf_opt.model_runtime.patches import runtime_patches

        return runtime_patches(session, names)


@lru_cache(maxsize=8)
def _modes(conf: Path) -> tuple[tuple[str, Any], ...]:
    from omegaconf import OmegaConf

    from llm_perf_opt.dsocr2.layout import workload_from_config

    found = []
    for file in sorted((conf / "workload" / MODES_FOLDER).glob("*.yaml")):
        raw = OmegaConf.to_container(OmegaConf.load(file), resolve=True)
        if not isinstance(raw, dict):
            raise ConfigError(f"{file}: expected a mapping of workload knobs")
        try:
            workload = workload_from_config(OmegaConf.create(raw))
        except Exception as exc:  # noqa: BLE001 - a missing key: one line naming the file
            raise ConfigError(f"{file}: {exc}") from None
        found.append((str(raw.get("name", file.stem)), workload))
    return tuple(sorted(found, key=lambda item: (not item[1].crop_mode, item[1].image_size, item[0])))


FAMILY = DeepSeekOCR2Family()
