"""`./dev compare RUN_A RUN_B [--out DIR]`: two runs side by side (HTML, CSV, a delta-coloured graph)."""

import sys

from llm_perf_opt.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(["compare", *sys.argv[1:]]))
