"""DeepSeek-OCR 2 behind the model-family seam (`llm_perf_opt.family.ModelFamily`).

One object, `FAMILY`, registered as "dsocr2" (`llm_perf_opt.families.BUILTIN`). What is the same code as
v1 (the session, the prompt tokens, the measured forward, the decode program, the MoE routing record, the
seeded weights) is v1's family's method, inherited; what differs is v2's own: the spec and its named twins,
the workload knobs and their rules (768/1024 views, 2-6 crops of 768), the layout, the modes
(`conf/workload/ocr2/*.yaml`), the analytic model (cost namespace `dsocr2`), the twin and vendor loaders,
the runtime patches and checks (SAM's blocks and the encoder's layers as `for N` loops), the vendor code
it recognises (`DeepseekOCR2ForCausalLM`). Modules that import torch are imported inside the methods.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping, Optional

from llm_perf_opt.dsocr.family import DeepSeekOCRFamily  # the one v1 import: the family contract replaces it
from llm_perf_opt.dsocr2 import parts as P
from llm_perf_opt.errors import ConfigError

MODES_FOLDER = "ocr2"  # conf/workload/ocr2/*.yaml: v2's modes (v1's are conf/workload/*.yaml)


class DeepSeekOCR2Family(DeepSeekOCRFamily):
    name = "dsocr2"
    label = "DeepSeek-OCR 2"
    parts = P.VOCABULARY
    cost_namespace = "dsocr2"
    twin_specs = ("deepseek_ocr2", "ocr2_tiny")
    # The export stage's targets (`llm_perf_opt.export.targets`): v1's with CLIP-L replaced by one encoder layer
    # (the first Qwen2 layer) on the crop batch and on the global view; the whole encoder is refused by name.
    export_submodules = P.EXPORT_SUBMODULES
    export_blocks = (P.ENCODER_LAYER,)
    export_refused = P.EXPORT_REFUSED  # the whole encoder: its mask is data-dependent (one line each, at validation)
    onnx_block = P.ENCODER_LAYER  # written as ONNX (export.onnx) on the global view, with the dense layer 0
    vendor_architectures = ("DeepseekOCR2ForCausalLM",)
    package = "llm_perf_opt.dsocr2"  # build_inputs, runtime_checks, trace_patches: this package's modules

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

    def clear_analytic_caches(self) -> None:
        from llm_perf_opt.deepseek_ocr_shared.analytic import clear_caches
        from llm_perf_opt.dsocr2.analytic import _stages_for

        clear_caches()
        _stages_for.cache_clear()

    # ------------------------------------------------------------------ the runtime
    def vendor_required_names(self) -> Optional[Mapping[str, tuple[str, ...]]]:
        """v2's vendor classes and functions (`dsocr2.session.REQUIRED_VENDOR_NAMES`), checked by v1's
        `check_vendor_code` (the same import of the vendor code, no model built)."""
        from llm_perf_opt.dsocr2.session import REQUIRED_VENDOR_NAMES

        return REQUIRED_VENDOR_NAMES

    def open_session(self, model_cfg: Any, runtime_cfg: Any = None, **kwargs: Any) -> Any:
        from llm_perf_opt.deepseek_ocr_shared.session import DeepSeekSession as DeepSeekOCRSession
        from llm_perf_opt.dsocr2 import patches  # noqa: F401 - registers v2's twin package and patches
        from llm_perf_opt.dsocr2.session import LOADERS

        session = DeepSeekOCRSession.open(model_cfg, runtime_cfg, loaders=LOADERS, part_list=P.PARTS, **kwargs)
        session.family = self
        session.patch_names = dict(patches.SESSION_PATCH_NAMES)
        return session

    def runtime_patches(self, session: Any, names: Iterable[str]) -> Any:
        from llm_perf_opt.dsocr2 import patches  # noqa: F401 - registers v2's patches

        return super().runtime_patches(session, names)


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
