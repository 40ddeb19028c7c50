"""Serving in the reports: the design-space view (a Hydra multirun of ./dev size over a hardware figure into the
sweep report), the latency-vs-throughput plot beside curve.csv, and pages/day per GPU in the analytic sweep."""

from __future__ import annotations

import csv

from job_scripts import run_job_in_process
from shared_runs import load_benchmark

from llm_perf_opt.analytic.serving_file import load_serving

BANDWIDTHS = (1000, 4000)
CUSTOM = [
    "hardware=custom",
    "hardware.matmul_tflops.bfloat16.value=500",
    "hardware.vector_tflops.value=60",
    "hardware.memory_gb.value=96",
]


def test_size_multirun_over_bandwidth_into_the_sweep_report(tmp_path):
    sweep_dir = tmp_path / "sweep"
    r = run_job_in_process(
        "size",
        "--multirun",
        *CUSTOM,
        f"hardware.memory_bandwidth_gbs.value={','.join(map(str, BANDWIDTHS))}",
        "tpot_s=0.02",
        "ttft_s=1",
        "pages_per_day=1000000",
        f"hydra.sweep.dir={sweep_dir}",
    )
    assert r.returncode == 0, r.stderr[-3000:]
    for job in ("0", "1"):  # the curve's plot beside its CSV
        assert {"curve.csv", "curve.svg", "curve.png", "serving.json"} <= {p.name for p in (sweep_dir / job).iterdir()}
    from llm_perf_opt.report.sweep import build_sweep_report

    rep = build_sweep_report(sweep_dir)
    rows = list(csv.DictReader(rep.csv.open()))
    assert [row["status"] for row in rows] == ["ok", "ok"]
    assert [float(row["hw_bandwidth_gbs"]) for row in rows] == list(map(float, BANDWIDTHS))
    compared = 0
    for job, row in zip(("0", "1"), rows):  # every serving column is the job's serving.json, read, not recomputed
        s = load_serving(sweep_dir / job)
        assert row["serve_level"] == s.level == "ideal"
        assert float(row["pages_per_day_per_device"]) == s.sizing["pages_per_day_per_device"]
        assert int(row["size_replicas"]) == s.sizing["replicas"]
        for req in s.sizing["requirements"]:
            assert float(row[f"required_bandwidth_gbs_{req['target']}"]) == req["required_bandwidth_gbs"]
            compared += 1
    assert compared == 6
    # ideal level, the decode step bandwidth-bound: 4x the bandwidth serves more pages per device, fewer replicas
    assert float(rows[1]["pages_per_day_per_device"]) > float(rows[0]["pages_per_day_per_device"])
    assert int(rows[1]["size_replicas"]) <= int(rows[0]["size_replicas"])
    stems = {p.stem for p in rep.plots}
    assert {"design_memory_bandwidth_gbs", "design_memory_bandwidth_gbs_required"} <= stems
    for plot in rep.plots:
        if plot.stem.startswith("design_"):
            assert plot.paths["svg"].stat().st_size > 0 and plot.paths["png"].stat().st_size > 0
    assert "pages/day per device" in rep.html.read_text()


def test_analytic_sweep_pages_per_day_per_gpu(tmp_path):
    """pages/day per GPU = continuous batching at the largest batch that fits: checked against the per-point
    serving figures (analytic.serving.serving_point) and the memory bound at that batch and the next."""
    from llm_perf_opt.analytic.memory_model import memory_use
    from llm_perf_opt.analytic.serving import serving_point
    from llm_perf_opt.analytic.time.hardware import load_hardware
    from llm_perf_opt.deepseek_ocr_shared.serving import serving_model
    from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
    from llm_perf_opt.dsocr.layout import compute_view_layout
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.families import family
    from llm_perf_opt.report.analytic_sweep import SERVE_OUTPUT_TOKENS, build_analytic_report, load_modes

    v1 = family("dsocr")
    rep = build_analytic_report(tmp_path, modes=["tiny", "gundam"], n=3, plots=False, hardware=["a100_80gb"], family=v1)
    rows = list(csv.DictReader(rep.csv.open()))
    hw = load_hardware("a100_80gb")
    roof, spec, modes = hw.roof("bfloat16"), ModelSpec.named("deepseek_ocr"), load_modes(v1, ["tiny", "gundam"])
    checked = 0
    for row in rows:
        w, h, b = int(row["width"]), int(row["height"]), int(row["serve_batch_a100_80gb"])
        model = DeepseekOCRAnalyticModel(spec, compute_view_layout(modes[row["mode"]], w, h), dtype="bfloat16")
        sm = serving_model(model, None, "bfloat16")
        point = serving_point(sm, roof, b, SERVE_OUTPUT_TOKENS)
        assert abs(float(row["pages_per_day_a100_80gb"]) / point.continuous.pages_per_day - 1) < 1e-9
        assert memory_use(sm, b, SERVE_OUTPUT_TOKENS, prefill_batch=1).total <= hw.memory_bytes
        assert memory_use(sm, b + 1, SERVE_OUTPUT_TOKENS, prefill_batch=1).total > hw.memory_bytes
        checked += 1
    assert checked == len(rows) == 2 * 3 * 3


def test_trace_job_serving_summary_run_page_and_columns(tmp_path):
    """The trace job with a datasheet roof: serving.json, summary.json's `serving` fields (the same figures), the
    run page's Serving section, and the sweep report's columns read from the job."""
    import json

    from llm_perf_opt.report.collect import read_job
    from llm_perf_opt.report.serving_report import SERVING_COLUMNS
    from llm_perf_opt.run_artifacts import load_summary

    out = tmp_path / "run"
    r = run_job_in_process("trace", "trace.enabled=false", "hardware=a100_80gb", f"hydra.run.dir={out}")
    assert r.returncode == 0, r.stderr[-3000:]
    s = load_serving(out)
    assert s.job == "trace" and s.batch == 1 and s.hardware["name"] == "a100_80gb"
    summary = load_summary(out / "summary.json")
    assert summary.serving == json.loads(json.dumps(s.summary()))
    assert summary.serving["serve_ttft_s"] == s.point["static"]["ttft_s"] > 0
    page = (out / "run.html").read_text()
    section = page[page.index('id="serving"') : page.index("<h2>Artifacts</h2>")]
    assert "static batching" in section and "continuous batching" in section and "<svg" in section
    assert "ideal level" in section
    job = read_job(out, tmp_path)
    row = {c.key: c.get(job) for c in SERVING_COLUMNS}
    assert row["serve_ttft_s"] == s.point["static"]["ttft_s"] and row["serve_level"] == "ideal"
    assert row["hw_memory_gb"] == 80.0


def _memory_fit():
    return load_benchmark("memory_fit")


def test_memory_fit_arguments():
    import pytest

    mf = _memory_fit()
    args = mf.parse_args([])
    assert args.models == ["twin_tiny", "twin"] and args.batches == [1] and args.runs is None
    args = mf.parse_args(["--models", "twin_tiny", "--batches", "1", "2", "4"])
    assert (args.models, args.batches) == (["twin_tiny"], [1, 2, 4])
    with pytest.raises(SystemExit) as exc:
        mf.parse_args(["--batches", "0"])
    assert exc.value.code == 2


def test_memory_fit_prediction_of_a_real_run(tmp_path):
    """The benchmark's prediction of a real tiny-twin forward at batch 2: weights = the model's own parameter
    count x 4 bytes (float32), KV = 2 sequences x layers x 2 (keys, values) x kv heads x head dim x prompt
    positions x 4 bytes; the summary says the batch and each sequence's length."""
    from llm_perf_opt.dsocr.spec import ModelSpec

    mf = _memory_fit()
    run, why = mf.run_job("twin_tiny", 2, tmp_path / "run")
    assert run is not None, why
    r = mf.predict(run)
    from llm_perf_opt.run_artifacts import load_summary

    s = load_summary(run / "summary.json")
    d = ModelSpec.named("tiny").decoder
    assert r["dtype"] == "float32" and r["batch"] == 2
    assert s.tokens.batch == 2 and s.tokens.lengths == [s.tokens.sequence] * 2  # two copies of one page: no padding
    assert r["weights"] == s.params.total * 4
    assert r["kv"] == 2 * d.num_layers * 2 * d.num_kv_heads * d.head_dim * s.tokens.sequence * 4
    assert r["predicted"] == r["weights"] + r["inputs"] + r["kv"] + r["activations"] + r["allowance"]
    assert r["before"] == s.forward.rss_before_bytes > 0 and r["measured"] == s.forward.peak_rss_bytes >= r["before"]
