"""Measured FLOPs (torch's FlopCounterMode, fvcore as a second opinion), verification against `analytic`,
and its artifact, verification.json (`verification_file`)."""
# The names below load on first use (PEP 562), so `import llm_perf_opt.measure.calibrate` (the analyze
# job) does not import torch through this package.
from __future__ import annotations

import importlib

_LAZY = {
    'FlopCounterAPIError': 'llm_perf_opt.measure.flop_counter_adapter',
    'extra_formulas': 'llm_perf_opt.measure.flop_counter_adapter',
    'sdpa_flops': 'llm_perf_opt.measure.flop_counter_adapter',
    'FvcoreFlops': 'llm_perf_opt.measure.flops',
    'MeasuredFlops': 'llm_perf_opt.measure.flops',
    'count_flops': 'llm_perf_opt.measure.flops',
    'fvcore_flops': 'llm_perf_opt.measure.flops',
    'is_matmul_like': 'llm_perf_opt.measure.flops',
    'measure_forward': 'llm_perf_opt.measure.flops',
    'reconcile_fvcore': 'llm_perf_opt.measure.flops',
    'VERIFICATION_FILE': 'llm_perf_opt.measure.verification_file',
    'VERIFICATION_READS': 'llm_perf_opt.measure.verification_file',
    'VERIFICATION_SCHEMA': 'llm_perf_opt.measure.verification_file',
    'VERIFICATION_SCHEMA_VERSION': 'llm_perf_opt.measure.verification_file',
    'load_verification': 'llm_perf_opt.measure.verification_file',
    'write_verification': 'llm_perf_opt.measure.verification_file',
    'DEFAULT_RTOL': 'llm_perf_opt.measure.agreement',
    'StageCheck': 'llm_perf_opt.measure.agreement',
    'Verification': 'llm_perf_opt.measure.agreement',
    'VerificationRow': 'llm_perf_opt.measure.agreement',
    'check_stage': 'llm_perf_opt.measure.agreement',
    'relative_error': 'llm_perf_opt.measure.agreement',
    'render_table': 'llm_perf_opt.measure.agreement',
    'check_agreement': 'llm_perf_opt.measure.agreement',
    'check_dsocr_agreement': 'llm_perf_opt.measure.agreement',
    'check_model_agreement': 'llm_perf_opt.measure.agreement',
}


def __getattr__(name: str):
    if name in _LAZY:
        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_RTOL", "FlopCounterAPIError", "FvcoreFlops", "MeasuredFlops", "StageCheck",
    "VERIFICATION_FILE", "VERIFICATION_READS", "VERIFICATION_SCHEMA", "VERIFICATION_SCHEMA_VERSION",
    "Verification", "VerificationRow", "check_stage", "count_flops", "extra_formulas", "fvcore_flops",
    "is_matmul_like", "load_verification", "measure_forward", "reconcile_fvcore",
    "relative_error", "render_table", "sdpa_flops", "check_agreement", "check_dsocr_agreement", "check_model_agreement", "write_verification",
]
