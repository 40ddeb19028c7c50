"""Reports: a multirun's jobs aggregated into CSV, Markdown, plots and one HTML page (`sweep`), and the
analytic-only page sweep over thousands of page sizes (`analytic_sweep`). Reads artifacts only."""
from llm_perf_opt.report.collect import JobRecord, Sweep, collect_sweep  # noqa: F401
from llm_perf_opt.report.table import COLUMNS, Column  # noqa: F401


def build_sweep_report(*args, **kwargs):  # noqa: ANN001, ANN201 - lazy: plotting imports matplotlib
    from llm_perf_opt.report.sweep import build_sweep_report as build

    return build(*args, **kwargs)


def build_analytic_report(*args, **kwargs):  # noqa: ANN001, ANN201
    from llm_perf_opt.report.analytic_sweep import build_analytic_report as build

    return build(*args, **kwargs)
