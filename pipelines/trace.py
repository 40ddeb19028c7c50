"""`./dev trace [overrides]`: session, inputs, forward, profile, call graph, grouping, costs, verification and
roofline for one config."""

import sys

from llm_perf_opt.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(["trace", *sys.argv[1:]]))
