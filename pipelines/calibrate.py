"""`./dev calibrate [overrides]`: measure the roof of the device the job runs on (cached in hardware.cache_dir, else
$LLM_PERF_OPT_CALIBRATION_DIR, else tmp/calibration/)."""

import sys

from llm_perf_opt.early_refusal import refused

if __name__ == "__main__":
    code = refused(sys.argv[1:])  # before the jobs (and Hydra) are imported
    if code is not None:
        sys.exit(code)
    from llm_perf_opt.jobs.cli import main

    sys.exit(main(["calibrate", *sys.argv[1:]]))
