"""`./dev calibrate [overrides]`: measure the roof of the device the job runs on (cached in tmp/calibration/)."""

import sys

from llm_perf_opt.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(["calibrate", *sys.argv[1:]]))
