"""`./dev verify [verify=NAME] [overrides]`: the verification gate (a matrix of trace jobs; JUnit XML; exit status)."""

import sys

from llm_perf_opt.early_refusal import refused

if __name__ == "__main__":
    code = refused(sys.argv[1:])  # before the jobs (and Hydra) are imported
    if code is not None:
        sys.exit(code)
    from llm_perf_opt.jobs.cli import main

    sys.exit(main(["verify", *sys.argv[1:]]))
