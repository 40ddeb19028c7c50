"""`export/summary.json`: schema-versioned, written atomically, read back; unknown versions and missing
fields refused by name."""

from __future__ import annotations

import json

import pytest

from llm_perf_opt.errors import ArtifactError
from llm_perf_opt.export import EXPORT_SCHEMA, ExportSummary, SubmoduleExport, load_export_summary


def summary() -> ExportSummary:
    return ExportSummary(
        model={"name": "twin_tiny"},
        workload={"mode": "gundam"},
        layout={"num_crops": 6},
        seq_len=908,
        decode_context=908,
        runtime={"dtype": "float32"},
        submodules=[
            SubmoduleExport(
                name="sam.global",
                path="model.sam_model",
                part="sam",
                stage="prefill",
                description="SAM",
                status="exported",
                ops_csv="sam.global.ops.csv",
                flops={"exported": 10, "eager": 10, "analytic": 10, "agree": True},
            ),
            SubmoduleExport(
                name="moe_layer",
                path="model.layers.1",
                part="decoder.layer.1",
                stage="prefill",
                description="MoE",
                status="refused",
                reason="RuntimeError: .numpy()",
                remedy={"kind": None, "note": "export.moe_remedy=none"},
            ),
        ],
        notes=["sam.crops: not exported"],
    )


def test_round_trip(tmp_path):
    path = summary().save(tmp_path / "summary.json", config={"a": 1})
    doc = json.loads(path.read_text())
    assert doc["schema"] == EXPORT_SCHEMA and doc["schema_version"] == 1 and "config_hash" in doc["producer"]
    back = load_export_summary(path)
    assert back == summary()
    assert back.by_name("sam.global").flops_agree is True and back.by_name("moe_layer").exported is False


def edit(tmp_path, change) -> str:
    path = summary().save(tmp_path / "summary.json")
    doc = json.loads(path.read_text())
    change(doc)
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize(
    "change, needle",
    [
        (lambda d: d.update(schema_version=99), "schema_version 99 is unknown"),
        (lambda d: d.update(schema="llm_perf_opt.costs"), "expected 'llm_perf_opt.export'"),
        (lambda d: d["data"].pop("submodules"), "lacks required field 'submodules'"),
        (lambda d: d["data"].pop("seq_len"), "lacks required field 'seq_len'"),
        (lambda d: d["data"]["submodules"][1].pop("status"), "submodules[1] lacks required field 'status'"),
        (lambda d: d["data"]["submodules"][0].update(status="maybe"), "submodules[0].status='maybe' is not one of"),
    ],
)
def test_loader_refuses_by_name(tmp_path, change, needle):
    with pytest.raises(ArtifactError) as err:
        load_export_summary(edit(tmp_path, change))
    assert needle in str(err.value)
