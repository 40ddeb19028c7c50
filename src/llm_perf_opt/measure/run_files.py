"""This package's entries in the run-directory registry (`llm_perf_opt.run_files`): analytic against measured FLOPs
(`verification.json`), the calibrated roof (`calibration.json`) and the measured time per module (`profile.json`,
`profile.trace.json`).

(How such a declaration is found and why it imports nothing else: `llm_perf_opt.run_files`.)
"""

from __future__ import annotations

from llm_perf_opt.run_files import RunFile

RUN_FILES: tuple[RunFile, ...] = (
    RunFile(
        "verification",
        "verification.json",
        "measure",
        "analytic vs measured FLOPs per stage and part (fvcore's count when asked)",
        "llm_perf_opt.verification",
        3,
        (2, 3),
        "llm_perf_opt.measure.verification_file:load_verification",
    ),
    RunFile(
        "calibration",
        "calibration.json",
        "measure.calibrate (./dev calibrate)",
        "the measured roof of the device the job ran on",
        "llm_perf_opt.calibration",
        1,
        (1,),
        "llm_perf_opt.measure.calibrate:load_calibration",
    ),
    RunFile(
        "profile",
        "profile.json",
        "measure.profile",
        "measured time per module (torch.profiler ranges): repeats, warm-up, synchronisation recorded",
        "llm_perf_opt.profile",
        1,
        (1,),
        "llm_perf_opt.measure.module_times:load_module_times",
    ),
    RunFile("profile_trace", "profile.trace.json", "measure.profile", "the last profiled repeat as a Chrome trace"),
)
