"""`./dev explore RUN_DIR [--port N]`: the run's grouped graph and every module call in Model Explorer."""

import sys

from llm_perf_opt.early_refusal import refused

if __name__ == "__main__":
    code = refused(sys.argv[1:])  # before the jobs (and Hydra) are imported
    if code is not None:
        sys.exit(code)
    from llm_perf_opt.jobs.cli import main

    sys.exit(main(["explore", *sys.argv[1:]]))
