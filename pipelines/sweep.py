"""`./dev sweep [overrides]`: a Hydra multirun of the trace job (one job per combination of swept values)."""

import sys

from llm_perf_opt.early_refusal import refused

if __name__ == "__main__":
    code = refused(sys.argv[1:])  # before the jobs (and Hydra) are imported
    if code is not None:
        sys.exit(code)
    from llm_perf_opt.jobs.cli import main

    sys.exit(main(["sweep", *sys.argv[1:]]))
