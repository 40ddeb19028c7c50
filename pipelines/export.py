"""`./dev export [overrides]`: torch.export of DeepSeek-OCR submodules at the shapes of one workload and page."""

import sys

from llm_perf_opt.jobs.cli import main

if __name__ == "__main__":
    sys.exit(main(["export", *sys.argv[1:]]))
