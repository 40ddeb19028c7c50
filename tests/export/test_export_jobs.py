"""The export job (`./dev export`) end to end, bad input as one line, and the trace job's export stage."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir
from job_scripts import run_job_in_process

from llm_perf_opt.export import load_export_summary
from llm_perf_opt.runs.entry import CONF_DIR

pytestmark = pytest.mark.slow


def run_export_job(tmp_path, *overrides):
    """`./dev export hydra.run.dir=TMP_PATH OVERRIDES`, the job end to end in this process
    (`job_scripts.run_job_in_process`: what it writes, prints and exits with; no Python start-up)."""
    return run_job_in_process("export", f"hydra.run.dir={tmp_path}", *overrides)


@pytest.mark.parametrize(
    "overrides, first",
    [
        (
            ("workload=tiny", "export.submodules=[sam.global,sam.crops]"),
            "error: export.submodules='sam.crops' is invalid: needs the crop batch, but the workload tiny on a "
            "1700x2200 page has none (crop_mode is false)",
        ),
        (
            ("export.submodules=[sam.everything]",),
            "error: export.submodules='sam.everything' is invalid: must be one of",
        ),
        (("export.moe_layer=0",), "error: export.moe_layer=0 is invalid: must be a MoE decoder layer"),
    ],
)
def test_bad_export_input_is_one_line_and_nothing_is_written(tmp_path, overrides, first):
    proc = run_export_job(tmp_path, *overrides)
    assert proc.returncode == 2, proc.stderr[-2000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and errors[0].startswith(first)
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "export").exists()


def test_export_job_writes_tables_and_summary(tmp_path):
    proc = run_export_job(
        tmp_path,
        "workload=small",
        "export.submodules=[projector.global,decode_layer]",
        "export.decode_context=120",
        "export.decode_layer=2",
    )  # layer 2 of the tiny twin: MoE
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = load_export_summary(tmp_path / "export" / "summary.json")
    assert [s.name for s in summary.submodules] == ["projector.global", "decode_layer"]
    dec = summary.by_name("decode_layer")
    assert summary.seq_len < 120 == summary.decode_context  # a later decode step: the cache grew to 120
    assert {i["name"]: i["shape"] for i in dec.inputs}["past_key_value.key"][2] == 120
    assert dec.status == "exported_with_remedy" and sum(dec.remedy["routing"]) == 2  # 1 token, top-2
    assert dec.flops["agree"] and dec.op_counts["reconciled"] and dec.output_check["ok"]
    assert (tmp_path / "export" / "projector.global.ops.csv").is_file()
    assert "projector.global" in proc.stdout and "agree" in proc.stdout  # the printed table


@pytest.mark.parametrize("runtime", ["cpu", "cpu_bf16"])
def test_trace_job_export_stage_uses_its_call_graph(tmp_path, runtime):
    from llm_perf_opt.artifacts import read_artifact
    from llm_perf_opt.trace.job import run_trace

    with initialize_config_dir(config_dir=CONF_DIR, version_base="1.3"):
        raw = compose(
            config_name="config",
            overrides=[
                "model=twin_tiny",
                "workload=small",
                f"runtime={runtime}",
                "trace.export=true",
                "export.submodules=[clip.global,dense_layer,moe_layer,decode_layer]",
                "profile=off",
                "~hardware",
            ],
        )  # the export stage reads the call graph, not the timing stages
    summary = run_trace(raw, tmp_path)
    assert summary.export["submodules"] == {
        "clip.global": "exported",
        "dense_layer": "exported",
        "moe_layer": "exported_with_remedy",
        "decode_layer": "exported",
    }
    _, on_disk = read_artifact(tmp_path / "summary.json", "llm_perf_opt.summary", (1,))
    assert on_disk["export"]["flops_agree"] == {name: True for name in summary.export["submodules"]}
    export = load_export_summary(tmp_path / "export" / "summary.json")
    assert export.runtime["dtype"] == ("bfloat16" if runtime == "cpu_bf16" else "float32")
    for name in ("clip.global", "dense_layer", "moe_layer"):
        s = export.by_name(name)
        assert s.op_counts["source"].startswith("trace callgraph.json"), name
        assert s.op_counts["reconciled"], (name, s.op_counts["notes"])
        assert s.output_check["ok"], (name, s.output_check)
    assert "no counterpart" in export.by_name("decode_layer").op_counts["note"]


def test_moe_layer_refused_with_its_reason_when_no_remedy_is_allowed(tmp_path):
    from export_helpers import job_inputs, open_session, typed_cfg

    from llm_perf_opt.export import run_export_stage

    cfg = typed_cfg("model=twin_tiny", "workload=small", "export.submodules=[moe_layer]", "export.moe_remedy=none")
    with open_session(cfg) as session:
        result = run_export_stage(cfg, session, job_inputs(cfg), tmp_path)
    assert result["submodules"] == {"moe_layer": "refused"}
    moe = load_export_summary(tmp_path / "export" / "summary.json").by_name("moe_layer")
    assert moe.reason.startswith("RuntimeError: .numpy() is not supported") and "in moe_infer" in moe.reason
    assert moe.remedy == {"kind": None, "note": "export.moe_remedy=none"}
    assert moe.flops is None and moe.ops_csv is None and not list((tmp_path / "export").glob("*.csv"))
    assert moe.inputs[0]["shape"][1] == moe.outputs[0]["shape"][1]  # the recorded call is still described
