"""`./dev export [overrides]`: torch.export of DeepSeek-OCR submodules at the shapes of one workload and page."""

import sys

from llm_perf_opt.early_refusal import refused

if __name__ == "__main__":
    code = refused(sys.argv[1:])  # before the jobs (and Hydra) are imported
    if code is not None:
        sys.exit(code)
    from llm_perf_opt.jobs.cli import main

    sys.exit(main(["export", *sys.argv[1:]]))
