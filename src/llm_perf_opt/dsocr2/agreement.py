"""Analytic against measured for DeepSeek-OCR 2: v1's verification (`measure.agreement`) with the family's
cost namespace. The generic check lists a measured class as unsupported when its bare name has no
registry entry; v2's own classes are registered as `dsocr2.<class>`, so this wrapper re-derives that list
with `cost_formulas.unsupported` (a class is costed under its prefixed or its bare name)."""

from __future__ import annotations

from typing import Any, Mapping

from llm_perf_opt.dsocr2 import cost_formulas
from llm_perf_opt.measure.agreement import DEFAULT_RTOL, Verification, check_model_agreement
from llm_perf_opt.measure.flops import MeasuredFlops


def check_dsocr2_agreement(
    model,
    prefill: MeasuredFlops,
    decode: Mapping[int, MeasuredFlops] | None = None,
    rtol: float = DEFAULT_RTOL,
    kv_cache_bytes: Mapping[int, int] | None = None,
    context: Mapping[str, Any] | None = None,
) -> Verification:
    """`check_model_agreement` for a `DeepseekOCR2AnalyticModel` (every part: the summary parts are v1's vocabulary)."""
    v = check_model_agreement(
        model, prefill, decode, rtol=rtol, parts="all", context=context, kv_cache_bytes=kv_cache_bytes
    )
    measured = [prefill, prefill] + [m for _, m in sorted((decode or {}).items())]
    for check, m in zip(v.checks, measured):
        check.unsupported_modules = cost_formulas.unsupported(m.module_classes)
    return v
