"""`./dev calibrate [overrides]`: measure the roof of the device the job runs on (cached in hardware.cache_dir, else
$LLM_PERF_OPT_CALIBRATION_DIR, else tmp/calibration/)."""

import sys

from llm_perf_opt.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(["calibrate", *sys.argv[1:]]))
