"""DeepSeek-OCR 2 behind the model-family seam (`llm_perf_opt.family.ModelFamily`).

One object, `FAMILY`, registered as "dsocr2" (`llm_perf_opt.families.BUILTIN`). It stands on the contract's
base class, not on v1's family: what is the same code as v1 (the session, the prompt tokens, the measured
forward, the decode program, the MoE routing record, the vendor-code check) is called as the shared
functions; what differs is v2's own: the spec and its named twins,
the workload knobs and their rules (768/1024 views, 2-6 crops of 768), the layout, the modes
(`conf/workload/ocr2/*.yaml`), the analytic model (cost namespace `dsocr2`), the twin and vendor loaders,
the runtime patches and checks (SAM's blocks and the encoder's layers as `for N` loops), the vendor code
it recognises (`DeepseekOCR2ForCausalLM`). Modules that import torch are imported inside the methods.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence

from llm_perf_opt.dsocr2 import parts as P
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.family import ModelFamily

MODES_FOLDER = "ocr2"  # conf/workload/ocr2/*.yaml: v2's modes (v1's are conf/workload/*.yaml)


class DeepSeekOCR2Family(ModelFamily):
    name = "dsocr2"
    label = "DeepSeek-OCR 2"
    parts = P.VOCABULARY
    cost_namespace = "dsocr2"
    stages = ("vision", "prefill", "decode")
    twin_specs = ("deepseek_ocr2", "ocr2_tiny")
    # The export stage's targets (`llm_perf_opt.export.targets`): v1's with CLIP-L replaced by one encoder layer
    # (the first Qwen2 layer) on the crop batch and on the global view; the whole encoder is refused by name.
    export_submodules = P.EXPORT_SUBMODULES
    export_blocks = (P.ENCODER_LAYER,)
    export_refused = P.EXPORT_REFUSED  # the whole encoder: its mask is data-dependent (one line each, at validation)
    onnx_block = P.ENCODER_LAYER  # written as ONNX (export.onnx) on the global view, with the dense layer 0
    workload_knobs = ("base_size", "image_size", "crop_mode", "tile_size")  # infer()'s, and the crop tile
    vendor_architectures = ("DeepseekOCR2ForCausalLM",)
    supports_batch = True  # v1's batched inputs (the analytic model prices one page: ConfigError at batch > 1)

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

    def console_summary(self, summary: Any) -> str:
        from llm_perf_opt.dsocr.layout import console_summary

        return console_summary(summary)

    # ------------------------------------------------------------------ the analytic model
    def analytic_model(self, spec: Any, layout: Any, seq_len: Optional[int] = None, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr2.analytic import DeepseekOCR2AnalyticModel

        return DeepseekOCR2AnalyticModel(spec, layout, seq_len, **kwargs)

    # ------------------------------------------------------------------ the runtime (v1's shared functions)
    def check_run(self, cfg: Any, spec: Any, workload: Any, width: int, height: int) -> int:
        """The prompt's text tokens, after checking the decode steps fit the model's positions."""
        from llm_perf_opt.dsocr.decode import check_prompt_positions

        prompt = self.prompt_tokens(cfg.workload.prompt, cfg.model.path if cfg.model.source == "vendor" else None)
        image_tokens = self.layout(workload, width, height).image_tokens
        return check_prompt_positions(
            cfg.trace.decode_steps, prompt, image_tokens, spec.decoder.max_position_embeddings
        )

    def prompt_tokens(self, prompt: str, model_dir: Optional[str]) -> Any:
        from llm_perf_opt.dsocr.inputs import prompt_tokens

        return prompt_tokens(prompt, model_dir)

    def check_vendor_code(self, path: Any) -> None:
        """v2's vendor classes and functions (`dsocr2.session.REQUIRED_VENDOR_NAMES`), checked by the shared
        vendor-code check (the same import of the vendor code, no model built)."""
        from llm_perf_opt.dsocr import vendor
        from llm_perf_opt.dsocr2.session import REQUIRED_VENDOR_NAMES

        vendor.check_vendor_code(path, REQUIRED_VENDOR_NAMES, self.label)

    def resolve_device(self, runtime_cfg: Any) -> Any:
        from llm_perf_opt.dsocr.session import resolve_device

        return resolve_device(runtime_cfg)

    def open_session(self, model_cfg: Any, runtime_cfg: Any = None, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr.session import DeepSeekOCRSession
        from llm_perf_opt.dsocr2 import patches  # noqa: F401 - registers v2's twin package and patches
        from llm_perf_opt.dsocr2.session import LOADERS

        session = DeepSeekOCRSession.open(model_cfg, runtime_cfg, loaders=LOADERS, part_list=P.PARTS, **kwargs)
        session.family = self
        session.patch_names = dict(patches.SESSION_PATCH_NAMES)
        return session

    def build_inputs(self, spec: Any, workload: Any, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr2.inputs import build_inputs

        return build_inputs(spec, workload, **kwargs)

    def batch_inputs(self, samples: Any) -> Any:
        from llm_perf_opt.dsocr.inputs import batch_inputs

        return batch_inputs(list(samples))

    @property
    def runtime_checks(self) -> Sequence[Callable[..., Any]]:
        from llm_perf_opt.dsocr2.checks import RUNTIME_CHECKS

        return RUNTIME_CHECKS

    @property
    def trace_patches(self) -> tuple[str, ...]:
        from llm_perf_opt.dsocr2.patches import TRACE_PATCHES

        return TRACE_PATCHES

    def runtime_patches(self, session: Any, names: Iterable[str]) -> Any:
        from llm_perf_opt.dsocr.patches import runtime_patches
        from llm_perf_opt.dsocr2 import patches  # noqa: F401 - registers v2's patches

        return runtime_patches(session, names)

    def load_runtime_log(self, path: Any) -> Any:
        from llm_perf_opt.dsocr.patches.runtime_log import load_runtime_log

        return load_runtime_log(path)

    def measure(
        self, model: Any, forward_kwargs: Mapping[str, Any], decode_steps: Iterable[int] = (), **kwargs: Any
    ) -> Any:
        from llm_perf_opt.dsocr.measure import measure_dsocr

        return measure_dsocr(model, forward_kwargs, decode_steps=tuple(decode_steps), **kwargs)

    # ------------------------------------------------------------------ decode and routing (v1's decoder)
    def check_kv_cache_path(self, model: Any, steps: int) -> None:
        from llm_perf_opt.dsocr.decode import check_kv_cache_path

        check_kv_cache_path(model, steps)

    def decode_program(self, steps: int, on_step: Any = None) -> Any:
        from llm_perf_opt.dsocr.decode import DecodeProgram

        return DecodeProgram(steps, on_step=on_step)

    def greedy_decode(self, run_step: Any, prefill: Any, steps: int, kwargs: Any, **more: Any) -> Any:
        from llm_perf_opt.dsocr.decode import greedy_decode

        return greedy_decode(run_step, prefill, steps, kwargs, **more)

    def routing_record(self, events: Any, session: Any) -> Any:
        from llm_perf_opt.dsocr.routing import routing_record

        return routing_record(events, session)

    def unrouted_expert_kernels(self, analytic: Any, run_dir: Any) -> dict[int, dict[str, int]]:
        from llm_perf_opt.dsocr.routing import unrouted_expert_kernels

        return unrouted_expert_kernels(analytic, Path(run_dir) / self.routing_file, self.parts.decoder_stack)

    def run_experts_by_load(self, *args: Any, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr.twin.decoder import run_experts_by_load

        return run_experts_by_load(*args, **kwargs)


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
