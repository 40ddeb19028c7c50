"""The family contract's runtime members for a family whose forward runs on this package's machinery.

`RuntimeMembers` implements `ModelFamily.load_runtime_log`, `measure`, `check_kv_cache_path`, `decode_program` and
`greedy_decode` by calling this package (the runtime log, FLOPs measured by `measure.measure_forward`, the greedy
decode loop with a KV cache). A family class lists it before `ModelFamily` among its bases; the DeepSeek-OCR
families (`deepseek_ocr_shared.family_base`) and the test suite's toy family do. Each method imports what it calls
inside, so asking for a family imports no torch.
"""

from __future__ import annotations

from typing import Any, Iterable, Mapping


class RuntimeMembers:
    def load_runtime_log(self, path: Any) -> Any:
        from llm_perf_opt.model_runtime.runtime_log import load_runtime_log

        return load_runtime_log(path)

    def measure(
        self, model: Any, forward_kwargs: Mapping[str, Any], decode_steps: Iterable[int] = (), **kwargs: Any
    ) -> Any:
        """Measured FLOPs of the prefill and the given decode steps (`model_runtime.measure.measure_forward`)."""
        from llm_perf_opt.model_runtime.measure import measure_forward

        return measure_forward(model, forward_kwargs, decode_steps=tuple(decode_steps), **kwargs)

    def check_kv_cache_path(self, model: Any, steps: int) -> None:
        from llm_perf_opt.model_runtime.decode import check_kv_cache_path

        check_kv_cache_path(model, steps)

    def decode_program(self, steps: int, on_step: Any = None) -> Any:
        from llm_perf_opt.model_runtime.decode import DecodeProgram

        return DecodeProgram(steps, on_step=on_step)

    def greedy_decode(self, run_step: Any, prefill: Any, steps: int, kwargs: Any, **more: Any) -> Any:
        from llm_perf_opt.model_runtime.decode import greedy_decode

        return greedy_decode(run_step, prefill, steps, kwargs, **more)
