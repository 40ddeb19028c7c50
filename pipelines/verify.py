"""`./dev verify [verify=NAME] [overrides]`: the verification gate (a matrix of trace jobs; JUnit XML; exit status)."""

import sys

from llm_perf_opt.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(["verify", *sys.argv[1:]]))
