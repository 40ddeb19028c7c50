"""`./dev sweep [overrides]`: a Hydra multirun of the trace job (one job per combination of swept values)."""

import sys

from llm_perf_opt.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(["sweep", *sys.argv[1:]]))
