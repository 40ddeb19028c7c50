"""Predicted times in the reports: the analytic page sweep and the sweep report get time-to-first-token
columns and plots for one or more GPUs; the sweep report also the jobs' own measured-vs-predicted figures."""

from __future__ import annotations

import csv

import pytest
from job_scripts import run_job_in_process
from timing_helpers import error_lines

from llm_perf_opt.analytic.time.hardware import load_hardware
from llm_perf_opt.analytic.time.ideal import predict
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.family import FAMILY
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.report.analytic_sweep import build_analytic_report
from llm_perf_opt.run_artifacts import load_summary


def test_analytic_report_predicts_ttft_on_several_gpus(tmp_path):
    rep = build_analytic_report(
        tmp_path,
        modes=["tiny", "gundam"],
        n=3,
        min_side=400,
        max_side=2400,
        hardware=["h100_sxm", "rtx5090"],
        family=FAMILY,
    )
    with open(rep.csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {"ttft_h100_sxm_s", "decode_h100_sxm_s", "ttft_rtx5090_s", "decode_rtx5090_s"} <= set(rows[0])
    spec, gundam = ModelSpec.deepseek_ocr(), VisionWorkload(1024, 640, True)
    gundam_rows = [r for r in rows if r["mode"] == "gundam"]
    assert len(gundam_rows) == 3 * 3  # n=3 widths x 3 heights
    for row in gundam_rows:
        model = DeepseekOCRAnalyticModel(spec, compute_view_layout(gundam, int(row["width"]), int(row["height"])))
        for gpu in ("h100_sxm", "rtx5090"):
            roof = load_hardware(gpu).roof("bfloat16")
            assert float(row[f"ttft_{gpu}_s"]) == pytest.approx(predict(model.prefill(), roof).time_s)
            assert float(row[f"decode_{gpu}_s"]) == pytest.approx(predict(model.decode(), roof).time_s)
    for stem in ("ttft_by_page_h100_sxm", "ttft_by_page_rtx5090", "ttft_by_size"):
        assert (tmp_path / "analytic_plots" / f"{stem}.svg").is_file(), stem
    md = rep.markdown.read_text()
    assert "Predicted time to first token on NVIDIA H100 SXM5 80GB (bfloat16)" in md
    assert "Predicted time to first token on NVIDIA GeForce RTX 5090 (bfloat16)" in md
    assert "`ttft_rtx5090_s`" in md  # the glossary names the new columns


def test_analytic_report_hardware_options(tmp_path):
    rep = build_analytic_report(tmp_path / "none", modes=["tiny"], n=2, hardware=[], plots=False, family=FAMILY)
    assert "ttft_" not in rep.csv.read_text().splitlines()[0]
    default = build_analytic_report(tmp_path / "default", modes=["tiny"], n=2, plots=False, family=FAMILY)
    assert "ttft_h100_sxm_s" in default.csv.read_text().splitlines()[0]
    with pytest.raises(ConfigError, match="--hardware='measured' is invalid"):
        build_analytic_report(tmp_path / "bad", modes=["tiny"], n=2, hardware=["measured"], family=FAMILY)
    assert not (tmp_path / "bad").exists()


def test_report_cli_hardware_flag(tmp_path):
    ok = run_job_in_process(
        "report",
        "--analytic",
        tmp_path / "a",
        "--modes",
        "tiny",
        "--n",
        "2",
        "--no-plots",
        "--hardware",
        "h100_sxm,l40s",
    )
    assert ok.returncode == 0, ok.stderr
    assert "ttft_l40s_s" in (tmp_path / "a" / "analytic.csv").read_text().splitlines()[0]
    bad = run_job_in_process("report", "--analytic", tmp_path / "b", "--n", "2", "--hardware", "h999")
    assert bad.returncode == 2 and bad.stderr.startswith(
        "error: --hardware='h999' is invalid: one of a100_40gb, a100_80gb"
    )
    assert not (tmp_path / "b").exists()


@pytest.fixture(scope="module")
def timed_sweep(small_sweep):
    """Two profiled jobs of the tiny twin on the measured roof, tiny and gundam: the session's `small_sweep`."""
    return small_sweep[0]


@pytest.mark.slow
def test_sweep_report_columns_and_plots(timed_sweep, tmp_path):
    from llm_perf_opt.report.sweep import build_sweep_report

    rep = build_sweep_report(timed_sweep, out_dir=tmp_path, hardware=["h100_sxm", "rtx5090"])
    assert rep.hardware == ["h100_sxm", "rtx5090"]
    by_mode = {row["mode"]: row for row in rep.rows}
    assert set(by_mode) == {"tiny", "gundam"}
    for job in rep.sweep.jobs:
        row = next(r for r in rep.rows if r["job"] == job.num)
        summary = load_summary(job.dir / "summary.json")
        rf, prof = summary.roofline, summary.profile
        assert row["roof"] == "measured (float32)"
        assert row["ttft_predicted_s"] == rf.figures()["ttft_s"]
        assert row["prefill_measured_s"] == prof.plain_s
        forward = rf.row("forward")
        assert row["efficiency_prefill"] == forward["predicted"]["measured"]["efficiency"]
        assert row["efficiency_prefill"] == pytest.approx(forward["predicted"]["measured"]["time_s"] / prof.plain_s)
        assert row["profile_coverage"] == prof.coverage
        # per GPU: only what the job's own roofline stage predicted (these jobs ran hardware=measured); the report
        # reads the jobs' artifacts and never recomputes the analytic model
        assert set(rf.roofs) == {"measured"}
        for gpu in ("h100_sxm", "rtx5090"):
            assert row[f"ttft_{gpu}_s"] is None
    header = rep.csv.read_text().splitlines()[0].split(",")
    assert {"ttft_predicted_s", "efficiency_prefill", "ttft_h100_sxm_s", "ttft_rtx5090_s", "efficiency_sam"} <= set(
        header
    )
    stems = {p.stem for p in rep.plots}
    assert "prefill_measured_vs_predicted" in stems


@pytest.mark.slow
def test_sweep_report_default_hardware_and_bad_hardware(timed_sweep, tmp_path):
    from llm_perf_opt.report.sweep import DEFAULT_HARDWARE, build_sweep_report

    rep = build_sweep_report(timed_sweep, out_dir=tmp_path / "default", plots=False)
    assert rep.hardware == list(DEFAULT_HARDWARE)  # the jobs ran on the measured roof: the default list
    proc = run_job_in_process("report", timed_sweep, "--out", tmp_path / "bad", "--hardware", "h999")
    assert proc.returncode == 2 and error_lines(proc) == [
        "error: --hardware='h999' is invalid: one of a100_40gb, a100_80gb, h100_pcie, h100_sxm, h200, l40s, rtx4090, "
        "rtx5090 (datasheets)"
    ]
    assert not (tmp_path / "bad").exists()
