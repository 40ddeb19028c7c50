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

from llm_perf_opt.dsocr import parts as P
from llm_perf_opt.family import ModelFamily

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


class DeepSeekOCRFamily(ModelFamily):
    name = "dsocr"
    label = "DeepSeek-OCR"
    parts = P.VOCABULARY
    cost_namespace = "dsocr"
    stages = ("vision", "prefill", "decode")
    twin_specs = ("deepseek_ocr", "tiny")
    export_submodules = EXPORT_SUBMODULES
    # export_blocks (none: no block inside a vision part is exported on its own) and onnx_block (None: the first
    # CLIP block, export.targets.onnx_targets' default) are the contract's defaults
    workload_knobs = ("base_size", "image_size", "crop_mode", "tile_size")  # infer()'s, and the crop tile
    vendor_architectures = ("DeepseekOCRForCausalLM",)
    supports_batch = True  # batch_inputs: several pages as one generate() batch

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
        return P.modes(conf)

    def single_view_workload(self, side: int) -> Any:
        """A no-crop workload whose one view has this side (one call of each vision part)."""
        from llm_perf_opt.dsocr.layout import VisionWorkload

        return VisionWorkload(base_size=side, image_size=side, crop_mode=False)

    def console_summary(self, summary: Any) -> str:
        from llm_perf_opt.dsocr.layout import console_summary

        return console_summary(summary)

    # ------------------------------------------------------------------ the analytic model
    def analytic_model(self, spec: Any, layout: Any, seq_len: Optional[int] = None, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel

        return DeepseekOCRAnalyticModel(spec, layout, seq_len, **kwargs)

    # ------------------------------------------------------------------ the runtime
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
        """The directory's config, the transformers version, and the vendor code imported (no model built) with
        every class and function the pipeline needs (PatchError naming what changed)."""
        from llm_perf_opt.dsocr import vendor

        vendor.check_vendor_code(path, vendor.REQUIRED_VENDOR_NAMES, self.label)

    def resolve_device(self, runtime_cfg: Any) -> Any:
        from llm_perf_opt.dsocr.session import resolve_device

        return resolve_device(runtime_cfg)

    def open_session(self, model_cfg: Any, runtime_cfg: Any = None, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr.session import DeepSeekOCRSession

        session = DeepSeekOCRSession.open(model_cfg, runtime_cfg, **kwargs)
        session.family = self  # the stages that get the session (export) reach the family through it
        return session

    def build_inputs(self, spec: Any, workload: Any, **kwargs: Any) -> Any:
        """One page's model inputs (`dsocr.inputs.build_inputs`)."""
        from llm_perf_opt.dsocr.inputs import build_inputs

        return build_inputs(spec, workload, **kwargs)

    def batch_inputs(self, samples: Any) -> Any:
        """Several pages' inputs as one batch, as generate() takes them (`dsocr.inputs.batch_inputs`)."""
        from llm_perf_opt.dsocr.inputs import batch_inputs

        return batch_inputs(list(samples))

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

    def load_runtime_log(self, path: Any) -> Any:
        from llm_perf_opt.dsocr.patches.runtime_log import load_runtime_log

        return load_runtime_log(path)

    def measure(
        self, model: Any, forward_kwargs: Mapping[str, Any], decode_steps: Iterable[int] = (), **kwargs: Any
    ) -> Any:
        """Measured FLOPs of the prefill and the given decode steps (`dsocr.measure.measure_dsocr`)."""
        from llm_perf_opt.dsocr.measure import measure_dsocr

        return measure_dsocr(model, forward_kwargs, decode_steps=tuple(decode_steps), **kwargs)

    # ------------------------------------------------------------------ decode and routing
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
        """The MoE routing of a capture's gate events (`dsocr.routing.RoutingRecord`), or None without any."""
        from llm_perf_opt.dsocr.routing import routing_record

        return routing_record(events, session)

    def unrouted_expert_kernels(self, analytic: Any, run_dir: Any) -> dict[int, dict[str, int]]:
        """The routed-expert kernels the analytic model lists for experts no token reached
        (`dsocr.routing.unrouted_expert_kernels`, from the run's routing record)."""
        from pathlib import Path

        from llm_perf_opt.dsocr.routing import unrouted_expert_kernels

        return unrouted_expert_kernels(analytic, Path(run_dir) / self.routing_file, self.parts.decoder_stack)

    def run_experts_by_load(self, *args: Any, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr.twin.decoder import run_experts_by_load

        return run_experts_by_load(*args, **kwargs)


FAMILY = DeepSeekOCRFamily()
