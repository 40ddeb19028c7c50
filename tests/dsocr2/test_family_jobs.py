"""DeepSeek-OCR 2 through the jobs, selected by `model=ocr2_*` (`model.family: dsocr2`): the trace job end to end
on the tiny twin, `./dev analyze` image tokens per crop count, and bad input as one line naming the field and
the family with nothing written."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from job_scripts import run_job_in_process

from llm_perf_opt import families
from llm_perf_opt.callgraph.grouped import load_grouped_json
from llm_perf_opt.config.options import unknown_group_option
from llm_perf_opt.family import ModelFamily

REPO = Path(__file__).resolve().parents[2]
GLOBAL_SIDE, CROP_SIDE, PATCH, DOWNSAMPLE = 1024, 768, 16, 4  # infer(base_size=1024, image_size=768); SAM 16 px, /4


def _job(script: str, run_dir: Path, *overrides: str) -> subprocess.CompletedProcess:
    """`./dev SCRIPT hydra.run.dir=RUN_DIR OVERRIDES` in this process (`job_scripts.run_job_in_process`): these
    tests read what the job writes, prints and exits with, not its process."""
    return run_job_in_process(script, f"hydra.run.dir={run_dir}", *overrides)


def test_the_family_is_registered_and_selected_by_the_model_config():
    fam = families.family("dsocr2")
    assert isinstance(fam, ModelFamily) and fam.name == "dsocr2" and fam.cost_namespace == "dsocr2"
    for name in ("ocr2_twin", "ocr2_twin_tiny", "ocr2_vendor"):
        text = (REPO / "conf" / "model" / f"{name}.yaml").read_text()
        assert "family: dsocr2" in text, name
    assert sorted(fam.modes()) == ["ocr2_default", "ocr2_nocrop_1024", "ocr2_nocrop_768"]


def test_nested_group_options_are_options():
    assert unknown_group_option(["workload=ocr2/default"]) is None
    problem = unknown_group_option(["workload=ocr2/nothing"])
    assert problem is not None and "ocr2/default" in str(problem)


# ------------------------------------------------------------------------------------------ the trace job
@pytest.fixture(scope="module")
def traced(ocr2_run):
    """The session's OCR-2 trace (tests/conftest.py `ocr2_run`): a 1536 x 768 page, the smallest crop grid (2 x 1
    crops of 768) beside the 1024 global view."""
    return ocr2_run


@pytest.mark.slow
def test_trace_runtime_checks_flops_bytes_and_kernels_exact(traced):
    _run_dir, s = traced
    checks = s["grouping"]["checks"]
    assert checks == {"ok": 8, "mismatch": 0, "not checked": 0}  # 3 vision passes, 2 decoder, 2 loops, routing
    assert set(s["flops"]) == {"vision", "prefill", "decode"}
    assert all(e["ok"] and e["analytic"] == e["measured"] for e in s["flops"].values())
    v = s["verification"]
    assert v["passed"] and v["failures"] == 0 and v["activation_failures"] == 0 and v["kernel_failures"] == 0
    assert set(s["parts"]) == {"sam", "encoder", "projector", "decoder", "lm_head"}
    assert all(p["ok"] and p["flops_analytic"] == p["flops_measured"] for p in s["parts"].values())


@pytest.mark.slow
def test_trace_grouped_graph_has_the_sam_and_encoder_loops(traced):
    from llm_perf_opt.dsocr2.spec import ModelSpec

    run_dir, _s = traced
    spec = ModelSpec.tiny()
    grouped = load_grouped_json(run_dir / "callgraph.grouped.json")

    def loop(stack: str) -> list[int]:  # the `for N` of the groups whose members are the stack's items
        return [
            n.for_n
            for n in grouped.nodes
            if n.members and n.for_n and all(m.rpartition(".")[0] == stack for m in n.members)
        ]

    assert loop("model.sam_model.blocks") == [spec.sam.depth]
    assert loop("model.qwen2_model.model.model.layers") == [spec.encoder.num_layers]


# ------------------------------------------------------------------------------------------ analyze
# a page whose aspect ratio is exactly one grid of n tiles (the only candidate of 2..6 tiles with that ratio),
# larger than 768 on a side; no crops for a page with both sides <= 768
PAGES = {
    0: (700, 500),
    2: (2 * 768, 768),
    3: (3 * 768, 768),
    4: (2 * 768, 2 * 768),
    5: (5 * 768, 768),
    6: (3 * 768, 2 * 768),
}


@pytest.mark.parametrize("crops", sorted(PAGES))
def test_analyze_image_tokens_per_crop_count(tmp_path, crops):
    width, height = PAGES[crops]
    proc = _job(
        "analyze",
        tmp_path,
        "model=ocr2_twin",
        "workload=ocr2/default",
        f"workload.page.width={width}",
        f"workload.page.height={height}",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    layout = json.loads((tmp_path / "costs.json").read_text())["data"]["layout"]
    global_tokens = (GLOBAL_SIDE // PATCH // DOWNSAMPLE) ** 2  # 256
    per_crop = (CROP_SIDE // PATCH // DOWNSAMPLE) ** 2  # 144
    assert layout["num_crops"] == crops
    assert layout["image_tokens"] == global_tokens + 1 + per_crop * crops == 257 + 144 * crops


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(
    "overrides, field",
    [
        (["workload=gundam"], "workload.tile_size=640"),
        (["workload=ocr2/default", "workload.image_size=640"], "workload.image_size=640"),
        (["workload=ocr2/nocrop_768", "workload.base_size=640", "workload.image_size=640"], "workload.base_size=640"),
        (["workload=ocr2/default", "workload.max_num=7"], "workload.max_num=7"),
        (["workload=ocr2/default", "workload.min_num=1"], "workload.min_num=1"),
    ],
)
def test_v1_knobs_and_crop_counts_are_one_line(tmp_path, overrides, field):
    proc = _job("analyze", tmp_path, "model=ocr2_twin", *overrides)
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(f"error: {field} is invalid") and "DeepSeek-OCR 2" in errors[0]
    assert "Traceback" not in proc.stderr and not (tmp_path / "costs.json").exists()


@pytest.mark.parametrize(
    "model, arch, owner",
    [
        ("ocr2_vendor", "modeling_deepseekocr.DeepseekOCRForCausalLM", "dsocr"),
        ("vendor", "modeling_deepseekocr2.DeepseekOCR2ForCausalLM", "dsocr2"),
    ],
)
def test_a_vendor_directory_of_the_other_family_is_one_line(tmp_path, model, arch, owner):
    vendor = tmp_path / "vendor"
    vendor.mkdir()
    module = arch.partition(".")[0]
    # a directory naming the other family's classes (config.json's auto_map: what the families recognise)
    (vendor / "config.json").write_text(json.dumps({"auto_map": {"AutoConfig": f"{module}.Config", "AutoModel": arch}}))
    run_dir = tmp_path / "run"
    proc = _job("analyze", run_dir, f"model={model}", f"model.path={vendor}")
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith("error: model.path=") and f"the {owner} family's code" in errors[0]
    assert not (run_dir / "costs.json").exists()
