"""The analytic-only page sweep: many page sizes, no model run, tokens and FLOPs as plots and CSV."""

from __future__ import annotations

import csv

from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.family import FAMILY
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.report.analytic_sweep import build_analytic_report

from .conftest import run_report


def test_analytic_report(tmp_path):
    rep = build_analytic_report(tmp_path, modes=["tiny", "gundam"], n=6, min_side=300, max_side=3000, family=FAMILY)
    with open(rep.csv, newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 2 * 6 * 6
    gundam = VisionWorkload(1024, 640, True)
    spec = ModelSpec.deepseek_ocr()
    for row in rows[36:40]:
        w, h = int(row["width"]), int(row["height"])
        layout = compute_view_layout(gundam, w, h)
        assert row["mode"] == "gundam" and int(row["image_tokens"]) == layout.image_tokens
        assert int(row["prefill_flops"]) == DeepseekOCRAnalyticModel(spec, layout).prefill().flops_matmul
    for stem in (
        "heatmap_tokens",
        "heatmap_prefill_flops",
        "tokens_by_aspect",
        "prefill_flops_by_aspect",
        "tokens_by_size",
    ):
        assert (tmp_path / "analytic_plots" / f"{stem}.svg").is_file()
        assert (tmp_path / "analytic_plots" / f"{stem}.png").is_file()
    page = rep.html.read_text()
    assert page.count("<svg") >= 5 and "letter_portrait" in page
    assert rep.points > 72  # the time it takes: ./dev bench sweep_modes


def test_analytic_cli(tmp_path):
    proc = run_report("--analytic", tmp_path, "--modes", "tiny,base", "--n", "4", "--no-plots")
    assert proc.returncode == 0, proc.stderr
    assert "page layouts and cost models in" in proc.stdout
    assert sum(1 for _ in open(tmp_path / "analytic.csv")) == 1 + 2 * 16
    proc = run_report("--analytic", tmp_path, "--modes", "huge", "--n", "4", "--overwrite")
    assert proc.returncode == 2 and "--modes='huge' is invalid" in proc.stderr
    assert sum(1 for _ in open(tmp_path / "analytic.csv")) == 1 + 2 * 16  # a refused report replaces nothing
