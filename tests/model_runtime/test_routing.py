"""The routing patch (read-only, per MoE gate call), routing.json and its summary."""

from __future__ import annotations

import math

import pytest
import torch
from decode_helpers import BareSession

from llm_perf_opt.artifacts import write_artifact
from llm_perf_opt.dsocr.patches import check_patches, runtime_patches
from llm_perf_opt.errors import ArtifactError
from llm_perf_opt.model_runtime.decode import DecodeProgram
from llm_perf_opt.model_runtime.routing import (
    ROUTING_SCHEMA,
    RoutingRecord,
    bracket,
    expected_distinct,
    expert_weight_bytes,
    label,
    load_routing,
)
from llm_perf_opt.run_artifacts import load

STEPS = 2


def test_uniform_expectation():
    assert expected_distinct(64, 6, 1) == pytest.approx(6.0)  # one token: exactly k distinct experts
    assert expected_distinct(64, 6, 0) == 0.0
    assert expected_distinct(64, 6, 2) == pytest.approx(64 * (1 - (58 / 64) ** 2))  # 11.4375: some overlap
    assert expected_distinct(64, 6, 903) == pytest.approx(64.0)  # a Gundam page: every expert, uniformly
    assert expected_distinct(8, 2, 78) == pytest.approx(8 * (1 - 0.75**78))


@pytest.fixture(scope="module")
def routed(tiny):
    """The tiny twin's prefill and 2 decode steps under the routing patch, and the same loop without it."""
    spec, model, kwargs = tiny
    with torch.no_grad():
        plain = DecodeProgram(STEPS)
        plain(lambda **kw: model(**kw), **dict(kwargs, use_cache=True))
        with runtime_patches(BareSession(model), ["routing"]) as log:
            patched = DecodeProgram(STEPS)
            patched(lambda **kw: model(**kw), **dict(kwargs, use_cache=True))
    return spec, model, kwargs, log, plain, patched


def test_patch_targets_the_gate():
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.dsocr.twin import build_twin

    model = build_twin(ModelSpec.tiny(), device="meta")
    assert check_patches(model, ["routing"]) == {"routing": "decoder.MoEGate.forward"}


def test_routing_is_read_only(routed):
    spec, model, kwargs, log, plain, patched = routed
    assert patched.result.tokens == plain.result.tokens
    assert torch.equal(patched.result.last.logits, plain.result.last.logits)
    assert not hasattr(type(model.model.layers[1].mlp.gate).forward, "__wrapped__")  # the original is back


def test_one_event_per_gate_call_with_every_routed_token(routed):
    spec, model, kwargs, log, plain, patched = routed
    d = spec.decoder
    seq_len = kwargs["input_ids"].shape[1]
    moe_layers = [i for i in range(d.num_layers) if d.is_moe_layer(i)]
    events = log.events("routing")
    assert [(e["layer"], e["call"]) for e in events] == [(i, s) for s in range(STEPS + 1) for i in moe_layers]
    for e in events:
        assert e["gate"] == f"model.layers.{e['layer']}.mlp.gate" and e["weights"] == "random"
        assert (e["top_k"], e["n_experts"]) == (d.num_experts_per_tok, d.n_routed_experts)
        assert e["tokens"] == (seq_len if e["call"] == 0 else 1)
        assert sum(e["tokens_per_expert"]) == e["tokens"] * e["top_k"]
        assert e["experts"] == sorted(e["experts"]) and len(e["experts"]) == len(e["tokens_per_expert"])
        if e["call"] > 0:  # one token: its k experts, distinct, one token each
            assert e["tokens_per_expert"] == [1] * d.num_experts_per_tok


def test_events_match_the_gate_outputs(tiny):
    """The record is the gate's top-k indices: recompute them with the gate itself."""
    spec, model, kwargs = tiny
    seen = {}

    def grab(module, args, out):
        seen[module] = out[0].clone()

    handles = [layer.mlp.gate.register_forward_hook(grab) for layer in model.model.layers if hasattr(layer.mlp, "gate")]
    try:
        with torch.no_grad(), runtime_patches(model, ["routing"]) as log:
            model(**kwargs)
    finally:
        for h in handles:
            h.remove()
    for event in log.events("routing"):
        ids = seen[model.get_submodule(event["gate"])]
        counts = torch.bincount(ids.flatten(), minlength=spec.decoder.n_routed_experts)
        assert event["experts"] == counts.nonzero().flatten().tolist()
        assert event["tokens_per_expert"] == counts[counts > 0].tolist()
        assert "weights" in event and event["weights"] is None  # a bare model does not say


def test_record_summary_and_file(routed, tmp_path):
    spec, model, kwargs, log, plain, patched = routed
    d = spec.decoder
    E, k = d.n_routed_experts, d.num_experts_per_tok
    seq_len = kwargs["input_ids"].shape[1]
    expert = expert_weight_bytes(model, "model.layers.1.mlp.gate")
    assert expert == 3 * d.hidden_size * d.moe_intermediate_size * 4  # gate, up, down projections in float32
    record = RoutingRecord.from_events(log.events(), expert_bytes=expert)
    assert record.random_weights is True and "not the trained model's" in record.note
    assert record.layers == [1, 2] and record.steps == [0, 1, 2]
    s = record.summary()
    pre = s["prefill"]
    assert pre["tokens"] == seq_len and pre["mean_tokens_per_expert"] == seq_len * k / E
    for layer in ("1", "2"):
        call = record.call(int(layer), 0)
        assert pre["distinct_experts"][layer] == call.distinct
        assert pre["never_hit"][layer] == E - call.distinct
        assert pre["max_over_mean"][layer] == pytest.approx(max(call.tokens_per_expert) / (seq_len * k / E))
        assert pre["expert_bytes_read"][layer] == call.distinct * expert
    assert pre["expected_distinct_uniform"] == pytest.approx(expected_distinct(E, k, seq_len))
    dec = s["decode"]["steps"]
    assert [r["step"] for r in dec] == [1, 2]
    assert all(r["distinct_experts"] == {"1": k, "2": k} and r["expert_bytes_read"] == 2 * k * expert for r in dec)
    assert all(r["expected_distinct_uniform"] == pytest.approx(k) for r in dec)

    path = record.write(tmp_path / "routing.json")
    back = load_routing(path)
    assert back.to_dict() == record.to_dict() and back.summary() == s
    assert load("routing", tmp_path).to_dict() == record.to_dict()  # through the run-file registry


def test_labels_for_the_expert_node(routed):
    spec, model, kwargs, log, plain, patched = routed
    record = RoutingRecord.from_events(log.events())
    E, k = spec.decoder.n_routed_experts, spec.decoder.num_experts_per_tok
    prefill = [record.call(i, 0).distinct for i in (1, 2)]
    text = label(record, [1, 2])
    lo, hi = min(prefill), max(prefill)
    assert text == f"{lo if lo == hi else f'{lo}-{hi}'} of {E} in prefill, {k} per decode step (random weights)"
    union = [len({x for s in (0, 1, 2) for x in record.call(i, s).experts}) for i in (1, 2)]
    assert bracket(record, [1, 2]) == (
        f"[{min(union)} of {E}]" if min(union) == max(union) else f"[{min(union)}-{max(union)} of {E}]"
    )
    assert label(record, [7]) is None and bracket(record, []) is None


def test_loader_rejects_unknown_versions_missing_fields_and_bad_counts(routed, tmp_path):
    record = RoutingRecord.from_events(routed[3].events())
    data = record.to_dict()
    path = write_artifact(tmp_path / "v9.json", ROUTING_SCHEMA, 9, data)
    with pytest.raises(ArtifactError, match="version"):
        load_routing(path)
    missing = {k: v for k, v in data.items() if k != "top_k"}
    with pytest.raises(ArtifactError, match="lacks required field 'top_k'"):
        load_routing(write_artifact(tmp_path / "missing.json", ROUTING_SCHEMA, 1, missing))
    bad = dict(data, calls=[dict(data["calls"][0], tokens_per_expert=[1] * len(data["calls"][0]["experts"]))])
    with pytest.raises(ArtifactError, match="token counts sum to"):
        load_routing(write_artifact(tmp_path / "bad.json", ROUTING_SCHEMA, 1, bad))
    dup = dict(data, calls=data["calls"][:1] * 2)
    with pytest.raises(ArtifactError, match="appears twice"):
        load_routing(write_artifact(tmp_path / "dup.json", ROUTING_SCHEMA, 1, dup))


def test_unknown_weights_say_so():
    events = [
        {
            "event": "routing",
            "gate": "model.layers.1.mlp.gate",
            "layer": 1,
            "call": 0,
            "tokens": 2,
            "top_k": 2,
            "n_experts": 4,
            "experts": [0, 3],
            "tokens_per_expert": [2, 2],
        }
    ]
    record = RoutingRecord.from_events(events)
    assert record.random_weights is None and "unknown origin" in record.note
    assert label(record, [1]).endswith("(weights unknown)")
    assert math.isclose(record.summary()["prefill"]["max_over_mean"]["1"], 2 / (2 * 2 / 4))
