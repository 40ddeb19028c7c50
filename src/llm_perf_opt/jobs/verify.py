"""`llm-perf-opt verify`: the verification gate (`llm_perf_opt.gate.run`)."""

from llm_perf_opt.gate.run import main

__all__ = ["main"]
