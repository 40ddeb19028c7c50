"""`callgraph.capture`: TorchLens capture -> CallGraph, on small hand-built modules and on twin_tiny.

A graph is *consistent* (`graph_problems` returns nothing) when every address is a module of the
tree, the root is called once, every edge joins two called modules with the callee strictly below
its caller in the static tree (`module_children`), every non-root module is called exactly as often
as its incoming edges say, and ops are counted in called modules only.
"""

from __future__ import annotations

import re

import pytest
import torch
from torch import nn

from llm_perf_opt.callgraph.capture import capture, capture_callgraph, graph_problems, is_descendant
from llm_perf_opt.callgraph.schema import CallGraph, load_callgraph_json
from llm_perf_opt.errors import TraceError


# ----------------------------------------------------------------------------- small modules
class Block(nn.Module):
    """linear -> relu -> residual add -> layer norm: 2 ops directly in the block (relu, add)."""

    def __init__(self, d: int) -> None:
        super().__init__()
        self.fc = nn.Linear(d, d)
        self.norm = nn.LayerNorm(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(torch.relu(self.fc(x)) + x)


class Stack(nn.Module):
    def __init__(self, n: int = 3, d: int = 8) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([Block(d) for _ in range(n)])
        self.unused = nn.Linear(d, d)  # never called: a static child, no calls

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = block(x)
        return x * 2  # one op directly in the root


class SharedLoop(nn.Module):
    def __init__(self, k: int = 3, d: int = 8) -> None:
        super().__init__()
        self.k = k
        self.shared = Block(d)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for _ in range(self.k):
            x = self.shared(x)
        return x


class Inner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        return torch.tanh(self.fc(x))


class Mid(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Inner()

    def forward(self, x):
        return self.inner(x) + self.inner(x * 0.5)


class Nested(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.mid = Mid()
        self.head = nn.Linear(8, 4)

    def forward(self, x):
        return self.head(self.mid(x))


@torch.jit.script
def scripted_act(x):
    return x * torch.sigmoid(1.702 * x)


class FFN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc1 = nn.Linear(8, 16)
        self.fc2 = nn.Linear(16, 8)

    def forward(self, x):
        return self.fc2(scripted_act(self.fc1(x)))


class Counter(nn.Module):
    """No tensor op at all: invisible to TorchLens, seen by the hooks."""

    def forward(self, x):
        return int(x.shape[0])


class Quirky(nn.Module):
    """A child called through `.forward()` (no hooks fire), an opaque TorchScript op, a zero-op child."""

    def __init__(self) -> None:
        super().__init__()
        self.ffn = FFN()
        self.count = Counter()

    def forward(self, x):
        y = self.ffn.forward(x)
        return y * self.count(x)


def run_capture(model, *args, **kwargs):
    with torch.no_grad():
        return capture(model.eval(), forward_args=args, **kwargs)


@pytest.fixture(scope="module")
def stack_cg() -> CallGraph:
    torch.manual_seed(0)
    return run_capture(Stack(3), torch.randn(2, 8)).callgraph


def test_stack_of_blocks_calls_edges_ops_children(stack_cg):
    cg = stack_cg
    for i in range(3):
        assert cg.call_counts[f"blocks.{i}"] == 1
        assert cg.call_counts[f"blocks.{i}.fc"] == 1
        # the caller of a block is the root, not the ModuleList that holds it (never called)
        assert cg.edges[""][f"blocks.{i}"] == 1
        assert cg.edges[f"blocks.{i}"] == {f"blocks.{i}.fc": 1, f"blocks.{i}.norm": 1}
        assert cg.op_call_counts[f"blocks.{i}"] == 2  # relu, add
        assert cg.op_call_counts[f"blocks.{i}.fc"] == 1  # linear
        assert cg.op_call_counts[f"blocks.{i}.norm"] == 1  # layer_norm
    assert cg.call_counts[""] == 1
    assert cg.call_counts["blocks"] == 0
    assert cg.op_call_counts[""] == 1  # x * 2
    assert cg.module_children[""] == ["blocks", "unused"]
    assert cg.module_children["blocks"] == ["blocks.0", "blocks.1", "blocks.2"]
    assert cg.call_counts["unused"] == 0 and "unused" not in cg.edges[""]
    assert cg.module_types["blocks.1"] == "Block" and cg.module_types["blocks.1.norm"] == "LayerNorm"
    assert cg.stats["num_ops"] == cg.total_ops() == 3 * 4 + 1
    assert cg.stats["module_calls"] == 9
    assert cg.stats["capture_seconds"] > 0
    assert cg.stats["torchlens_total_flops_forward"] > 0
    assert graph_problems(cg) == []


def test_shared_block_called_in_a_loop():
    cg = run_capture(SharedLoop(k=3), torch.randn(2, 8)).callgraph
    assert cg.edges[""] == {"shared": 3}
    assert cg.call_counts["shared"] == 3
    assert cg.edges["shared"] == {"shared.fc": 3, "shared.norm": 3}
    assert cg.op_call_counts["shared"] == 6 and cg.op_call_counts["shared.fc"] == 3
    assert graph_problems(cg) == []


def test_nested_modules_and_repeated_inner_calls():
    cg = run_capture(Nested(), torch.randn(2, 8)).callgraph
    assert cg.edges[""] == {"mid": 1, "head": 1}
    assert cg.edges["mid"] == {"mid.inner": 2}
    assert cg.edges["mid.inner"] == {"mid.inner.fc": 2}
    assert cg.op_call_counts["mid"] == 2  # x * 0.5, the add
    assert cg.op_call_counts["mid.inner"] == 2  # tanh twice
    assert cg.op_call_counts["mid.inner.fc"] == 2
    assert cg.op_call_counts[""] == 0
    assert graph_problems(cg) == []


def test_direct_forward_opaque_op_and_zero_op_module():
    cg = run_capture(Quirky(), torch.randn(2, 8)).callgraph
    # ffn.forward(x) bypasses __call__: TorchLens (which replaces forward) still sees the call
    assert cg.call_counts["ffn"] == 1 and cg.edges[""]["ffn"] == 1
    assert cg.stats["calls_bypassing_hooks"] == {"ffn": 1}
    # the scripted activation is one opaque op, counted in the module that computed it
    assert cg.op_call_counts["ffn"] == 1 and cg.op_call_counts["ffn.fc2"] == 1
    assert cg.stats["opaque_ops"] == {"ffn": 1}
    # a module without tensor ops is invisible to TorchLens; the hooks count it
    assert cg.call_counts["count"] == 1 and cg.edges[""]["count"] == 1
    assert cg.stats["calls_without_ops"] == {"count": 1}
    assert graph_problems(cg) == []
    # I/O of the bypassing call comes from TorchLens' record (no device there)
    assert cg.input_metadata["ffn"]["first"] == [{"path": "arg0", "shape": [2, 8], "dtype": "float32"}]
    assert cg.output_metadata["ffn"]["first"] == [{"path": "out", "shape": [2, 8], "dtype": "float32"}]


def test_outputs_bit_identical_with_and_without_capture():
    torch.manual_seed(1)
    model = Nested().eval()
    x = torch.randn(4, 8)
    with torch.no_grad():
        before = model(x)
        result = capture(model, forward_args=[x])
        after = model(x)
    assert torch.equal(result.output, before)
    assert torch.equal(after, before)


def test_hooks_removed_and_torch_unwrapped_after_capture():
    model = Nested().eval()
    run_capture(model, torch.randn(2, 8))
    for module in model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks
    assert "forward" not in model.mid.__dict__  # TorchLens restored the instance forward


class Broken(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        self.fc(x)  # some ops recorded, then the forward fails
        raise RuntimeError("boom in forward")


def test_failing_forward_raises_trace_error_and_removes_hooks():
    model = Broken().eval()
    with pytest.raises(TraceError, match="boom in forward"):
        run_capture(model, torch.randn(2, 8))
    for module in model.modules():
        assert not module._forward_hooks and not module._forward_pre_hooks


def test_progress_kwargs_and_runtime_log():
    lines: list[str] = []

    class KwModel(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(8, 8)

        def forward(self, x, scale=None):
            return self.fc(x) * scale

    log = [{"event": "llm_stack", "layers": 2}]
    with torch.no_grad():
        cg = capture_callgraph(
            KwModel().eval(),
            {"x": torch.randn(2, 8), "scale": torch.ones(1)},
            model_name="kw",
            progress=lines.append,
            runtime_log=log,
        )
    assert cg.model_name == "kw"
    assert cg.runtime_log == log
    assert cg.call_counts["fc"] == 1
    assert any(line.startswith("trace: capturing") for line in lines)
    assert any(line.startswith("torchlens:") for line in lines)
    assert any("stage done" in line for line in lines)
    assert cg.input_metadata[""]["first"][1]["path"] == "scale"


def test_runtime_log_events_read_after_the_forward():
    from llm_perf_opt.model_runtime.runtime_log import RuntimeLog

    log = RuntimeLog()

    class Logging(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc = nn.Linear(4, 4)

        def forward(self, x):
            log.record("llm_stack", layers=1)
            return self.fc(x)

    with torch.no_grad():
        cg = capture_callgraph(Logging().eval(), forward_args=[torch.randn(1, 4)], runtime_log=log)
    assert cg.runtime_log == [{"seq": 0, "event": "llm_stack", "layers": 1}]


def test_graph_problems_detects_inconsistencies(stack_cg):
    cg = CallGraph(**{k: v for k, v in stack_cg.to_dict().items()})
    cg.edges = {k: dict(v) for k, v in cg.edges.items()}
    cg.edges["blocks.0"]["blocks.1.fc"] = 1  # a call across the tree
    cg.call_counts = dict(cg.call_counts, **{"blocks.2": 5})  # more calls than the edges say
    problems = graph_problems(cg)
    assert any("not a descendant" in p for p in problems)
    assert any("'blocks.2' called 5 times" in p for p in problems)
    assert any("'blocks.1.fc' called 1 times but its callers account for 2" in p for p in problems)


def test_is_descendant():
    children = {"": ["a", "ab"], "a": ["a.b"], "a.b": ["a.b.c"], "ab": []}
    assert is_descendant("a.b.c", "", children)
    assert is_descendant("a.b.c", "a", children)
    assert not is_descendant("ab", "a", children)
    assert not is_descendant("a", "a", children)
    assert not is_descendant("a", "a.b", children)


# ----------------------------------------------------------------------------- twin_tiny
PAGE = (1700, 2200)


def _twin_capture(workload):
    from llm_perf_opt.dsocr.inputs import build_inputs
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.dsocr.twin import build_twin

    spec = ModelSpec.tiny()
    model = build_twin(spec, seed=0).eval()
    kwargs = build_inputs(spec, workload, *PAGE).forward_kwargs(None, torch.float32)
    with torch.no_grad():
        plain = model(**kwargs)
        result = capture(model, kwargs, model_name="twin_tiny")
    return spec, model, plain, result


@pytest.fixture(scope="module")
def twin_crop():
    from llm_perf_opt.dsocr.layout import VisionWorkload

    return _twin_capture(VisionWorkload(1024, 640, True))


@pytest.mark.slow
def test_twin_crop_mode_calls_vision_twice(twin_crop):
    spec, model, plain, result = twin_crop
    cg = result.callgraph
    for part in ("model.sam_model", "model.vision_model", "model.projector"):
        assert cg.edges["model"][part] == 2, part
        assert cg.call_counts[part] == 2
    assert cg.edges[""] == {"model": 1, "lm_head": 1}
    assert cg.call_counts["model.embed_tokens"] == 1


@pytest.mark.slow
def test_twin_decoder_layers_and_experts(twin_crop):
    spec, model, plain, result = twin_crop
    cg = result.callgraph
    n_layers = sum(1 for a in cg.module_types if re.fullmatch(r"model\.layers\.\d+", a))
    assert n_layers >= 2
    for i in range(n_layers):
        assert cg.call_counts[f"model.layers.{i}"] == 1
        assert cg.edges["model"][f"model.layers.{i}"] == 1
    experts = {a: n for a, n in cg.call_counts.items() if re.fullmatch(r"model\.layers\.\d+\.mlp\.experts\.\d+", a)}
    called = {a: n for a, n in experts.items() if n > 0}
    assert experts and called, "no routed expert was called"
    assert set(called.values()) == {1}, called
    for address in called:  # called from its MoE block, which runs once per layer
        moe = address.rsplit(".experts.", 1)[0]
        assert cg.edges[moe][address] == 1


@pytest.mark.slow
def test_twin_graph_consistent_and_metadata_complete(twin_crop):
    spec, model, plain, result = twin_crop
    cg = result.callgraph
    assert graph_problems(cg) == []
    assert set(cg.module_types) == {name for name, _ in model.named_modules()}
    assert set(cg.call_counts) == set(cg.module_types)
    for parent, kids in cg.module_children.items():
        names = [name for name, _ in model.get_submodule(parent).named_children()]
        assert kids == [f"{parent}.{c}" if parent else c for c in names]
    called = set(cg.called)
    assert called <= set(cg.input_metadata) and called <= set(cg.output_metadata)
    assert called <= set(cg.activation_bytes) and called <= set(cg.op_call_counts)
    assert set(cg.constructor_params) == set(cg.module_types) == set(cg.param_counts)
    assert sum(cg.param_counts.values()) == sum(p.numel() for p in model.parameters())
    assert cg.stats["num_ops"] == cg.total_ops() > 500
    assert cg.stats["module_calls"] == cg.total_module_calls()
    for address in called:
        assert cg.input_metadata[address]["calls"] == cg.call_counts[address], address


@pytest.mark.slow
def test_twin_output_bit_identical_and_round_trip(twin_crop, tmp_path):
    spec, model, plain, result = twin_crop
    assert torch.equal(result.output.logits, plain.logits)
    path = result.callgraph.save(tmp_path / "callgraph.json")
    loaded = load_callgraph_json(path)
    assert loaded.to_dict() == result.callgraph.to_dict()


# The no-crop (Tiny mode) counterpart, SAM/CLIP/projector called once, is in test_metadata.py, which
# captures that mode for its metadata checks (one twin capture per file keeps each file near a minute).
