"""`./dev trace [overrides]`: session, inputs, forward, call graph, grouping, costs and verification for one config."""
import sys

from llm_perf_opt.pipelines.cli import main

if __name__ == "__main__":
    sys.exit(main(["trace", *sys.argv[1:]]))
