"""Every decode step verified on its own (FLOPs of every part and layer at its context) and the KV-cache
bytes after each step; verification.json version 3 and its reading of version 2."""

from __future__ import annotations

import json

import pytest
import torch

from llm_perf_opt.artifacts import write_artifact
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.measure import (
    VERIFICATION_SCHEMA,
    check_model_agreement,
    load_verification,
    render_table,
    write_verification,
)
from llm_perf_opt.model_runtime.measure import measure_forward

STEPS = 3


@pytest.fixture(scope="module")
def verified(tiny):
    spec, model, kwargs = tiny
    measured = measure_forward(model, kwargs, decode_steps=range(1, STEPS + 1))
    layout = compute_view_layout(VisionWorkload(512, 512, False), 1700, 2200)
    analytic = DeepseekOCRAnalyticModel(spec, layout, measured.seq_len, dtype="float32")
    v = check_model_agreement(analytic, measured.prefill, measured.decode, kv_cache_bytes=measured.kv_cache_bytes)
    return spec, measured, analytic, v


def test_each_step_is_counted_alone_at_its_context(verified):
    spec, measured, analytic, v = verified
    L = measured.seq_len
    assert sorted(measured.decode) == [L, L + 1, L + 2]  # step k attends over L + k - 1 cached tokens
    assert [s.past_len for s in measured.steps] == [L, L + 1, L + 2]
    assert [measured.step_of_context(c) for c in sorted(measured.decode)] == [1, 2, 3]
    totals = [measured.decode[c].total for c in sorted(measured.decode)]
    assert totals[0] < totals[1] < totals[2]  # attention over one more key each step
    # one more cached key costs Q·Kᵀ and P·V over it in every layer: 2 × 2 × heads × head_dim FLOPs per layer
    d = spec.decoder
    assert totals[1] - totals[0] == 2 * 2 * d.num_heads * d.head_dim * d.num_layers


def test_every_step_part_and_layer_exact(verified):
    spec, measured, analytic, v = verified
    assert v.passed, render_table(v, parts="all")
    decode = v.decode_checks()
    assert [c.step for c in decode] == [1, 2, 3]
    assert [c.label for c in decode] == [f"step {k}, context {measured.seq_len + k - 1}" for k in (1, 2, 3)]
    for check in decode:
        assert check.passed and all(r.rel_error == 0.0 for r in check.rows)
        parts = {r.part for r in check.rows}
        assert {f"model.layers.{i}" for i in range(spec.decoder.num_layers)} <= parts
        assert {"model.layers.1.mlp.experts", "model.layers.0.self_attn", "lm_head"} <= parts
    assert [c.step for c in v.checks if c.stage != "decode"] == [None, None]


def test_kv_cache_rows_after_the_prefill_and_each_step(verified):
    spec, measured, analytic, v = verified
    L, d = measured.seq_len, spec.decoder
    assert [(r.step, r.context_len) for r in v.kv_cache] == [(k, L + k) for k in range(STEPS + 1)]
    for r in v.kv_cache:
        assert r.ok and r.analytic == r.measured == 2 * d.num_layers * d.num_kv_heads * r.context_len * d.head_dim * 4
    table = render_table(v)
    assert "decode 1@" in table and f"KV cache, {L + STEPS} tokens" in table


def test_a_wrong_kv_figure_fails_the_verification(verified):
    spec, measured, analytic, v = verified
    off = dict(measured.kv_cache_bytes)
    off[2] += 4
    bad = check_model_agreement(analytic, measured.prefill, measured.decode, kv_cache_bytes=off)
    assert not bad.passed and [r.step for r in bad.kv_cache if not r.ok] == [2]


def test_file_round_trip_and_version_2(verified, tmp_path):
    spec, measured, analytic, v = verified
    path = write_verification(tmp_path / "verification.json", v)
    back = load_verification(path)
    assert back.to_dict() == v.to_dict()
    assert [c.step for c in back.decode_checks()] == [1, 2, 3]
    # a version-2 file: no step fields, no KV rows; decode steps come back from the checks' context
    data = json.loads(path.read_text())["data"]
    del data["kv_cache"]
    for stage in data["stages"]:
        del stage["step"]
        if stage["stage"] == "decode":
            stage["label"] = f"context {stage['shapes']['past_len']}"
    data["passed"] = all(s["passed"] for s in data["stages"])
    old = load_verification(write_artifact(tmp_path / "v2.json", VERIFICATION_SCHEMA, 2, data))
    assert old.kv_cache == [] and [c.step for c in old.decode_checks()] == [1, 2, 3]
    # version 3 requires what it writes
    data3 = json.loads(path.read_text())["data"]
    del data3["kv_cache"]
    from llm_perf_opt.errors import ArtifactError

    with pytest.raises(ArtifactError, match="lacks required field 'kv_cache'"):
        load_verification(write_artifact(tmp_path / "v3.json", VERIFICATION_SCHEMA, 3, data3))


def test_bf16_autocast_cache_is_counted_in_bf16(tiny):
    """Under bf16 weights and autocast the cache holds bf16 keys and values: 2 bytes an element."""
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.dsocr.twin import build_twin

    spec, _, kwargs = tiny
    model = build_twin(ModelSpec.tiny(), seed=0, dtype=torch.bfloat16).eval()
    kw = {
        k: ([(c.to(torch.bfloat16), g.to(torch.bfloat16)) for c, g in v] if k == "images" else v)
        for k, v in kwargs.items()
    }
    measured = measure_forward(model, kw, decode_steps=(1, 2), autocast_dtype=torch.bfloat16)
    layout = compute_view_layout(VisionWorkload(512, 512, False), 1700, 2200)
    analytic = DeepseekOCRAnalyticModel(spec, layout, measured.seq_len, dtype="bfloat16")
    v = check_model_agreement(analytic, measured.prefill, measured.decode, kv_cache_bytes=measured.kv_cache_bytes)
    assert v.passed, render_table(v)
    assert (
        v.kv_cache[-1].measured
        == 2 * spec.decoder.num_layers * spec.decoder.num_kv_heads * (measured.seq_len + 2) * spec.decoder.head_dim * 2
    )
