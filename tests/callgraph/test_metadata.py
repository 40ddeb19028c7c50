"""`callgraph.metadata`: constructor params, tensor I/O summaries, activation bytes, parameter counts."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

from llm_perf_opt.callgraph import metadata as graph_metadata
from llm_perf_opt.callgraph.capture import capture, graph_problems


# ----------------------------------------------------------------------------- constructor params
class Attention(nn.Module):
    """A custom module: plain attributes, a property, an activation function, an expert list."""

    def __init__(self, dim: int = 16, num_heads: int = 4, window_size: int = 7) -> None:
        super().__init__()
        self.num_heads = num_heads
        self.window_size = window_size
        self.scale = (dim // num_heads) ** -0.5
        self.config = {f"field_{i}": i for i in range(40)}  # a whole model config: too big to repeat per module
        self.cfg = {"projector_type": "linear", "input_dim": 16, "hook": print}  # a small own config
        self.act = torch.nn.functional.gelu
        self.qkv = nn.Linear(dim, 3 * dim, bias=False)
        self.experts = nn.ModuleList([nn.Linear(dim, dim) for _ in range(3)])
        self.register_buffer("mask", torch.zeros(2, 2))

    @property
    def head_dim(self) -> int:
        return self.qkv.in_features // self.num_heads

    def forward(self, x):
        return self.act(self.qkv(x))


def test_constructor_params_of_standard_layers():
    p = graph_metadata.module_constructor_params
    lin = p(nn.Linear(8, 4, bias=False))
    assert lin["in_features"] == 8 and lin["out_features"] == 4 and lin["bias"] is False
    assert lin["param_shapes"] == {"weight": [4, 8]}
    conv = p(nn.Conv2d(3, 16, kernel_size=3, stride=2, padding=1))
    assert conv["in_channels"] == 3 and conv["out_channels"] == 16
    assert conv["kernel_size"] == [3, 3] and conv["stride"] == [2, 2] and conv["padding"] == [1, 1]
    assert conv["groups"] == 1 and conv["bias"] is True
    assert conv["param_shapes"] == {"weight": [16, 3, 3, 3], "bias": [16]}
    ln = p(nn.LayerNorm(32, eps=1e-6))
    assert ln["normalized_shape"] == [32] and ln["eps"] == 1e-6 and ln["elementwise_affine"] is True
    emb = p(nn.Embedding(100, 12, padding_idx=0))
    assert emb["num_embeddings"] == 100 and emb["embedding_dim"] == 12 and emb["padding_idx"] == 0


def test_constructor_params_of_a_custom_module():
    params = graph_metadata.module_constructor_params(Attention())
    assert params["num_heads"] == 4 and params["window_size"] == 7 and params["scale"] == 0.5
    assert params["head_dim"] == 4  # a property: read through the registry of well-known names
    assert params["num_experts"] == 3  # length of the `experts` list
    assert params["act"] == "gelu"  # a function attribute: its name
    assert "config" not in params  # a big config object is not repeated on every module
    assert params["cfg"] == {"projector_type": "linear", "input_dim": 16}  # a small one is kept, plain fields only
    assert "param_shapes" not in params  # no direct parameters (the buffer is not a parameter)


def test_constructor_params_prefer_recorded_attributes():
    module = nn.Linear(8, 4)
    params = graph_metadata.module_constructor_params(
        module, recorded={"in_features": 8, "out_features": 4, "extra": (1, 2)}
    )
    assert params["extra"] == [1, 2] and params["bias"] is True


def test_param_counts_are_direct():
    model = nn.Sequential(nn.Linear(8, 4), nn.Sequential(nn.Linear(4, 2, bias=False)))
    counts = graph_metadata.param_counts(model)
    assert counts == {"": 0, "0": 36, "1": 0, "1.0": 8}


# ----------------------------------------------------------------------------- signatures
def test_signatures_walk_nested_arguments_and_outputs():
    x, m = torch.zeros(2, 3), torch.ones(4, dtype=torch.bool)
    sig = graph_metadata.input_signature((x, [x, (m,)]), {"mask": m, "flag": True, "extra": {"k": x}})
    assert [e[0] for e in sig] == ["arg0", "arg1.0", "arg1.1.0", "mask", "extra.k"]
    assert sig[0] == ("arg0", (2, 3), "float32", "cpu")
    assert sig[3] == ("mask", (4,), "bool", "cpu")
    out = graph_metadata.output_signature({"logits": x, "aux": (m, None)})
    assert [e[0] for e in out] == ["out.logits", "out.aux.0"]
    assert graph_metadata.output_signature(x) == (("out", (2, 3), "float32", "cpu"),)
    assert graph_metadata.signature_bytes(out) == 2 * 3 * 4 + 4 * 1


def test_signature_cap_counts_the_rest():
    sig = graph_metadata.output_signature([torch.zeros(1)] * (graph_metadata.MAX_TENSORS_PER_CALL + 5))
    assert len(sig) == graph_metadata.MAX_TENSORS_PER_CALL + 1
    assert graph_metadata.sig_to_json(sig)[-1] == {"path": "...", "omitted": 5}


def test_summary_first_identical_distinct():
    s = graph_metadata.SignatureSummary()
    a = (("out", (2, 3), "float32", "cpu"),)
    b = (("out", (5, 3), "float32", "cpu"),)
    for sig in (a, a, b, a, b):
        s.add(sig)
    data = s.to_json()
    assert data["calls"] == 5 and data["identical"] == 2
    assert data["first"] == [{"path": "out", "shape": [2, 3], "dtype": "float32", "device": "cpu"}]
    assert data["distinct"] == [[{"path": "out", "shape": [5, 3], "dtype": "float32", "device": "cpu"}]]
    assert data["distinct_calls"] == [2]
    assert s.total_bytes() == graph_metadata.summary_bytes(data) == (3 * 6 + 2 * 15) * 4


# ----------------------------------------------------------------------------- recorder
class Twice(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(8, 8)

    def forward(self, x, mask=None):
        a = self.proj(x)
        b = self.proj(x)
        c = self.proj(x[:1])
        return {"y": a + b, "parts": (c, mask)}


def test_recorder_is_read_only_and_removed():
    model = Twice().eval()
    x, mask = torch.randn(3, 8), torch.ones(3, dtype=torch.bool)
    with torch.no_grad():
        before = model(x, mask=mask)
        with graph_metadata.CallRecorder(model) as rec:
            # hooks are objects, not functions: TorchLens looks up the source lines of every function
            # hook on every module (seconds on the full model), but skips objects
            assert not any(inspect.isfunction(h) for h in model.proj._forward_hooks.values())
            during = model(x, mask=mask)
    assert torch.equal(before["y"], during["y"]) and torch.equal(before["parts"][0], during["parts"][0])
    assert not model._forward_hooks and not model.proj._forward_pre_hooks
    assert rec.calls == {"": 1, "proj": 3}
    proj_in = rec.inputs["proj"].to_json()
    assert proj_in["calls"] == 3 and proj_in["identical"] == 1 and proj_in["distinct_calls"] == [1]
    root_in = rec.inputs[""].to_json()["first"]
    assert [e["path"] for e in root_in] == ["arg0", "mask"]
    root_out = rec.outputs[""].to_json()["first"]
    assert [(e["path"], e["shape"]) for e in root_out] == [
        ("out.y", [3, 8]),
        ("out.parts.0", [1, 8]),
        ("out.parts.1", [3]),
    ]


def test_recorder_reports_shallow_calls_for_progress():
    model = nn.Sequential(nn.Sequential(nn.Linear(8, 8), nn.ReLU()), nn.Linear(8, 2)).eval()
    for depth, expected in ((0, [""]), (1, ["0", "1", ""]), (2, ["0.0", "0.1", "0", "1", ""])):
        seen: list[str] = []
        with (
            torch.no_grad(),
            graph_metadata.CallRecorder(model, tensors=False, on_call=seen.append, report_depth=depth),
        ):
            model(torch.randn(2, 8))
        assert seen == expected  # completions, innermost first


def test_recorder_removes_hooks_when_forward_raises():
    class Bad(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(2, 2)

        def forward(self, x):
            self.fc(x)
            raise ValueError("bad")

    model = Bad()
    with pytest.raises(ValueError):
        with graph_metadata.CallRecorder(model):
            model(torch.randn(1, 2))
    assert not model._forward_hooks and not model._forward_pre_hooks
    assert not model.fc._forward_hooks and not model.fc._forward_pre_hooks


def test_captured_io_metadata_and_activation_bytes():
    model = Twice().eval()
    x = torch.randn(3, 8)
    with torch.no_grad():
        cg = capture(model, {"x": x, "mask": torch.ones(3, dtype=torch.bool)}).callgraph
    proj = cg.output_metadata["proj"]
    assert proj["calls"] == 3 and proj["identical"] == 1
    assert proj["first"] == [{"path": "out", "shape": [3, 8], "dtype": "float32", "device": "cpu"}]
    assert proj["distinct"] == [[{"path": "out", "shape": [1, 8], "dtype": "float32", "device": "cpu"}]]
    assert cg.activation_bytes["proj"] == (3 * 8 * 2 + 1 * 8) * 4
    assert cg.activation_bytes[""] == 3 * 8 * 4 + 1 * 8 * 4 + 3 * 1
    for address in cg.called:
        assert cg.activation_bytes[address] == graph_metadata.summary_bytes(cg.output_metadata[address])
    assert cg.constructor_params["proj"]["in_features"] == 8
    assert cg.param_counts == {"": 0, "proj": 72}
    assert cg.stats["io_metadata_sources"] == {"hooks": 2}


def test_io_from_torchlens_alone_without_hooks():
    model = Twice().eval()
    with torch.no_grad():
        cg = capture(model, {"x": torch.randn(3, 8), "mask": torch.ones(3, dtype=torch.bool)}, io_hooks=False).callgraph
    assert cg.stats["io_metadata_sources"] == {"torchlens": 2}
    proj = cg.input_metadata["proj"]
    assert proj["calls"] == 3 and proj["identical"] == 1
    assert proj["first"] == [{"path": "arg0", "shape": [3, 8], "dtype": "float32"}]  # no device in TorchLens' record
    assert cg.output_metadata["proj"]["distinct"] == [[{"path": "out", "shape": [1, 8], "dtype": "float32"}]]
    assert [e["path"] for e in cg.input_metadata[""]["first"]] == ["x", "mask"]
    assert cg.activation_bytes["proj"] == (3 * 8 * 2 + 1 * 8) * 4


def test_metadata_off_keeps_graph_only():
    with torch.no_grad():
        cg = capture(Twice().eval(), forward_args=[torch.randn(2, 8)], metadata=False).callgraph
    assert cg.call_counts["proj"] == 3
    assert cg.input_metadata == {} and cg.constructor_params == {} and cg.param_counts == {}


# ----------------------------------------------------------------------------- twin_tiny, no crop
@pytest.fixture(scope="module")
def twin_tiny_mode():
    from llm_perf_opt.dsocr.inputs import build_inputs
    from llm_perf_opt.dsocr.layout import VisionWorkload
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.dsocr.twin import build_twin

    spec = ModelSpec.tiny()
    model = build_twin(spec, seed=0).eval()
    inputs = build_inputs(spec, VisionWorkload(512, 512, False), 1700, 2200)
    kwargs = inputs.forward_kwargs(None, torch.float32)
    with torch.no_grad():
        plain = model(**kwargs)
        result = capture(model, kwargs, model_name="twin_tiny")
    return spec, model, inputs, plain, result


@pytest.mark.slow
def test_twin_no_crop_mode_calls_vision_once(twin_tiny_mode):
    spec, model, inputs, plain, result = twin_tiny_mode
    cg = result.callgraph
    for part in ("model.sam_model", "model.vision_model", "model.projector"):
        assert cg.edges["model"][part] == 1, part
    assert graph_problems(cg) == []
    assert torch.equal(result.output.logits, plain.logits)


@pytest.mark.slow
def test_twin_metadata_for_every_called_module(twin_tiny_mode):
    spec, model, inputs, plain, result = twin_tiny_mode
    cg = result.callgraph
    for address in cg.called:
        assert cg.input_metadata[address]["calls"] == cg.call_counts[address], address
        assert cg.output_metadata[address]["calls"] == cg.call_counts[address], address
        assert cg.activation_bytes[address] == graph_metadata.summary_bytes(cg.output_metadata[address]), address
    sam_in = cg.input_metadata["model.sam_model"]["first"]
    assert sam_in == [{"path": "arg0", "shape": [1, 3, 512, 512], "dtype": "float32", "device": "cpu"}]
    seq = inputs.seq_len
    logits = cg.output_metadata[""]["first"]
    expected = {"path": "out.logits", "shape": [1, seq, spec.decoder.vocab_size], "dtype": "float32", "device": "cpu"}
    assert expected in logits
    head = cg.constructor_params["lm_head"]
    assert head["in_features"] == spec.decoder.hidden_size and head["out_features"] == spec.decoder.vocab_size
    assert head["bias"] is False
    assert cg.activation_bytes["lm_head"] == seq * spec.decoder.vocab_size * 4
    attn = cg.constructor_params["model.sam_model.blocks.0.attn"]
    assert attn["num_heads"] == spec.sam.heads
    assert cg.param_counts["lm_head"] == spec.decoder.hidden_size * spec.decoder.vocab_size
