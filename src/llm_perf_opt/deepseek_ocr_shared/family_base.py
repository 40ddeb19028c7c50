"""What the two DeepSeek-OCR families (v1 `dsocr`, OCR-2 `dsocr2`) run alike, as one base class both stand on.

DeepSeek-OCR 2 does not subclass v1's family: both subclass `DeepSeekOCRFamilyBase`, which implements the
contract's members that are the same code for both (the same session, decoder and `infer()` inputs), each by
calling the shared runtime functions, imported inside the method (they import torch):

| member | the shared function |
|---|---|
| `workload_schema` | `DeepSeekWorkloadConfig` (`workload_config`): the knobs of `infer()` both take |
| `check_run`, `prompt_tokens` | the prompt's tokens, the positions check (`inputs`, `model_runtime.decode`) |
| `check_vendor_code` | the vendor code imported with the names the family needs (`vendor_required_names`) |
| `resolve_device`, `batch_inputs` | the session's device; several pages as one `generate()` batch |
| `load_runtime_log`, `measure`, the decode members | `model_runtime.family_members.RuntimeMembers` (a base) |
| `routing_record`, `unrouted_expert_kernels`, `run_experts_by_load` | the MoE decoder's routing |
| `console_summary` | the console's lines: the crop grid, the global and local image tokens |

A family that is not a DeepSeek-OCR model subclasses `llm_perf_opt.family.ModelFamily` directly
(tests/toy_family). It sits in the package the two families share (imported by those families only); the
generic layers never import it.
"""

from __future__ import annotations

import abc
from pathlib import Path
from typing import Any, Mapping, Optional

from llm_perf_opt.deepseek_ocr_shared.workload_config import DeepSeekWorkloadConfig
from llm_perf_opt.family import ModelFamily
from llm_perf_opt.model_runtime.family_members import RuntimeMembers


class DeepSeekOCRFamilyBase(RuntimeMembers, ModelFamily):
    stages = ("vision", "prefill", "decode")
    workload_schema = DeepSeekWorkloadConfig  # conf/workload/*.yaml (v1) and conf/workload/ocr2/*.yaml name it
    workload_knobs = ("base_size", "image_size", "crop_mode", "tile_size")  # infer()'s, and the crop tile
    supports_batch = True  # batch_inputs: several pages as one generate() batch

    @abc.abstractmethod
    def vendor_required_names(self) -> Mapping[str, tuple[str, ...]]:
        """The vendor classes and functions the pipeline needs, by module."""

    # ------------------------------------------------------------------ configuration and console
    def check_run(self, cfg: Any, spec: Any, workload: Any, width: int, height: int) -> int:
        """The prompt's text tokens, after checking the decode steps fit the model's positions."""
        from llm_perf_opt.model_runtime.decode import check_prompt_positions

        prompt = self.prompt_tokens(cfg.workload.prompt, cfg.model.path if cfg.model.source == "vendor" else None)
        image_tokens = self.layout(workload, width, height).image_tokens
        return check_prompt_positions(
            cfg.trace.decode_steps, prompt, image_tokens, spec.decoder.max_position_embeddings
        )

    def prompt_tokens(self, prompt: str, model_dir: Optional[str]) -> Any:
        from llm_perf_opt.deepseek_ocr_shared.inputs import prompt_tokens

        return prompt_tokens(prompt, model_dir)

    def console_summary(self, summary: Any) -> str:
        from llm_perf_opt.deepseek_ocr_shared.layout import console_summary

        return console_summary(summary)

    # ------------------------------------------------------------------ the runtime
    def check_vendor_code(self, path: Any) -> None:
        """The directory's config, the transformers version, and the vendor code imported (no model built) with
        every class and function the pipeline needs (PatchError naming what changed)."""
        from llm_perf_opt.model_runtime import vendor

        vendor.check_vendor_code(path, self.vendor_required_names(), self.label)

    def resolve_device(self, runtime_cfg: Any) -> Any:
        from llm_perf_opt.model_runtime.session import resolve_device

        return resolve_device(runtime_cfg)

    def batch_inputs(self, samples: Any) -> Any:
        """Several pages' inputs as one batch, as generate() takes them (`dsocr.inputs.batch_inputs`)."""
        from llm_perf_opt.deepseek_ocr_shared.inputs import batch_inputs

        return batch_inputs(list(samples))

    def routing_record(self, events: Any, session: Any) -> Any:
        """The MoE routing of a capture's gate events (`dsocr.routing.RoutingRecord`), or None without any."""
        from llm_perf_opt.model_runtime.routing import routing_record

        return routing_record(events, session)

    def unrouted_expert_kernels(self, analytic: Any, run_dir: Any) -> dict[int, dict[str, int]]:
        """The routed-expert kernels the analytic model lists for experts no token reached
        (`dsocr.routing.unrouted_expert_kernels`, from the run's routing record)."""
        from llm_perf_opt.model_runtime.routing import unrouted_expert_kernels

        return unrouted_expert_kernels(analytic, Path(run_dir) / self.routing_file, self.parts.decoder_stack)

    def run_experts_by_load(self, *args: Any, **kwargs: Any) -> Any:
        from llm_perf_opt.deepseek_ocr_shared.twin.decoder import run_experts_by_load

        return run_experts_by_load(*args, **kwargs)
