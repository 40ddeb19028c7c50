"""`./dev analyze [overrides]`: the analytic cost model alone, for any workload and page size; no model is built."""

import sys

from llm_perf_opt.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(["analyze", *sys.argv[1:]]))
