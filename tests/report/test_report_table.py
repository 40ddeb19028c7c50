"""The report's columns on synthetic job directories: a summary with the base sections only, one with
every section the trace job writes, a failed job, a malformed summary; and a job without analytic figures
(the report never recomputes them: they show as missing)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from llm_perf_opt.artifacts import write_artifact
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.report import table
from llm_perf_opt.report.collect import collect_sweep
from llm_perf_opt.report.table import MISSING, Column, build_rows, column, fmt
from llm_perf_opt.run_artifacts import SUMMARY_SCHEMA

GUNDAM = {"mode": "gundam", "base_size": 1024, "image_size": 640, "crop_mode": True, "tile_size": 640}


def base_summary(width: int = 1700, height: int = 2200) -> dict:
    layout = compute_view_layout(VisionWorkload(1024, 640, True), width, height)
    return {
        "model": {"name": "twin_tiny", "source": "twin", "spec": "deepseek-ocr-tiny"},
        "workload": dict(GUNDAM),
        "page": {"width": width, "height": height, "image": None},
        "layout": layout.as_dict(),
        "tokens": {
            "image": layout.image_tokens,
            "prompt": 4,
            "sequence": layout.image_tokens + 5,
            "prompt_source": "fallback",
        },
        "tensors": {"input_ids": [[1, layout.image_tokens + 5], "torch.int64"]},
        "runtime": {"device": "cpu", "dtype": "float32", "attn_implementation": "eager", "autocast": False},
        "status": "ok",
    }


def make_job(
    sweep: Path,
    num: int,
    overrides: list[str],
    summary: dict | None = None,
    error: dict | None = None,
    choices: dict | None = None,
    files: tuple[str, ...] = (),
) -> Path:
    job = sweep / str(num)
    (job / ".hydra").mkdir(parents=True)
    if not (sweep / "multirun.yaml").is_file():  # a sweep has one; this sweeper is not one the report expands
        OmegaConf.save(
            OmegaConf.create({"hydra": {"sweeper": {"_target_": "synthetic.Sweeper"}}}), sweep / "multirun.yaml"
        )
    cfg = {
        "model": {"name": "twin_tiny", "source": "twin", "spec": "tiny"},
        "workload": {**GUNDAM, "name": "gundam", "page": {"width": 1700, "height": 2200, "image": None}},
        "runtime": {"dtype": "float32"},
    }
    OmegaConf.save(OmegaConf.create(cfg), job / ".hydra" / "config.yaml")
    hydra = {
        "hydra": {
            "job": {"num": num},
            "runtime": {"choices": {"model": "twin_tiny", "workload": "gundam", **(choices or {})}},
        }
    }
    OmegaConf.save(OmegaConf.create(hydra), job / ".hydra" / "hydra.yaml")
    OmegaConf.save(OmegaConf.create(overrides), job / ".hydra" / "overrides.yaml")
    if summary is not None:
        write_artifact(job / "summary.json", SUMMARY_SCHEMA, 1, summary)
    if error is not None:
        (job / "error.json").write_text(json.dumps(error))
    for name in files:
        (job / name).write_text("<svg xmlns='http://www.w3.org/2000/svg'/>")
    return job


def full_summary() -> dict:
    s = base_summary()
    s.update(
        {
            "params": {"total": 12_345_678, "by_part": {"sam": 1000}},
            "forward": {
                "seconds": 0.5,
                "peak_rss_bytes": 2 * 10**9,
                "logits_shape": [1, 908, 129280],
                "logits_finite": True,
                "peak_cuda_bytes": None,
            },
            "trace": {"num_ops": 4321, "module_calls": 321, "capture_seconds": 12.5},
            "grouping": {
                "nodes": 40,
                "checks": [
                    {"name": "a", "status": "ok"},
                    {"name": "b", "status": "ok"},
                    {"name": "c", "status": "failed"},
                ],
            },
            "flops": {
                "vision": {"analytic": 100, "measured": 101, "rel_error": 0.0099, "ok": False},
                "prefill": {"analytic": 1000, "measured": 1000, "rel_error": 0.0, "ok": True},
            },
            "analytic": {
                **{
                    s_: {"flops": 7, "flops_matmul": 6, "io_bytes": 8, "weight_bytes": 9, "activation_bytes": 10}
                    for s_ in ("vision", "prefill", "decode")
                },
                "parts": {p: 5 for p in ("sam", "clip", "projector", "decoder", "lm_head")},
            },
            "parts": {
                p: {"flops_analytic": 10, "flops_measured": 11}
                for p in ("sam", "clip", "projector", "decoder", "lm_head")
            },
        }
    )
    return s


def test_every_section_lands_in_its_column(tmp_path):
    make_job(tmp_path, 0, ["workload=gundam"], full_summary(), files=("callgraph.grouped.svg",))
    [row] = build_rows(collect_sweep(tmp_path).jobs)
    assert row["status"] == "ok" and row["mode"] == "gundam" and row["page"] == "1700x2200"
    assert row["params"] == 12_345_678 and row["ops"] == 4321 and row["module_calls"] == 321
    assert row["flops_vision_measured"] == 101 and row["flops_vision_analytic"] == 100
    assert row["rel_error_vision"] == pytest.approx(0.0099)
    assert row["flops_decode_analytic"] == 6  # from the analytic section when flops.<stage> lacks it
    assert row["flops_decode_analytic_total"] == 7
    assert row["flops_verified"] == "1/2" and row["grouping_checks"] == "2/3"
    assert row["activation_bytes_prefill"] == 10 and row["analytic_source"] == "job"
    assert row["flops_sam_measured"] == 11 and row["flops_lm_head_analytic"] == 10
    assert row["capture_s"] == 12.5 and row["forward_s"] == 0.5
    assert row["grouped_svg"] == "0/callgraph.grouped.svg"


def test_grouping_checks_as_counts(tmp_path):
    summary = base_summary()
    summary["grouping"] = {"nodes": 40, "checks": {"ok": 5, "mismatch": 1, "not checked": 2}}
    make_job(tmp_path, 0, [], summary)
    [row] = build_rows(collect_sweep(tmp_path).jobs)
    assert row["grouping_checks"] == "5/6 (2 not checked)"


def test_forward_only_job_takes_part_figures_from_its_own_analytic_section(tmp_path):
    summary = full_summary()
    del summary["parts"], summary["flops"], summary["trace"], summary["grouping"]
    make_job(tmp_path, 0, [], summary)
    [row] = build_rows(collect_sweep(tmp_path).jobs)
    assert row["flops_sam_analytic"] == 5 and row["flops_sam_measured"] is None
    assert row["analytic_source"] == "job" and row["ops"] is None and row["grouping_checks"] is None


def test_malformed_summary_fails_the_job_naming_the_field(tmp_path):
    summary = full_summary()
    summary["trace"] = {"module_calls": 3}  # num_ops renamed away
    make_job(tmp_path, 0, [], summary)
    [job] = collect_sweep(tmp_path).jobs
    assert job.status.startswith("failed: ArtifactError: ") and "trace lacks required field 'num_ops'" in job.status
    [row] = build_rows([job])
    assert row["image_tokens"] is None and row["ops"] is None  # nothing read from the malformed file


def test_a_column_that_raises_is_not_hidden(tmp_path, monkeypatch):
    make_job(tmp_path, 0, [], full_summary())
    broken = Column("broken", "broken", "int", "a getter with a bug", lambda j: j.summary.trace.no_such_field)
    monkeypatch.setattr(table, "COLUMNS", [*table.COLUMNS, broken])
    with pytest.raises(AttributeError, match="no_such_field"):
        build_rows(collect_sweep(tmp_path).jobs)


def test_base_summary_shows_missing_and_never_recomputes_analytic(tmp_path):
    make_job(tmp_path, 0, ["page=slide"], base_summary(1920, 1080), choices={"page": "slide"})
    [job] = collect_sweep(tmp_path).jobs
    [row] = build_rows([job])
    keys = (
        "params",
        "ops",
        "module_calls",
        "flops_prefill_measured",
        "rel_error_prefill",
        "capture_s",
        "grouped_svg",
        "flops_prefill_analytic",
        "flops_prefill_analytic_total",
        "activation_bytes_prefill",
    )
    for key in keys:
        assert row[key] is None, key
        assert fmt(row[key], column(key).kind) == MISSING
    assert row["page"] == "slide" and row["analytic_source"] is None
    assert not any(k.startswith("flops_sam") for k in row)  # no job reported parts: no per-part columns


def test_labels_follow_the_overrides(tmp_path):
    make_job(
        tmp_path,
        0,
        ["workload.base_size=640", "workload.page.width=900"],
        base_summary(900, 2200),
        choices={"page": "letter_portrait"},
    )
    [row] = build_rows(collect_sweep(tmp_path).jobs)
    assert row["mode"] == "gundam base_size=640"
    assert row["page"] == "900x2200"  # a preset changed on the command line is no longer the preset


def test_failed_job_row(tmp_path):
    make_job(
        tmp_path,
        0,
        ["workload.base_size=1000"],
        error={"type": "ConfigError", "message": "workload.base_size=1000 is invalid: must be ...\nmore"},
    )
    [row] = build_rows(collect_sweep(tmp_path).jobs)
    assert row["status"] == "failed: ConfigError: workload.base_size=1000 is invalid: must be ..."
    assert row["image_tokens"] is None and row["analytic_source"] is None


@pytest.mark.parametrize(
    "value, kind, text",
    [
        (None, "flops", MISSING),
        (1.234e12, "flops", "1.23 TFLOP"),
        (556.99e6, "flops", "557 MFLOP"),
        (2_000_000_000, "bytes", "2 GB"),
        (903, "count", "903"),
        (12_345_678, "count", "12.3 M"),
        (0.0123, "ratio", "1.23%"),
        (12.5, "seconds", "12.5 s"),
        (0.5, "seconds", "500 ms"),
        (True, "bool", "yes"),
    ],
)
def test_formats(value, kind, text):
    assert fmt(value, kind) == text
