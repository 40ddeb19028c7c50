"""DeepSeek-OCR 2's own export targets (`dsocr2.family`: export_submodules, export_blocks, export_refused), through
the trace job's export stage on the tiny OCR-2 twin (the session's `ocr2_run`: default workload, a 2x1 crop grid):
every target exported, FLOPs of the exported graph = FlopCounterMode's = the analytic model's, op counts reconciled
with the trace's call graph; v1's names and the whole encoder refused with one line naming `export.submodules` and
the family."""

from __future__ import annotations

import pytest
from job_scripts import run_job_in_process
from shared_runs import OCR2_PAGE

pytestmark = pytest.mark.slow
NAMES = (
    "sam.crops",
    "sam.global",
    "encoder_layer.crops",
    "encoder_layer.global",
    "projector.crops",
    "projector.global",
    "dense_layer",
    "moe_layer",
    "decode_layer",
)  # written out: the family's offer


@pytest.fixture(scope="module")
def ocr2_export(ocr2_run):
    """(summary, export summary, run dir) of the session's OCR-2 run (tests/conftest.py `ocr2_run`): the trace job
    with its export stage on `OCR2_PAGE` (2 x 1 crops of 768 and the 1024 global view)."""
    from llm_perf_opt.export import load_export_summary
    from llm_perf_opt.run_artifacts import load_summary

    run, _ = ocr2_run
    return load_summary(run / "summary.json"), load_export_summary(run / "export" / "summary.json"), run


def test_every_ocr2_target_is_exported_and_agrees_with_the_analytic_model(ocr2_export):
    from llm_perf_opt.families import family

    summary, export, out = ocr2_export
    assert tuple(family("dsocr2").export_submodules) == NAMES
    assert [s.name for s in export.submodules] == list(NAMES) and not export.notes
    assert export.layout["num_crops"] == 2
    for s in export.submodules:
        assert s.status == ("exported_with_remedy" if s.name == "moe_layer" else "exported"), (s.name, s.reason)
        assert (out / "export" / s.ops_csv).is_file(), s.name
        f = s.flops
        assert f["exported"] == f["eager"] == f["analytic"] > 0, s.name
        assert f["agree"] and all(row["ok"] for row in f["by_module"]), s.name
        assert s.output_check["ok"], (s.name, s.output_check)
    assert summary.export["flops_agree"] == {name: True for name in NAMES}
    compared = 0
    for s in export.submodules:  # the trace's call graph: both calls of a vision module exported, summed
        oc = s.op_counts
        if s.stage == "decode":
            assert "no counterpart" in oc["note"], s.name
            continue
        assert oc["source"].startswith("trace callgraph.json"), s.name
        if s.name.startswith("encoder_layer."):
            # totals only (the call graph has no per-function counts): one op per call of self_attn that the
            # graph lacks; test_encoder_layer_op_counts_alone names it (a no-op contiguous)
            assert oc["unreconciled_modules"] == ["self_attn"], (s.name, oc["notes"])
            row = next(r for r in oc["by_module"] if r["module"] == "self_attn")
            assert row["difference"] == 2, row  # 2 calls summed: the crop batch and the global view
        else:
            assert oc["reconciled"], (s.name, oc.get("notes"))
        compared += 1
    assert compared == len(NAMES) - 1


def test_encoder_layer_calls_have_the_views_shapes_and_flops(ocr2_export):
    from llm_perf_opt.families import family

    _, export, _ = ocr2_export
    e = family("dsocr2").spec_named("ocr2_tiny").encoder
    layer = "model.qwen2_model.model.model.layers.0"
    for name, batch, grid in (("encoder_layer.crops", 2, 768 // 64), ("encoder_layer.global", 1, 1024 // 64)):
        s = export.by_name(name)
        tokens = 2 * grid * grid  # SAM tokens (16x16 at 1024, 12x12 at 768), then one query each
        assert s.path == layer and s.inputs[0]["shape"] == [batch, tokens, e.hidden_size], name
        # q/k/v/o and the gated MLP, 2 FLOPs per multiply-add; attention: QK^T and PV over all tokens
        q, kv = e.num_heads * e.head_dim, e.num_kv_heads * e.head_dim
        linear = 2 * batch * tokens * e.hidden_size * (q + 2 * kv + q + 3 * e.intermediate_size)
        attention = 2 * 2 * batch * e.num_heads * tokens * tokens * e.head_dim
        assert s.flops["exported"] == linear + attention, name


def test_encoder_layer_op_counts_alone_and_its_onnx_file(tmp_path):
    """The export job (no trace call graph; `./dev export`, in this process: what it writes is read, not its
    process): TorchLens captures the layer alone, per function; the one op the graph lacks is a `contiguous` of an
    already contiguous tensor (export records no node). With export.onnx the family's ONNX block is that layer
    (its RoPE tables a tuple input), checked on ONNX Runtime."""
    from llm_perf_opt.export import load_export_summary
    from llm_perf_opt.export.onnx_files import onnx_unavailable

    onnx = onnx_unavailable() is None
    proc = run_job_in_process(
        "export",
        f"hydra.run.dir={tmp_path}",
        *OCR2_PAGE,
        "export.submodules=[encoder_layer.global,dense_layer]",
        f"export.onnx={str(onnx).lower()}",
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    export = load_export_summary(tmp_path / "export" / "summary.json")
    if onnx:
        assert {r["name"]: r["ok"] for r in export.onnx} == {"encoder_layer.global": True, "dense_layer": True}
        names = {i["name"] for i in next(r for r in export.onnx if r["name"] == "encoder_layer.global")["onnx_inputs"]}
        assert {"position_embeddings_0", "position_embeddings_1"} <= names
        assert (tmp_path / "export" / "encoder_layer.global.onnx").is_file()
    s = export.by_name("encoder_layer.global")
    assert s.flops["agree"] and s.output_check["ok"]
    assert s.op_counts["reconciled"] and s.op_counts["source"].startswith("TorchLens capture of the submodule alone")
    row = next(r for r in s.op_counts["by_module"] if r["module"] == "self_attn")
    assert row["function_differences"] == {"contiguous": 1} and not row["unexplained"]


def _trace_job(tmp_path, *overrides):
    """`./dev trace` on the OCR 2 page with the export stage, in this process (`run_job_in_process`)."""
    return run_job_in_process("trace", f"hydra.run.dir={tmp_path}", *OCR2_PAGE, "trace.export=true", *overrides)


@pytest.mark.parametrize(
    "name, why",
    [
        ("clip.global", "must be one of sam.crops, sam.global, encoder_layer.crops"),  # v1's name
        ("encoder.global", "torch.export refuses the whole encoder"),
    ],
)
def test_other_familys_target_or_the_whole_encoder_is_refused_in_one_line(tmp_path, name, why):
    proc = _trace_job(tmp_path, f"export.submodules=[{name}]")
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "Traceback" not in proc.stderr
    assert errors[0].startswith(f"error: export.submodules='{name}' is invalid: {why}")
    assert errors[0].endswith("(model.family=dsocr2)")
    assert not (tmp_path / "export").exists() and not (tmp_path / "summary.json").exists()
