"""Batch B on the tiny twin: generate()'s left-padded inputs, the prefill and decode steps at batch B
verified exactly against the analytic model (FLOPs of every part and step, KV-cache bytes), the padding
changing no sequence's logits, and the batch's config and bad input."""

from __future__ import annotations

import pytest
import torch

from llm_perf_opt.deepseek_ocr_shared.inputs import PAD_TOKEN_ID, batch_inputs
from llm_perf_opt.dsocr.analytic import DeepseekOCRAnalyticModel
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.layout import VisionWorkload, compute_view_layout
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure import check_model_agreement, render_table
from llm_perf_opt.model_runtime.measure import measure_forward

STEPS = 2
GUNDAM = VisionWorkload(1024, 640, True)
# three page shapes of Gundam mode: a 2x3 crop grid, no crops (below the 640 threshold), a 2x2 grid
MIXED = [(1700, 2200), (600, 500), (1000, 1000)]


@pytest.fixture(scope="module")
def twin():
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.dsocr.twin import build_twin

    spec = ModelSpec.tiny()
    return spec, build_twin(spec, seed=0).eval()


def _verified(spec, model, workload, sizes):
    samples = [build_inputs(spec, workload, w, h, seed=i) for i, (w, h) in enumerate(sizes)]
    inputs = batch_inputs(samples)
    with torch.no_grad():
        measured = measure_forward(model, inputs.forward_kwargs(None, torch.float32), decode_steps=range(1, STEPS + 1))
    layouts = tuple(compute_view_layout(workload, w, h) for w, h in sizes)
    analytic = DeepseekOCRAnalyticModel(
        spec, layouts[0], measured.seq_len, dtype="float32", batch=len(sizes), batch_layouts=layouts
    )
    v = check_model_agreement(analytic, measured.prefill, measured.decode, kv_cache_bytes=measured.kv_cache_bytes)
    return samples, inputs, measured, analytic, v


@pytest.fixture(scope="module")
def uniform(twin):
    spec, model = twin
    # three identical pages: sequences 2 and 3 share one image, priced once and counted twice
    return _verified(spec, model, VisionWorkload(512, 512, False), [(1700, 2200)] * 3)


@pytest.fixture(scope="module")
def mixed(twin):
    spec, model = twin
    return _verified(spec, model, GUNDAM, MIXED)


def test_inputs_are_left_padded_as_generate_takes_them(mixed):
    samples, inputs, *_ = mixed
    lengths = [s.seq_len for s in samples]
    longest = max(lengths)
    assert len(set(lengths)) == 3 and inputs.input_ids.shape == (3, longest)
    assert inputs.lengths == lengths and len(inputs.images) == 3
    for row, s in enumerate(samples):
        pad = longest - s.seq_len
        assert inputs.input_ids[row, :pad].tolist() == [PAD_TOKEN_ID] * pad
        assert torch.equal(inputs.input_ids[row, pad:], s.input_ids[0])
        assert inputs.attention_mask[row].tolist() == [0] * pad + [1] * s.seq_len
        assert not inputs.images_seq_mask[row, :pad].any()
        # generate()'s positions: 0.. over the real tokens, 1 at the padding
        assert inputs.position_ids[row, pad:].tolist() == list(range(s.seq_len))
        assert inputs.position_ids[row, :pad].tolist() == [1] * pad
    assert inputs.images_spatial_crop.tolist() == [[2, 3], [1, 1], [2, 2]]


@pytest.mark.parametrize("which", ["uniform", "mixed"])
def test_prefill_and_every_decode_step_exact_at_batch(which, request):
    samples, inputs, measured, analytic, v = request.getfixturevalue(which)
    assert v.passed, render_table(v, parts="all")
    n = sum(len(c.rows) for c in v.checks)
    assert n > 40 and all(r.rel_error == 0.0 for c in v.checks for r in c.rows)
    assert [c.step for c in v.decode_checks()] == list(range(1, STEPS + 1))
    L = measured.seq_len
    assert sorted(measured.decode) == [L, L + 1]


@pytest.mark.parametrize("which", ["uniform", "mixed"])
def test_kv_cache_bytes_per_sequence_and_step(which, twin, request):
    spec, _ = twin
    samples, inputs, measured, analytic, v = request.getfixturevalue(which)
    d, B, L = spec.decoder, len(samples), measured.seq_len
    per_token = 2 * d.num_layers * d.num_kv_heads * d.head_dim * 4  # keys and values, float32
    assert [(r.step, r.context_len) for r in v.kv_cache] == [(k, L + k) for k in range(STEPS + 1)]
    for r in v.kv_cache:  # every sequence's cache holds the padded length
        assert r.ok and r.measured == B * (L + r.step) * per_token
    for step in measured.steps:
        assert step.batch == B and step.kv_cache_bytes // B == (L + step.step) * per_token
        # each sequence's own context: its prompt and the tokens generated so far
        assert list(step.sequence_past_lens) == [s.seq_len + step.step - 1 for s in samples]


def test_batch_flops_are_the_sequences_plus_the_padding(twin, mixed):
    """Prefill FLOPs at batch: each page's vision once, the decoder over B x the padded length."""
    spec, _ = twin
    samples, inputs, measured, analytic, v = mixed
    L = measured.seq_len
    alone = [DeepseekOCRAnalyticModel(spec, compute_view_layout(GUNDAM, w, h), L, dtype="float32") for w, h in MIXED]
    vision = sum(m.vision().total.flops_matmul for m in alone)
    assert analytic.vision().total.flops_matmul == vision
    language = sum(m.prefill().total.flops_matmul - m.vision().total.flops_matmul for m in alone)
    assert measured.prefill.total == vision + language


def test_padding_changes_no_sequence(twin, mixed):
    """The short pages' logits in the batch equal their logits alone (mask and positions as generate())."""
    spec, model = twin
    samples, inputs, *_ = mixed
    with torch.no_grad():
        batched = model(**inputs.forward_kwargs(None, torch.float32)).logits[:, -1]
        for row, s in enumerate(samples):
            alone = model(**s.forward_kwargs(None, torch.float32)).logits[0, -1]
            assert torch.allclose(batched[row], alone, atol=1e-4, rtol=1e-4), row


def test_pages_config_and_bad_input():
    from llm_perf_opt.config.schemas import WorkloadConfig, page_size_of

    assert page_size_of("1700x2200") == (1700, 2200) and page_size_of("a4_portrait") == (1654, 2339)
    w = WorkloadConfig(pages=["600x500", "a4_portrait"])
    assert w.batch == 2 and w.page_sizes() == [(600, 500), (1654, 2339)]
    assert WorkloadConfig(batch=3).page_sizes() == [(1700, 2200)] * 3
    for kwargs, field in (
        ({"batch": 0}, "workload.batch"),
        ({"batch": -2}, "workload.batch"),
        ({"pages": ["600x500", "0x5"]}, "workload.pages"),
        ({"pages": ["no_such_preset"]}, "workload.pages"),
        ({"batch": 3, "pages": ["600x500", "700x700"]}, "workload.batch"),
    ):
        with pytest.raises(ConfigError) as err:
            WorkloadConfig(**kwargs)
        assert field in str(err.value) and "\n" not in str(err.value)


def test_trace_job_kernel_counts_at_batch_with_the_routing_the_gates_chose(batch_run):
    """The trace job at batch 2 with 2 decode steps: every kernel-count row equal. At batch 2 a decode step routes
    2 tokens x top_k slots, and the tiny twin's loop runs only the distinct experts they chose: each MoE row of a
    step takes off 5 kernels (the expert MLP's gate, up, act, mul, down) per slot that landed on an expert
    already chosen, derived here from routing.json; the greedy loop's bookkeeping (the grown mask and position
    ids handed to the next step) is the program's, not the model's."""
    import json

    assert STEPS == 2  # the session's `batch_run` (tests/conftest.py): workload=tiny, batch 2, 2 decode steps
    kc = json.loads((batch_run / "verification.json").read_text())["data"]["kernel_counts"]
    routing = json.loads((batch_run / "routing.json").read_text())["data"]
    k, e = routing["top_k"], routing["n_experts"]
    slots = {(c["layer"], c["step"]): min(e, c["tokens"] * k) - len(c["experts"]) for c in routing["calls"]}
    assert kc["passed"] and kc["n_failures"] == 0 and len(kc["rows"]) == kc["n_rows"] > 50
    assert any(n > 0 for n in slots.values())  # this seed's gates do repeat an expert within a step
    compared = 0
    for r in kc["rows"]:
        step = 0 if r["stage"] == "prefill" else r["step"]
        if r["stage"] == "vision":
            continue
        expected = sum(
            5 * n
            for (layer, s), n in slots.items()
            if s == step
            and (
                r["part"] in ("", "model", "model.layers")
                or r["part"]
                in (f"model.layers.{layer}", f"model.layers.{layer}.mlp", f"model.layers.{layer}.mlp.experts")
            )
        )
        assert r.get("unrouted", 0) == expected, r
        compared += 1
    assert compared > 40
