"""This package's entries in the run-directory registry (`llm_perf_opt.run_files`): the torch.export of submodules
(`export/summary.json`).

(How such a declaration is found and why it imports nothing else: `llm_perf_opt.run_files`.)
"""

from __future__ import annotations

from llm_perf_opt.run_files import RunFile

RUN_FILES: tuple[RunFile, ...] = (
    RunFile(
        "export",
        "export/summary.json",
        "export (./dev export, trace.export=true)",
        "torch.export of submodules: FLOPs and op counts cross-checked, MoE remedies",
        "llm_perf_opt.export",
        1,
        (1,),
        "llm_perf_opt.export.summary:load_export_summary",
    ),
)
