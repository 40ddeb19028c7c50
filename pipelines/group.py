"""`./dev group RUN_DIR [--max-depth N] [--formats ...]`: regroup and re-render an existing callgraph.json."""

import sys

from llm_perf_opt.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(["group", *sys.argv[1:]]))
