"""Opt-in (DSOCR2_MODEL_PATH, the vendor's DeepSeek-OCR 2 files; see docs/vendor.md): the twin against the
vendor's own code, and the vendor session through the trace job.

* Logits: the vendor builds SAM and the encoder at full size whatever config.json says (its builders take no
  config), so the checks keep the full vision stack and shrink only the decoder read from config.json (2
  layers, 8 experts, top-2). The twin's weights are loaded into the vendor model built on meta (strict, same
  tensors); both run in float32 on CPU and must give the same logits, for a no-crop page, a crop page and a
  decode step.
* The trace job: `model=ocr2_vendor` at full size (random weights from config.json), bf16 under CPU autocast,
  the smallest mode (`ocr2/nocrop_768`), 2 decode steps, under the big-run lock: runtime checks, FLOPs of
  every stage, part and step analytic = FlopCounterMode, KV-cache bytes, kernel counts.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import torch

from llm_perf_opt.dsocr2.inputs import build_inputs
from llm_perf_opt.dsocr2.layout import VisionWorkload
from llm_perf_opt.dsocr2.spec import ModelSpec
from llm_perf_opt.dsocr2.twin import build_twin

TWIN_TESTS = Path(__file__).resolve().parents[1] / "dsocr" / "twin"
if str(TWIN_TESTS) not in sys.path:  # v1's helpers: the throw-away vendor package, meta build, strict load
    sys.path.insert(0, str(TWIN_TESTS))

from shared_runs import assert_kernel_counts_exact_given_routing, trace_under_big_lock  # noqa: E402
from twin_testlib import cuda_calls_are_noops, load_into_vendor, reduced_config_and_spec, vendor_modeling  # noqa: E402

pytestmark = pytest.mark.vendor
REPO = Path(__file__).resolve().parents[2]
NOCROP_768 = (VisionWorkload(base_size=768, image_size=768, crop_mode=False), 1700, 2200)
CROPS_2X1 = (VisionWorkload(), 1536, 768)  # crop mode: grid 2x1 of 768-px tiles + the 1024 global view


@pytest.fixture(scope="module")
def vendor2(vendor2_dir):
    with vendor_modeling(vendor2_dir, "modeling_deepseekocr2") as modeling:
        yield modeling


@pytest.fixture(scope="module")
def reduced_pair(vendor2, vendor2_dir):
    config, spec = reduced_config_and_spec(vendor2.DeepseekOCR2Config, ModelSpec, vendor2_dir)
    twin = build_twin(spec, seed=1)
    with torch.device("meta"):
        ref = vendor2.DeepseekOCR2ForCausalLM(config).eval()
    load_into_vendor(ref, twin.state_dict())
    return spec, twin, ref


def _run(model, kwargs):
    with torch.no_grad(), cuda_calls_are_noops():
        return model(**kwargs)


@pytest.mark.slow
@pytest.mark.parametrize("case", ["nocrop_768", "crops_2x1"])
def test_same_logits_as_the_vendor_reduced_decoder(reduced_pair, case):
    spec, twin, ref = reduced_pair
    workload, width, height = NOCROP_768 if case == "nocrop_768" else CROPS_2X1
    inputs = build_inputs(spec, workload, width, height)
    # image tokens: 12 x 12 + 1 without crops; 16 x 16 + 1 + 2 x 12 x 12 with the 2 x 1 grid
    assert inputs.layout.image_tokens == (145 if case == "nocrop_768" else 257 + 2 * 144)
    kw = inputs.forward_kwargs(dtype=torch.float32)
    a, b = _run(twin, kw).logits, _run(ref, kw).logits
    assert a.shape == b.shape == (1, inputs.seq_len, spec.decoder.vocab_size)
    diff = (a - b).abs().max().item()
    print(f"[{case}] max |logit diff| twin vs vendor: {diff:.3g} (max |logit| {b.abs().max().item():.3g})")
    assert torch.isfinite(b).all()
    assert diff <= 1e-4 * max(1.0, b.abs().max().item())


@pytest.mark.slow
def test_same_decode_step_as_the_vendor(reduced_pair):
    spec, twin, ref = reduced_pair
    workload, width, height = NOCROP_768
    inputs = build_inputs(spec, workload, width, height)
    kw = {**inputs.forward_kwargs(dtype=torch.float32), "use_cache": True}
    steps = []
    for model in (twin, ref):
        prefill = _run(model, kw)
        steps.append(
            _run(
                model,
                {"input_ids": torch.tensor([[1234]]), "use_cache": True, "past_key_values": prefill.past_key_values},
            )
        )
    a, b = steps
    assert len(a.past_key_values) == len(b.past_key_values) == spec.decoder.num_layers
    assert a.past_key_values[0][0].shape == b.past_key_values[0][0].shape
    assert a.past_key_values[0][0].shape[-2] == inputs.seq_len + 1
    torch.testing.assert_close(a.logits, b.logits, rtol=1e-4, atol=1e-5)


# ------------------------------------------------------------------------------------------ the trace job
STEPS = 2


@pytest.fixture(scope="module")
def vendor2_trace(vendor2_dir, tmp_path_factory):
    run_dir = tmp_path_factory.mktemp("vendor2_trace")
    trace_under_big_lock(
        run_dir,
        "model=ocr2_vendor",
        f"model.path={vendor2_dir}",
        "runtime=cpu_bf16",
        "workload=ocr2/nocrop_768",
        f"trace.decode_steps={STEPS}",
        "profile=off",
    )
    return run_dir, json.loads((run_dir / "summary.json").read_text())["data"]


@pytest.mark.slow
def test_vendor_trace_runtime_checks_flops_and_kv_bytes(vendor2_trace):
    run_dir, s = vendor2_trace
    assert s["session"]["source"] == "vendor" and s["session"]["weights"] == "random"
    assert s["session"]["parameters"]["total"] == 3_389_119_360  # facts/deepseek_ocr2.md, built from config.json
    # 1 vision pass, 3 decoder-stack calls (prefill + 2 steps), the SAM and encoder loops, the routing, ...
    assert s["grouping"]["checks"] == {"ok": 9, "mismatch": 0, "not checked": 0}
    assert set(s["flops"]) == {"vision", "prefill", "decode"}
    assert all(e["ok"] and e["analytic"] == e["measured"] for e in s["flops"].values())
    assert set(s["parts"]) == {"sam", "encoder", "projector", "decoder", "lm_head"}
    assert all(p["flops_analytic"] == p["flops_measured"] > 0 for p in s["parts"].values())
    doc = json.loads((run_dir / "verification.json").read_text())["data"]
    rows = [r for st in doc["stages"] for r in st["rows"]]
    assert doc["passed"] and len(rows) == doc["n_rows"] > 100 and doc["n_failures"] == 0
    assert all(r["analytic"] == r["measured"] for r in rows)
    assert sorted({st.get("step") or 0 for st in doc["stages"]}) == [0, 1, 2]
    # bf16 keys and values of 12 layers x 10 KV heads x 128: per cached token 2 x 12 x 10 x 128 x 2 bytes
    L = s["tokens"]["sequence"]
    assert L == 1 + 145 + 4  # BOS, 12 x 12 + 1 image tokens, the prompt's 4 tokens
    assert [r["measured"] for r in doc["kv_cache"]] == [(L + k) * 2 * 12 * 10 * 128 * 2 for k in range(STEPS + 1)]
    assert all(r["ok"] for r in doc["kv_cache"])
    assert doc["activation_bytes"]["passed"]


@pytest.mark.slow
def test_vendor_trace_kernel_counts(vendor2_trace):
    """Kernel counts analytic = TorchLens on every row. The cost formulas assume min(E, T·top_k) = 64 experts get
    tokens in the prefill; with random weights the vendor's gate sends the prefill's 150 tokens to fewer, and its
    loop runs only those, 5 kernels each: the job counts the experts the gates chose (routing.json), and each
    prefill row holding MoE layers says it took off exactly 5 kernels per expert of those layers that got no token
    (derived here from routing.json); vision and decode rows (one token, 6 experts) take off nothing."""
    run_dir, _s = vendor2_trace
    assert assert_kernel_counts_exact_given_routing(run_dir, range(1, 12), STEPS) > 100
