"""`./dev size tpot_s=0.02 ttft_s=1 pages_per_day=1000000 hardware=h100_sxm`: what serving targets need of a device."""

import sys

from llm_perf_opt.early_refusal import refused

if __name__ == "__main__":
    code = refused(sys.argv[1:])  # before the jobs (and Hydra) are imported
    if code is not None:
        sys.exit(code)
    from llm_perf_opt.jobs.cli import main

    sys.exit(main(["size", *sys.argv[1:]]))
