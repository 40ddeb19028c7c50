"""This package's entries in the run-directory registry (`llm_perf_opt.run_files`): the torch.export of submodules
(`export/summary.json`).

Declared here, next to the code that writes and reads them, and found by the registry (every package's
`run_files.py`); each loader is named as `"module:function"` and imported only when a file is loaded. Imports
nothing but the registry's `RunFile`, so reading the registry imports neither torch nor this package's heavy
modules.
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
