"""`./dev trace [overrides]`: session, inputs, forward, profile, call graph, grouping, costs, verification and
roofline for one config."""

import sys

from llm_perf_opt.early_refusal import refused

if __name__ == "__main__":
    code = refused(sys.argv[1:])  # before the jobs (and Hydra) are imported
    if code is not None:
        sys.exit(code)
    from llm_perf_opt.jobs.cli import main

    sys.exit(main(["trace", *sys.argv[1:]]))
