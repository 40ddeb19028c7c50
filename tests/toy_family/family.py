"""The toy family behind the contract: `ToyFamily(ModelFamily)` and `FAMILY`, the object the registry line names
(`LLM_PERF_OPT_FAMILIES=toy=toy_family.family:FAMILY`). The decode loop is the library's (greedy steps with a KV
cache, any forward with `past_key_values` / `use_cache`), as is the FLOP count of a prefill and its steps."""

from __future__ import annotations

from typing import Any, Callable, Iterable, Optional, Sequence

from llm_perf_opt.family import ModelFamily
from llm_perf_opt.model_runtime.family_members import RuntimeMembers
from toy_family import spec as toy_spec


class ToyFamily(RuntimeMembers, ModelFamily):
    name = toy_spec.FAMILY
    label = "Toy OCR"
    parts = toy_spec.VOCABULARY
    cost_namespace = "toy"
    stages = ("vision", "prefill", "decode")
    twin_specs = tuple(toy_spec.SPECS)

    # ---- configuration
    def spec_named(self, name: str) -> Any:
        return toy_spec.spec_named(name)

    def workload_for(self, workload_cfg: Any) -> Any:
        """The toy reads only the workload's name: its one view has a fixed side."""
        return toy_spec.ToyWorkload(name=str(workload_cfg.name))

    def layout(self, workload: Any, width: int, height: int) -> Any:
        return toy_spec.compute_layout(workload, width, height)

    def modes(self, conf: Any = None) -> dict[str, Any]:
        return {"toy": toy_spec.ToyWorkload()}

    # ---- the analytic model
    def analytic_model(self, spec: Any, layout: Any, seq_len: Optional[int] = None, **kwargs: Any) -> Any:
        from toy_family.costs import ToyAnalyticModel

        return ToyAnalyticModel(spec, layout, seq_len, **kwargs)

    # ---- the runtime
    def open_session(self, model_cfg: Any, runtime_cfg: Any = None, **kwargs: Any) -> Any:
        from toy_family.runtime import open_session

        return open_session(self.spec_for(model_cfg), model_cfg, runtime_cfg)

    def resolve_device(self, runtime_cfg: Any) -> Any:
        from toy_family.runtime import resolve_device

        return resolve_device(runtime_cfg)

    def build_inputs(self, spec: Any, workload: Any, **kwargs: Any) -> Any:
        from toy_family.runtime import build_inputs

        return build_inputs(spec, workload, **kwargs)

    def prompt_tokens(self, prompt: str, model_dir: Optional[str]) -> Any:
        from toy_family.runtime import prompt_tokens

        return prompt_tokens(prompt, toy_spec.ToySpec().vocab)

    def check_run(self, cfg: Any, spec: Any, workload: Any, width: int, height: int) -> int:
        from llm_perf_opt.model_runtime.decode import check_decode_steps
        from toy_family.runtime import prompt_tokens

        _, text, _ = prompt_tokens(cfg.workload.prompt, spec.vocab)
        seq_len = 1 + self.layout(workload, width, height).image_tokens + len(text)
        check_decode_steps(cfg.trace.decode_steps, seq_len, spec.max_positions)
        return len(text)

    @property
    def trace_patches(self) -> tuple[str, ...]:
        from toy_family.runtime import PATCHES

        return PATCHES

    @property
    def runtime_checks(self) -> Sequence[Callable[..., Any]]:
        from toy_family.runtime import RUNTIME_CHECKS

        return RUNTIME_CHECKS

    def runtime_patches(self, session: Any, names: Iterable[str]) -> Any:
        from toy_family.runtime import runtime_patches

        return runtime_patches(session, names)


FAMILY = ToyFamily()
