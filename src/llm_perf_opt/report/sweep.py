"""The report of one multirun: `report.csv`, `report.md`, `report.html` and `report_plots/` in the sweep dir.

Data first (`collect_sweep` -> rows -> plots -> `page_data`), then rendering (`render`: the CSV writer
and one template per format).

Predicted time to first token per job on one or more GPUs (`ttft_<hw>_s` columns and a plot per mode and
page): on the datasheets `hardware` names, by default the datasheets the sweep's jobs ran with
(`hardware=h100_sxm` in the sweep), else `DEFAULT_HARDWARE`. A job that predicted on that roof itself
gives its own figure; otherwise it is computed here from the job's spec and layout (pure arithmetic).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from llm_perf_opt.report import render
from llm_perf_opt.report.collect import JobRecord, Sweep, collect_sweep
from llm_perf_opt.report.render import PlotView, TableView
from llm_perf_opt.report.table import (
    COLUMNS,
    PAGE_ORDER,
    Column,
    build_rows,
    family_columns,
    job_columns,
    mode_label,
    mode_order,
    order_key,
    other_label,
    page_label,
    part_flops,
    predicted_ttft,
    prediction_columns,
    reported_parts,
    section,
    stage_flops,
    sweep_axes,
)

PLOTS_DIR = "report_plots"
DEFAULT_HARDWARE = ("h100_sxm",)


def sweep_hardware(sweep: Sweep, hardware: Optional[list[str]] = None) -> list[str]:
    """The datasheets to predict on: `hardware` when given (checked), else the datasheets the jobs ran
    with, else DEFAULT_HARDWARE."""
    from llm_perf_opt.analytic.time.hardware import datasheet_names
    from llm_perf_opt.errors import ConfigError

    sheets = datasheet_names()
    if hardware is not None:
        for name in hardware:
            if name not in sheets:
                raise ConfigError.field("--hardware", name, f"one of {', '.join(sheets)} (datasheets)")
        return list(hardware)
    used: dict[str, None] = {}
    for job in sweep.jobs:
        rf = section(job, "roofline")
        if rf is not None and rf.primary in sheets:
            used.setdefault(rf.primary)
    return list(used) or list(DEFAULT_HARDWARE)


@dataclass
class Plot:
    stem: str
    caption: str
    paths: dict[str, Path] = field(default_factory=dict)


@dataclass
class SweepReport:
    sweep: Sweep
    rows: list[dict[str, Any]]
    csv: Path
    markdown: Path
    html: Path
    plots: list[Plot]
    hardware: list[str] = field(default_factory=list)  # the datasheets of the ttft_<hw>_s columns

    @property
    def failed(self) -> list[dict[str, Any]]:
        """Rows of jobs that failed, were interrupted, killed or never started (not ok, not running)."""
        return [r for j, r in zip(self.sweep.jobs, self.rows) if j.failed]

    @property
    def running(self) -> list[dict[str, Any]]:
        return [r for j, r in zip(self.sweep.jobs, self.rows) if j.running]


def _join(*parts: str) -> str:
    return " · ".join(p for p in parts if p)


def _series_table(jobs: list[JobRecord], x_of, hue_of, value_of, x_order) -> tuple[list[str], dict[str, list]]:
    cats = sorted({x_of(j) for j in jobs}, key=lambda c: order_key(c, x_order))
    hues: dict[str, dict[str, Any]] = {}
    for job in jobs:
        value = value_of(job)
        if value is None:
            continue
        hues.setdefault(hue_of(job), {}).setdefault(x_of(job), value)
    series = {hue: [vals.get(c) for c in cats] for hue, vals in hues.items()}
    return cats, series


def make_plots(sweep: Sweep, out_dir: Path, hardware: tuple[str, ...] = (), family: Any = None) -> list[Plot]:
    from llm_perf_opt.report import plots as plotting

    jobs = [j for j in sweep.jobs if j.ok]
    if not jobs:
        return []
    axes = sweep_axes(sweep.jobs)
    modes = {mode_label(j) for j in jobs}
    pages = {page_label(j) for j in jobs}
    out: list[Plot] = []

    def page_hue(j: JobRecord) -> str:
        return _join(page_label(j) if len(pages) > 1 else "", other_label(j, axes))

    def mode_hue(j: JobRecord) -> str:
        return _join(mode_label(j) if len(modes) > 1 else "", other_label(j, axes))

    def tokens(j: JobRecord) -> Any:
        tok = section(j, "tokens")
        return tok.image if tok is not None else None

    def prefill(j: JobRecord) -> Any:
        return stage_flops(j, "prefill", "analytic")

    views = []
    if len(modes) > 1 or len(pages) == 1:
        views.append(("mode", mode_label, page_hue, mode_order(family), "workload mode"))
    if len(pages) > 1:
        views.append(("page", page_label, mode_hue, PAGE_ORDER, "page shape"))
    for axis, x_of, hue_of, order, xlabel in views:
        cats, series = _series_table(jobs, x_of, hue_of, tokens, order)
        if series:
            fig = plotting.grouped_bars(
                cats, series, title=f"Image tokens per {xlabel}", ylabel="image tokens", kind="count", xlabel=xlabel
            )
            out.append(
                Plot(
                    f"tokens_by_{axis}",
                    f"Image tokens per {xlabel} (global view + crops, with the newline and separator tokens).",
                    plotting.save(fig, out_dir, f"tokens_by_{axis}"),
                )
            )
        cats, series = _series_table(jobs, x_of, hue_of, prefill, order)
        if series:
            fig = plotting.grouped_bars(
                cats,
                series,
                title=f"Prefill FLOPs per {xlabel} (analytic)",
                ylabel="FLOPs",
                kind="flops",
                xlabel=xlabel,
            )
            out.append(
                Plot(
                    f"flops_by_{axis}",
                    f"Prefill FLOPs per {xlabel}: analytic, matmul-class ops as "
                    "torch's flop counter counts them (vision + language over the whole prompt).",
                    plotting.save(fig, out_dir, f"flops_by_{axis}"),
                )
            )

    # stacked FLOPs by part, one bar per job: measured when every job measured every part, else analytic
    parts = reported_parts(jobs)
    colors = {p: family.parts.color(p) for p in parts} if family is not None else None
    measured = all(part_flops(j, p, "measured") is not None for j in jobs for p in parts)
    which = "measured" if measured else "analytic"
    stacks = {p: [part_flops(j, p, which) for j in jobs] for p in parts}
    if any(v is not None for vals in stacks.values() for v in vals):
        labels = [
            _join(
                f"#{j.num}",
                mode_label(j) if len(modes) > 1 else "",
                page_label(j) if len(pages) > 1 else "",
                other_label(j, axes),
            )
            for j in jobs
        ]
        fig = plotting.stacked_bars(
            labels, stacks, title=f"Prefill FLOPs by part ({which})", ylabel="FLOPs", colors=colors
        )
        out.append(
            Plot(
                "flops_by_part",
                f"Prefill FLOPs by part ({which}): SAM, CLIP, projector, decoder layers, lm_head; one bar per job.",
                plotting.save(fig, out_dir, "flops_by_part"),
            )
        )

    # predicted time to first token per mode / page, one bar colour per GPU (and page / mode when both vary)
    for axis, x_of, hue_of, order, xlabel in views:
        if not hardware:
            break
        cats = sorted({x_of(j) for j in jobs}, key=lambda c: order_key(c, order))
        series: dict[str, list] = {}
        for name in hardware:
            for job in jobs:
                hue = _join(name, hue_of(job))
                values = series.setdefault(hue, [None] * len(cats))
                slot = cats.index(x_of(job))
                if values[slot] is None:
                    values[slot] = predicted_ttft(job, name)
        if any(v is not None for vals in series.values() for v in vals):
            fig = plotting.grouped_bars(
                cats,
                series,
                title=f"Predicted time to first token per {xlabel}",
                ylabel="time to first token (s)",
                kind="seconds",
                xlabel=xlabel,
                logy=True,
            )
            out.append(
                Plot(
                    f"ttft_by_{axis}",
                    f"Predicted time to first token (the prefill) per {xlabel} on "
                    f"{', '.join(hardware)} (each datasheet's default dtype, roofline convention of "
                    "analytic.time.ideal; log scale).",
                    plotting.save(fig, out_dir, f"ttft_by_{axis}"),
                )
            )

    # measured vs predicted forward on the job's own device, once jobs profile
    if any(section(j, "profile") is not None and section(j, "roofline") is not None for j in jobs):
        from llm_perf_opt.report.table import job_efficiency

        labels = [
            _join(f"#{j.num}", mode_label(j) if len(modes) > 1 else "", page_label(j) if len(pages) > 1 else "")
            for j in jobs
        ]
        measured_s = [section(j, "profile").plain_s if section(j, "profile") is not None else None for j in jobs]
        predicted_s = []
        for j in jobs:
            eff, meas = job_efficiency(j, "forward"), section(j, "profile")
            predicted_s.append(eff * meas.plain_s if eff is not None and meas is not None else None)
        fig = plotting.grouped_bars(
            labels,
            {"measured": measured_s, "predicted (the job's device roof)": predicted_s},
            title="Prefill: measured vs predicted on the job's device",
            ylabel="seconds",
            kind="seconds",
            xlabel="job",
            logy=True,
        )
        out.append(
            Plot(
                "prefill_measured_vs_predicted",
                "The forward (prefill) per job: the plain forward's wall "
                "time (median of the profile's repeats) and the roofline's prediction on the roof of the "
                "device it ran on (the calibration); efficiency = predicted / measured.",
                plotting.save(fig, out_dir, "prefill_measured_vs_predicted"),
            )
        )

    # measured vs analytic, only once jobs measure
    if any(stage_flops(j, "prefill", "measured") is not None for j in jobs):
        labels = [f"#{j.num}" for j in jobs]
        series = {
            "measured": [stage_flops(j, "prefill", "measured") for j in jobs],
            "analytic": [stage_flops(j, "prefill", "analytic") for j in jobs],
        }
        fig = plotting.grouped_bars(
            labels, series, title="Prefill FLOPs: measured vs analytic", ylabel="FLOPs", kind="flops", xlabel="job"
        )
        out.append(
            Plot(
                "flops_measured_vs_analytic",
                "Prefill FLOPs per job, measured (FlopCounterMode) and analytic.",
                plotting.save(fig, out_dir, "flops_measured_vs_analytic"),
            )
        )
    return out


def sweep_command(sweep: Sweep) -> tuple[str, str]:
    """('./dev sweep <overrides>', 'k=v ...' swept by hydra.sweeper.params, e.g. from an experiment)."""
    params = " ".join(f"{k}={v}" for k, v in sweep.sweeper_params.items())
    overrides = sweep.task_overrides
    return ("./dev sweep " + " ".join(overrides) if overrides or params else ""), params


def _links(sweep_dir: Path, out: Path) -> dict[str, Any]:
    """Hrefs relative to the page in `out` (the sweep dir unless told otherwise)."""

    def rel(target: Path) -> str:
        return Path(os.path.relpath(target, out)).as_posix()

    def job_href(row: dict[str, Any]) -> Optional[str]:
        return rel(Path(row["job_dir"])) + "/" if row.get("job_dir") else None

    def svg_href(row: dict[str, Any]) -> Optional[str]:
        return rel(sweep_dir / row["grouped_svg"]) if row.get("grouped_svg") else None

    return {"job": job_href, "grouped_svg": svg_href}


def failures(sweep: Sweep, rows: list[dict[str, Any]], out: Path) -> list[dict[str, Any]]:
    """The failed jobs: number, overrides, status and a link (relative to the page) to what it left."""
    items = []
    for job, row in zip(sweep.jobs, rows):
        if not job.failed:
            continue
        where = job.files.get("error") or job.files.get("log")
        items.append(
            {
                "num": job.num,
                "overrides": " ".join(job.overrides),
                "status": row["status"],
                "href": Path(os.path.relpath(sweep.dir / where, out)).as_posix() if where else None,
                "link_text": Path(where).name if where else None,
            }
        )
    return items


# The job table's column groups (report.html's column chooser): what a job is, then what it measured; the table opens
# with JOB_GROUPS shown, every other group one click away (report.csv and report.md hold every column regardless).
JOB_GROUPS = ("job", "time")
_JOB_KEYS = {"job", "status", "overrides", "model", "mode", "page", "grid", "views", "grouped_svg", "job_dir"}
_SHAPE_KEYS = {"base_size", "image_size", "crop_mode", "page_width", "page_height", "image_tokens", "seq_len",
               "params", "ops", "module_calls"}  # fmt: skip
_SERVING_PREFIXES = ("serve_", "hw_", "pages_per_day", "knee_", "size_", "required_")


def column_group(c: Column) -> str:
    """The group of a job-table column: job, shape, FLOPs, decode, time, memory, serving, or family (the columns a
    model family adds)."""
    k = c.key
    if k in _JOB_KEYS:
        return "job"
    if k in _SHAPE_KEYS:
        return "shape"
    if k.startswith(_SERVING_PREFIXES):
        return "serving"
    if c.kind in ("seconds", "seconds_list") or k.startswith(("ttft_", "efficiency_", "profile_")) or k == "roof":
        return "time"
    if k.startswith(("flops_", "rel_error_")) or k == "analytic_source":
        return "FLOPs"
    if k.startswith(("decode_", "kv_")):
        return "decode"
    if c.kind in ("bytes", "bytes_list") or k.startswith("peak_"):
        return "memory"
    if k in {col.key for col in COLUMNS}:
        return "checks"
    return "family"


def page_data(
    sweep: Sweep, rows: list[dict[str, Any]], plots: list[Plot], out: Path, columns: Optional[list[Column]] = None
) -> dict[str, Any]:
    """Everything report.md and report.html show, as plain values and views."""
    columns = columns or COLUMNS
    n_ok = sum(1 for j in sweep.jobs if j.ok)
    n_running = sum(1 for j in sweep.jobs if j.running)
    n_failed = len(sweep.jobs) - n_ok - n_running
    command, params = sweep_command(sweep)
    models = sorted({str(r["model"]) for r in rows if r.get("model")})
    brief = [c for c in columns if c.brief and (not c.when_present or any(r.get(c.key) is not None for r in rows))]
    return {
        "title": f"Sweep report: {sweep.experiment or sweep.dir.name}",
        "sweep_dir": str(sweep.dir),
        "generated": time.strftime("%Y-%m-%d %H:%M:%S"),
        "command": command,
        "params": params,
        "n_jobs": len(sweep.jobs),
        "n_ok": n_ok,
        "n_failed": n_failed,
        "cards": [
            ("jobs", len(sweep.jobs), ""),
            ("ok", n_ok, ""),
            ("failed", n_failed, "bad" if n_failed else ""),
            *([("running", n_running, "")] if n_running else []),
            ("model", ", ".join(models) or "—", ""),
        ],
        "failures": failures(sweep, rows, out),
        "plots": [
            PlotView(
                p.paths["svg"],
                p.caption,
                f"{PLOTS_DIR}/{p.stem}.svg",
                f"{PLOTS_DIR}/{p.stem}.png",
                wide=p.stem == "flops_by_part",
            )
            for p in plots
        ],
        "jobs": TableView(
            brief,
            rows,
            _links(sweep.dir, out),
            groups={c.key: column_group(c) for c in brief},
            shown=[g for g in JOB_GROUPS if any(column_group(c) == g for c in brief)],
        ),
        "columns": columns,
    }


def build_sweep_report(
    sweep_dir: str | Path,
    out_dir: Optional[str | Path] = None,
    plots: bool = True,
    hardware: Optional[list[str]] = None,
    family: Any = None,
    family_named: Optional[Callable[[str], Any]] = None,
) -> SweepReport:
    """Aggregate every job of the multirun in `sweep_dir` (files are written to `out_dir`, default the sweep
    dir); predicted time to first token on `hardware` (see `sweep_hardware`). `family_named`: the family
    registry's lookup, for the columns of the jobs' own families (`family_columns`)."""
    sweep = collect_sweep(sweep_dir)
    names = sweep_hardware(sweep, hardware)
    columns = (
        job_columns(reported_parts(sweep.jobs))
        + family_columns(sweep.jobs, family_named, family)
        + prediction_columns(names)
    )
    serving = any(getattr(j, "serving", None) is not None for j in sweep.jobs)
    if serving:  # jobs of ./dev analyze hardware= / ./dev size: their serving.json (report.serving_report)
        from llm_perf_opt.report.serving_report import SERVING_COLUMNS

        columns = columns + SERVING_COLUMNS
    out = Path(out_dir) if out_dir else sweep.dir
    out.mkdir(parents=True, exist_ok=True)
    rows = build_rows(sweep.jobs, columns)
    plot_list = make_plots(sweep, out / PLOTS_DIR, tuple(names), family) if plots else []
    if plots and serving:
        from llm_perf_opt.report.serving_report import design_space_plots

        plot_list += [
            Plot(stem, caption, paths) for stem, caption, paths in design_space_plots(sweep.jobs, out / PLOTS_DIR)
        ]
    data = page_data(sweep, rows, plot_list, out, columns)
    csv_path = render.write_csv(out / "report.csv", columns, rows)
    md_path = render.write_page(out / "report.md", "sweep.md.j2", **data)
    html_path = render.write_page(out / "report.html", "sweep.html.j2", **data)
    return SweepReport(sweep, rows, csv_path, md_path, html_path, plot_list, names)
