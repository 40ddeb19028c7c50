"""Measured FLOPs (torch's FlopCounterMode, fvcore as a second opinion), verification against `analytic`,
and its artifact, verification.json (`verification_file`).

Its data in the run: `run_files.py` (verification.json, calibration.json, profile.json, profile.trace.json),
`profile_config.py` (the `profile` config section), `verify_summary.py` and `profile_summary.py` (summary.json's
`flops`, `parts`, `verification`, `profile`).
"""

# The names below load on first use (PEP 562), so `import llm_perf_opt.measure.calibrate` (the analyze
# job) does not import torch through this package.
from __future__ import annotations

from llm_perf_opt.lazy import lazy_attributes, lazy_names

_LAZY = {
    "llm_perf_opt.measure.flop_counter_adapter": ("FlopCounterAPIError", "extra_formulas", "sdpa_flops"),
    "llm_perf_opt.measure.flops": (
        "FvcoreFlops",
        "MeasuredFlops",
        "count_flops",
        "fvcore_flops",
        "is_matmul_like",
        "measure_forward",
        "reconcile_fvcore",
    ),
    "llm_perf_opt.measure.verification_file": (
        "VERIFICATION_FILE",
        "VERIFICATION_READS",
        "VERIFICATION_SCHEMA",
        "VERIFICATION_SCHEMA_VERSION",
        "load_verification",
        "write_verification",
    ),
    "llm_perf_opt.measure.agreement": (
        "DEFAULT_RTOL",
        "StageCheck",
        "Verification",
        "VerificationRow",
        "check_stage",
        "relative_error",
        "render_table",
        "check_agreement",
        "check_model_agreement",
    ),
}

__getattr__ = lazy_attributes(__name__, _LAZY, globals())

__all__ = lazy_names(_LAZY)
