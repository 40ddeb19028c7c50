"""This package's entries in the run-directory registry (`llm_perf_opt.run_files`): the plots and the run page the
report draws into a run directory (`curve.svg/png`, `roofline.svg/png`, `run.html`).

(How such a declaration is found and why it imports nothing else: `llm_perf_opt.run_files`.)
"""

from __future__ import annotations

from llm_perf_opt.run_files import RunFile

RUN_FILES: tuple[RunFile, ...] = (
    RunFile("curve_svg", "curve.svg", "report.serving_plots", "the latency-vs-throughput curve, its knee marked"),
    RunFile("curve_png", "curve.png", "report.serving_plots", "curve.svg as a PNG"),
    RunFile(
        "roofline_svg",
        "roofline.svg",
        "report.roofline_plot",
        "the run's roofline: the device's roof, each part at its intensity and achieved FLOP/s",
    ),
    RunFile("roofline_png", "roofline.png", "report.roofline_plot", "roofline.svg as a PNG"),
    RunFile(
        "run_page",
        "run.html",
        "report.run_page",
        "the run on one self-contained page: layout, costs, the clickable grouped graph, links",
    ),
)
