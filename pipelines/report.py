"""`./dev report SWEEP_DIR [...]` or `./dev report --analytic OUT_DIR [...]`: CSV, Markdown and HTML reports."""

import sys

from llm_perf_opt.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(["report", *sys.argv[1:]]))
