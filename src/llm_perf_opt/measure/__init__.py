"""What a real forward measured: FLOPs (torch's FlopCounterMode, fvcore as a second opinion), time per module
(torch.profiler), the device's and host's calibration, and the checks of the analytic model against all of them.
Above `analytic`; importing the package imports no torch (the names below load on first use).

| file | job |
|---|---|
| `flops.py` | measured FLOPs per module: FlopCounterMode on a real forward, nothing silently missing; fvcore |
| `flop_counter_adapter.py` | the one door to `torch.utils.flop_counter` beyond its documented API (version-gated) |
| `matmul_ops.py` | which aten op names do matmul or convolution work (`is_matmul_like`): plain names, no torch |
| `agreement.py` | verification: analytic FLOPs against measured FLOPs, per stage and part, with a relative tolerance |
| `kernel_counts.py` | kernel counts of the analytic model against the ops a TorchLens capture recorded, per pass |
| `verification_file.py` | `verification.json`: a `Verification`, its schema and its loader |
| `recorded_runs.py` | recorded runs kept as data: recordings, their run folders, each run's configuration and files |
| `replay.py` | a recorded run's kernel-count and activation rows, the analytic side recomputed by today's formulas |
| `module_ranges.py` | one profiler range per module call, opened and closed by forward hooks, and their call tree |
| `profiler_events.py` | the one adapter over torch.profiler's results: module ranges' CPU spans, kernel device time |
| `kineto_log.py` | Kineto's console lines, set at their source before the first profiler session of the process |
| `module_times.py` | `ModuleTimes`: measured time per module call and per module, and its artifact `profile.json` |
| `profile.py` | measured time per module: the trace job's profile stage's measurement (`profile_forward`) |
| `profile_table.py` | a console table of a profile: method, overhead, coverage, each part's time and spread |
| `time_groups.py` | times of a group of module instances (a `for N` / `parfor N` node): total, mean, spread |
| `decode_timing.py` | time per decode step, measured with the profile stage's method, beside its prediction |
| `plain_timing.py` | one region's wall and device time with no capture and no module ranges (serving at batch) |
| `part_clocks.py` | a clock on each summary part of a plain forward (forward hooks only), its calls kept |
| `efficiency.py` | measured against predicted time: efficiency = predicted / measured, per stage, part, address |
| `calibrate.py` | calibrate the device a job runs on: the `measured` roof (matmul, copy bandwidth), cached per device |
| `calibrate_levels.py` | calibration of the kernel and eager time levels: one kernel's cost, the host's cost per op |
| `host_workload.py` | the host's cost per kernel, measured on one decode step of a small MoE decoder |
| `allocator.py` | the process's memory allocator regime (the allocator mapped in, glibc's tunables at start-up) |
| `calibration_file.py` | a calibration file given by path (`hardware.calibration`): read, checked, completed |
| `level_fillers.py` | the declared table of what an older kernel-level version lacks and how each figure is filled |
| `recorded_profile.py` | a recorded run's profile beside a calibration file: kernel device time, host time per kernel |
| `host_pace.py` | each recorded run's host pace against its recording's other runs (from the profile traces) |
| `engine_figures.py` | what the serving engines need of a job's device and host: its time model, the generate loop |
| `curve_conditions.py` | a CPU serving curve (`serve.measured`) of another thread count or allocator regime: refused |
| `generate_host.py` | the host work of `generate()`'s loop per decode step on this host, measured and cached |
| `levels_stage.py` | the three time levels for a job's primary roof, beside the measured times |
| `profile_config.py` | the `profile` config section: how the profile stage measures time per module |
| `profile_summary.py` | summary.json's `profile` section: the profile stage's headline figures |
| `verify_summary.py` | summary.json's `flops`, `parts` and `verification` sections: analytic against measured FLOPs |
| `run_files.py` | this package's run files: `verification.json`, `calibration.json`, `profile.json`, its Chrome trace |
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
