"""Reports: a multirun's jobs aggregated into CSV, Markdown, plots and one HTML page, one run's page, two runs
compared, and the analytic-only page sweep. The run and multirun reports read artifacts only
(`llm_perf_opt.run_artifacts`), never recompute; the data step and the rendering (`render.py`, `templates/`) are apart.

| file | job |
|---|---|
| `collect.py` | find every job of a Hydra multirun and read what it left: summary.json, error.json, Hydra's records |
| `table.py` | one row per job: the report's columns, where each value comes from, and how it is shown |
| `sweep.py` | the report of one multirun: `report.csv`, `report.md`, `report.html` and `report_plots/` |
| `analytic_sweep.py` | the analytic-only report over thousands of page sizes: no model built, nothing run in torch |
| `serving_report.py` | serving in the reports: a job's `serving.json` columns, the curve, the design-space plots |
| `plots.py` | Matplotlib plots (Agg backend), each saved as SVG (inlined in the HTML) and PNG |
| `roofline_plot.py` | a run's roofline plot (`roofline.svg` / `.png`): the device's roof and each part where it ran |
| `time_levels.py` | time per stage, part and decode step of one run, measured and predicted at each level |
| `run_charts.py` | the run page's two charts, from what the run's artifacts say |
| `run_page.py` | `run.html`: one run on one self-contained page (inline CSS, SVG and script) |
| `compare.py` | two runs side by side: per grouped node, stage, part and decode step, deltas and ratios |
| `compare_chart.py` | the compare page's chart of the nodes whose self time changed most, and its node panel's data |
| `output_dirs.py` | where a report writes: never a run directory, never over an earlier report unless asked |
| `render.py` | rendering, apart from the data: CSV, and the Markdown and HTML pages through jinja2 templates |
| `run_files.py` | this package's run files: the plots and the run page it draws into a run directory |
| `templates/` | the jinja2 templates: one per page and format; the blocks, style and table script they share |
"""
