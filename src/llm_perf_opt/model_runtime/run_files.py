"""This package's entries in the run-directory registry (`llm_perf_opt.run_files`): what the runtime patches
and routing record during the capture (`runtime_log.json`, `routing.json`).

(How such a declaration is found and why it imports nothing else: `llm_perf_opt.run_files`.)
"""

from __future__ import annotations

from llm_perf_opt.run_files import RunFile

RUN_FILES: tuple[RunFile, ...] = (
    RunFile(
        "runtime_log",
        "runtime_log.json",
        "model_runtime.patches",
        "events the runtime patches logged during the capture",
        "llm_perf_opt.runtime_log",
        1,
        (1,),
        "llm_perf_opt.model_runtime.runtime_log:load_runtime_log",
    ),
    RunFile(
        "routing",
        "routing.json",
        "model_runtime.routing",
        "the MoE routing the capture took: experts hit and tokens per expert, per layer and step",
        "llm_perf_opt.routing",
        1,
        (1,),
        "llm_perf_opt.model_runtime.routing:load_routing",
    ),
)
