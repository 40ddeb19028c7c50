"""Measured FLOPs (torch's FlopCounterMode, fvcore as a second opinion), verification against `analytic`,
and its artifact, verification.json (`verification_file`)."""
from llm_perf_opt.measure.flop_counter_adapter import FlopCounterAPIError, extra_formulas, sdpa_flops
from llm_perf_opt.measure.flops import (
    FvcoreFlops,
    MeasuredFlops,
    count_flops,
    fvcore_flops,
    is_matmul_like,
    measure_forward,
    reconcile_fvcore,
)
from llm_perf_opt.measure.verification_file import (
    VERIFICATION_FILE,
    VERIFICATION_READS,
    VERIFICATION_SCHEMA,
    VERIFICATION_SCHEMA_VERSION,
    load_verification,
    write_verification,
)
from llm_perf_opt.measure.agreement import (
    DEFAULT_RTOL,
    StageCheck,
    Verification,
    VerificationRow,
    check_stage,
    relative_error,
    render_table,
    check_agreement,
    check_dsocr_agreement,
    check_model_agreement,
)

__all__ = [
    "DEFAULT_RTOL", "FlopCounterAPIError", "FvcoreFlops", "MeasuredFlops", "StageCheck",
    "VERIFICATION_FILE", "VERIFICATION_READS", "VERIFICATION_SCHEMA", "VERIFICATION_SCHEMA_VERSION",
    "Verification", "VerificationRow", "check_stage", "count_flops", "extra_formulas", "fvcore_flops",
    "is_matmul_like", "load_verification", "measure_forward", "reconcile_fvcore",
    "relative_error", "render_table", "sdpa_flops", "check_agreement", "check_dsocr_agreement", "check_model_agreement", "write_verification",
]
