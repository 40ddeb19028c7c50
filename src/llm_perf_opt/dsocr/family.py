"""DeepSeek-OCR (v1) behind the model-family seam (`llm_perf_opt.family.ModelFamily`).

One object, `FAMILY`, created once; the family registry (`llm_perf_opt.families`) names it
"llm_perf_opt.dsocr.family:FAMILY". Each method hands the generic layers one thing this package knows: the
spec, the workload knobs and their rules, the view layout, the modes, the analytic model, the session, the
inputs, the runtime checks and patches, the measured forward, the decode program, the routing record. Modules
that import torch are imported inside the methods, so asking for the family (a sweep, `./dev analyze`)
imports no torch.
"""

from __future__ import annotations

import importlib
from typing import Any, Callable, Iterable, Mapping, Optional

from llm_perf_opt.dsocr import parts as P
from llm_perf_opt.errors import ConfigError

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
# The workload knobs of `infer(base_size, image_size, crop_mode)` (and the tile of dynamic_preprocess).
WORKLOAD_KNOBS = ("base_size", "image_size", "crop_mode", "tile_size")


class DeepSeekOCRFamily:
    name = "dsocr"
    label = "DeepSeek-OCR"
    parts = P.VOCABULARY
    cost_namespace = "dsocr"
    stages = ("vision", "prefill", "decode")
    twin_specs = ("deepseek_ocr", "tiny")
    export_submodules = EXPORT_SUBMODULES
    export_blocks: tuple = ()  # no block inside a vision part is exported on its own (export.targets)
    onnx_block = None  # export.onnx writes the first CLIP block (export.targets.onnx_targets' default)
    workload_knobs = WORKLOAD_KNOBS
    vendor_architectures = ("DeepseekOCRForCausalLM",)

    package = "llm_perf_opt.dsocr"  # the family's package: its inputs, checks and patches modules

    def __repr__(self) -> str:
        return f"<model family {self.name}: {self.label}>"

    def _module(self, name: str) -> Any:
        """The family package's module `name` (imported on first use: it may import torch)."""
        return importlib.import_module(f"{self.package}.{name}")

    # ------------------------------------------------------------------ configuration
    def check_model(self, model_cfg: Any) -> None:
        """The model config's family-specific rules: a twin's named spec."""
        if model_cfg.source == "twin" and model_cfg.spec not in self.twin_specs:
            raise ConfigError.field(
                "model.spec", model_cfg.spec, f"must be one of {', '.join(self.twin_specs)} (model.family={self.name})"
            )

    def spec_named(self, name: str) -> Any:
        from llm_perf_opt.dsocr.spec import ModelSpec

        return ModelSpec.named(name)

    def spec_from_config_json(self, path: Any) -> Any:
        from llm_perf_opt.dsocr.spec import ModelSpec

        return ModelSpec.from_config_json(path)

    def spec_for(self, model_cfg: Any) -> Any:
        """The ModelSpec without building a model: the twin's named spec or the vendor's config.json."""
        self.check_model(model_cfg)
        if model_cfg.source == "vendor":
            try:
                return self.spec_from_config_json(model_cfg.path)
            except (TypeError, ValueError, AttributeError, KeyError) as exc:  # a value of the wrong type or shape
                if isinstance(exc, ConfigError):
                    raise
                raise ConfigError(
                    f"model.path={model_cfg.path!r}: config.json has a value of the wrong type or "
                    f"shape ({type(exc).__name__}: {exc})"
                ) from None
        return self.spec_named(model_cfg.spec)

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

    def check_export(self, submodules: Optional[Iterable[str]]) -> None:
        refused = getattr(self, "export_refused", {})
        for name in submodules or ():
            if name in refused:
                raise ConfigError.field("export.submodules", name, f"{refused[name]} (model.family={self.name})")
            if name not in self.export_submodules:
                raise ConfigError.field(
                    "export.submodules",
                    name,
                    f"must be one of {', '.join(self.export_submodules)} (model.family={self.name})",
                )

    def report_columns(self) -> tuple[Any, ...]:
        """The sweep report's columns of this family beyond the generic ones (`report.table.Column`s): none for
        v1 (its crop grid, views and mode knobs are generic columns: OCR-2 tiles pages too)."""
        return ()

    # ------------------------------------------------------------------ the analytic model
    def analytic_model(self, spec: Any, layout: Any, seq_len: Optional[int] = None, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel

        return DeepseekOCRAnalyticModel(spec, layout, seq_len, **kwargs)

    def clear_analytic_caches(self) -> None:
        from llm_perf_opt.deepseek_ocr_shared.analytic import clear_caches

        clear_caches()

    # ------------------------------------------------------------------ the runtime
    def check_run(self, cfg: Any, spec: Any, workload: Any, width: int, height: int) -> int:
        """The prompt's text tokens, after checking the decode steps fit the model's positions."""
        from llm_perf_opt.model_runtime.decode import check_decode_steps

        before, after, _ = self.prompt_tokens(
            cfg.workload.prompt, cfg.model.path if cfg.model.source == "vendor" else None
        )
        check_decode_steps(
            cfg.trace.decode_steps,
            1 + self.layout(workload, width, height).image_tokens + len(before) + len(after),
            spec.decoder.max_position_embeddings,
        )
        return len(before) + len(after)

    def prompt_tokens(self, prompt: str, model_dir: Optional[str]) -> Any:
        from llm_perf_opt.deepseek_ocr_shared.inputs import prompt_tokens

        return prompt_tokens(prompt, model_dir)

    def check_vendor_code(self, path: Any) -> None:
        """The directory's config, the transformers version, and the vendor code imported (no model built) with
        every class and function the pipeline needs (PatchError naming what changed)."""
        from pathlib import Path

        from transformers.utils import logging as hf_logging

        from llm_perf_opt.model_runtime import vendor
        from llm_perf_opt.model_runtime.torchvision_stand_in import torchvision_stand_in

        path = Path(path)
        vendor.read_vendor_config(path)
        vendor.check_transformers()
        verbosity = hf_logging.get_verbosity()
        hf_logging.set_verbosity_error()  # a check prints nothing but its verdict (the session shows the warnings)
        try:
            with torchvision_stand_in():
                config = vendor._vendor_config(path)  # noqa: SLF001 - the vendor code's import, no model built
                modules = vendor.package_modules(type(config).__module__.rpartition(".")[0])
        finally:
            hf_logging.set_verbosity(verbosity)
        vendor.check_vendor_modules(modules, str(path), self.vendor_required_names(), self.label)

    def vendor_required_names(self) -> Optional[Mapping[str, tuple[str, ...]]]:
        """The vendor classes and functions the pipeline needs, by module (`dsocr.session.REQUIRED_VENDOR_NAMES`)."""
        from llm_perf_opt.dsocr.session import REQUIRED_VENDOR_NAMES

        return REQUIRED_VENDOR_NAMES

    def resolve_device(self, runtime_cfg: Any) -> Any:
        from llm_perf_opt.model_runtime.session import resolve_device

        return resolve_device(runtime_cfg)

    def open_session(self, model_cfg: Any, runtime_cfg: Any = None, **kwargs: Any) -> Any:
        from llm_perf_opt.dsocr.session import DeepSeekOCRSession

        session = DeepSeekOCRSession.open(model_cfg, runtime_cfg, **kwargs)
        session.family = self  # the stages that get the session (export) reach the family through it
        return session

    def build_inputs(self, spec: Any, workload: Any, **kwargs: Any) -> Any:
        """One page's model inputs: the family package's `inputs.build_inputs`."""
        return self._module("inputs").build_inputs(spec, workload, **kwargs)

    def batch_inputs(self, samples: Any) -> Any:
        """Several pages' inputs as one batch, as generate() takes them (`dsocr.inputs.batch_inputs`)."""
        from llm_perf_opt.deepseek_ocr_shared.inputs import batch_inputs

        return batch_inputs(list(samples))

    @property
    def runtime_checks(self) -> Mapping[str, Callable[..., Any]]:
        """The family package's `checks.RUNTIME_CHECKS`."""
        return self._module("checks").RUNTIME_CHECKS

    @property
    def trace_patches(self) -> tuple[str, ...]:
        """The family package's `patches.TRACE_PATCHES` (importing it registers the family's patches)."""
        return self._module("patches").TRACE_PATCHES

    def runtime_patches(self, session: Any, names: Iterable[str]) -> Any:
        from llm_perf_opt.dsocr.patches import runtime_patches

        return runtime_patches(session, names)

    runtime_log_file = "runtime_log.json"

    def load_runtime_log(self, path: Any) -> Any:
        from llm_perf_opt.model_runtime.runtime_log import load_runtime_log

        return load_runtime_log(path)

    def measure(
        self, model: Any, forward_kwargs: Mapping[str, Any], decode_steps: Iterable[int] = (), **kwargs: Any
    ) -> Any:
        """Measured FLOPs of the prefill and the given decode steps (`dsocr.measure.measure_dsocr`)."""
        from llm_perf_opt.model_runtime.measure import measure_forward as measure_dsocr

        return measure_dsocr(model, forward_kwargs, decode_steps=tuple(decode_steps), **kwargs)

    # ------------------------------------------------------------------ decode and routing
    def check_kv_cache_path(self, model: Any, steps: int) -> None:
        from llm_perf_opt.model_runtime.decode import check_kv_cache_path

        check_kv_cache_path(model, steps)

    def decode_program(self, steps: int, on_step: Any = None) -> Any:
        from llm_perf_opt.model_runtime.decode import DecodeProgram

        return DecodeProgram(steps, on_step=on_step)

    def greedy_decode(self, run_step: Any, prefill: Any, steps: int, kwargs: Any, **more: Any) -> Any:
        from llm_perf_opt.model_runtime.decode import greedy_decode

        return greedy_decode(run_step, prefill, steps, kwargs, **more)

    routing_file = "routing.json"

    def routing_record(self, events: Any, session: Any) -> Any:
        """The MoE routing of a capture's gate events (`dsocr.routing.RoutingRecord`), or None without any."""
        from llm_perf_opt.model_runtime.routing import RoutingRecord, expert_weight_bytes

        if not events:
            return None
        bytes_ = expert_weight_bytes(session.model, events[0]["gate"])
        return RoutingRecord.from_events(events, random_weights=session.weights == "random", expert_bytes=bytes_)

    def unrouted_expert_kernels(self, analytic: Any, run_dir: Any) -> dict[int, dict[str, int]]:
        """{step (0: the prefill): {experts container path: kernels}}: the routed-expert kernels the analytic model
        lists for experts the run's gates sent no token (its routing record). The cost formula runs
        min(E, T x top_k) experts per MoE layer and call (uniform routing of T tokens); the forward's loop runs
        only the experts that got tokens, one MLP each. Empty without a routing record."""
        from pathlib import Path

        from llm_perf_opt.model_runtime.routing import load_routing

        path = Path(run_dir) / self.routing_file
        if not path.is_file():
            return {}
        record = load_routing(path)
        out: dict[int, dict[str, int]] = {}
        for call in record.calls:
            stage = analytic.prefill() if call.step == 0 else analytic.decode(analytic.seq_len + call.step - 1)
            experts = f"{self.parts.decoder_stack}.{call.layer}.mlp.experts"
            listed = stage.parts[experts].kernel_count if experts in stage.parts else 0
            assumed = min(record.n_experts, call.tokens * record.top_k)
            missing = assumed - len(call.experts)
            if missing > 0 and assumed and listed % assumed == 0:
                out.setdefault(call.step, {})[experts] = listed // assumed * missing
        return out

    def run_experts_by_load(self, *args: Any, **kwargs: Any) -> Any:
        from llm_perf_opt.deepseek_ocr_shared.twin.decoder import run_experts_by_load

        return run_experts_by_load(*args, **kwargs)


FAMILY = DeepSeekOCRFamily()
