"""This package's entries in the run-directory registry (`llm_perf_opt.run_files`): the analytic cost model
(`costs.json`), the roofline predictions (`roofline.json`) and the serving figures (`serving.json`, `curve.csv`).

(How such a declaration is found and why it imports nothing else: `llm_perf_opt.run_files`.)
"""

from __future__ import annotations

from llm_perf_opt.run_files import RunFile

RUN_FILES: tuple[RunFile, ...] = (
    RunFile(
        "costs",
        "costs.json",
        "analytic",
        "the analytic cost model per stage, part and layer",
        "llm_perf_opt.costs",
        2,
        (2,),
        "llm_perf_opt.analytic.costs_file:load_costs",
    ),
    RunFile(
        "roofline",
        "roofline.json",
        "analytic.time.ideal (./dev analyze hardware=NAME; the trace job's roofline stage)",
        "predicted times per stage and part on a roof (datasheet or measured)",
        "llm_perf_opt.roofline",
        2,
        (1, 2),
        "llm_perf_opt.analytic.roofline_artifact:load_roofline",
    ),
    RunFile(
        "serving",
        "serving.json",
        "analytic.serving_run (./dev analyze hardware=NAME, ./dev size, the trace job)",
        "serving figures per engine: TTFT, TPOT, tokens/s, pages/day at a batch, memory, the latency curve, sizing",
        "llm_perf_opt.serving",
        2,
        (1, 2),
        "llm_perf_opt.analytic.serving_file:load_serving",
    ),
    RunFile("curve_csv", "curve.csv", "analytic.serving_run", "the latency-vs-throughput curve over the batch"),
)
