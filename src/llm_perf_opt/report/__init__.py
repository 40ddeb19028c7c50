"""Reports: a multirun's jobs aggregated into CSV, Markdown, plots and one HTML page (`sweep`), and the
analytic-only page sweep over thousands of page sizes (`analytic_sweep`). Reads artifacts only
(`llm_perf_opt.run_artifacts`); the data step and the rendering (`render`, `templates/`) are apart.

Its data in the run: `run_files.py` (the plots and the run page it draws into a run directory).
"""
