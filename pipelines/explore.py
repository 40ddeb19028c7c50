"""`./dev explore RUN_DIR [--port N]`: the run's grouped graph and every module call in Model Explorer."""

import sys

from llm_perf_opt.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(["explore", *sys.argv[1:]]))
