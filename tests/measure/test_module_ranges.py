"""The hooks that open one profiler range per module call: balanced ranges, call indices, runtime
parents, and nothing left behind when the forward raises."""

from __future__ import annotations

import pytest
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile

from llm_perf_opt.config.schemas import ProfileConfig
from llm_perf_opt.errors import ConfigError
from llm_perf_opt.measure.module_ranges import ROOT_RANGE, module_ranges, range_name, unhooked_modules
from llm_perf_opt.measure.profile import ForwardCall, profile_forward


class Leaf(nn.Module):
    def __init__(self, fail_on_call: int = -1) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)
        self.calls = 0
        self.fail_on_call = fail_on_call

    def forward(self, x):
        self.calls += 1
        if self.calls == self.fail_on_call:
            raise RuntimeError("leaf failed on purpose")
        return self.lin(x)


class Tree(nn.Module):
    """`shared` runs twice per forward; `hidden` runs through .forward() (bypassing the hooks, not the
    forward shim); `invisible` runs as `Leaf.forward(self.invisible, x)` (bypassing both)."""

    def __init__(self, fail_on_call: int = -1) -> None:
        super().__init__()
        self.shared = Leaf(fail_on_call)
        self.hidden = Leaf()
        self.invisible = Leaf()
        self.stack = nn.ModuleList([Leaf(), Leaf()])

    def forward(self, x):
        x = self.shared(x)
        x = self.hidden.forward(x)
        x = Leaf.forward(self.invisible, x)
        for block in self.stack:
            x = block(x)
        return self.shared(x)


def _hook_counts(model: nn.Module) -> int:
    return sum(
        len(m._forward_pre_hooks) + len(m._forward_hooks) + len(getattr(m, "_forward_hooks_always_called", {}))
        for m in model.modules()
    )


def _profiler_on() -> bool:
    return torch.autograd.profiler._is_profiler_enabled


def test_calls_indices_and_runtime_parents():
    model = Tree()
    with torch.no_grad(), module_ranges(model) as ranges:
        model(torch.ones(2, 4))
    seen = [(c.path, c.index, ranges.calls[c.parent].key if c.parent is not None else None) for c in ranges.calls]
    assert seen == [
        ("", 0, None),
        ("shared", 0, ("", 0)),
        ("shared.lin", 0, ("shared", 0)),
        ("hidden", 0, ("", 0)),
        ("hidden.lin", 0, ("hidden", 0)),  # hidden.forward(): the shim's range
        ("invisible.lin", 0, ("", 0)),  # Leaf.forward(invisible, x) is not seen: its child belongs to the caller
        ("stack.0", 0, ("", 0)),
        ("stack.0.lin", 0, ("stack.0", 0)),
        ("stack.1", 0, ("", 0)),
        ("stack.1.lin", 0, ("stack.1", 0)),
        ("shared", 1, ("", 0)),
        ("shared.lin", 1, ("shared", 1)),
    ]
    assert [c.path for c in ranges.calls if c.direct] == ["hidden"]
    assert model.shared.calls == 2 and model.hidden.calls == 1  # every forward ran once per call, shim or not
    assert _hook_counts(model) == 0 and not any("forward" in m.__dict__ for m in model.modules())
    unhooked = unhooked_modules(model, ranges.calls)
    assert {p: u.kind for p, u in unhooked.items()} == {"invisible": "forward", "stack": "container"}
    assert unhooked["invisible"].caller == ""


def test_forward_shim_calls_the_class_forward_of_the_moment_and_restores_an_own_forward():
    model = Tree()
    calls = []
    model.shared.forward = lambda x: calls.append("own") or x  # an instance-level forward (a runtime patch)
    original = Leaf.forward
    with torch.no_grad(), module_ranges(model) as ranges:
        Leaf.forward = lambda self, x: calls.append(type(self).__name__) or original(self, x)  # class patch, late
        try:
            model(torch.ones(2, 4))
        finally:
            Leaf.forward = original
    assert calls == ["own", "Leaf", "Leaf", "Leaf", "Leaf", "own"]  # shared (own) x2; hidden, stack.0/1 patched
    assert [c.path for c in ranges.calls if c.path in ("shared", "hidden")] == ["shared", "hidden", "shared"]
    assert "forward" in model.shared.__dict__ and "forward" not in model.hidden.__dict__
    assert model.shared.forward(torch.ones(1)) is not None and calls[-1] == "own"


def test_ranges_reach_the_profiler_nested():
    model = Tree()
    with torch.no_grad(), module_ranges(model), profile(activities=[ProfilerActivity.CPU]) as prof:
        model(torch.ones(2, 4))
    names = {range_name(p) for p, _ in model.named_modules()}
    events = [e for e in prof.events() if e.name in names]
    assert sorted(e.name for e in events) == sorted(
        [
            ROOT_RANGE,
            "shared",
            "shared",
            "shared.lin",
            "shared.lin",
            "hidden",
            "hidden.lin",
            "invisible.lin",
            "stack.0",
            "stack.0.lin",
            "stack.1",
            "stack.1.lin",
        ]
    )
    root = next(e for e in events if e.name == ROOT_RANGE)
    for e in events:
        assert root.time_range.start <= e.time_range.start <= e.time_range.end <= root.time_range.end
        if e.name.endswith(".lin") and e.name != "invisible.lin":
            assert e.cpu_parent is not None and e.cpu_parent.name == e.name.rsplit(".", 1)[0]


def test_hooks_and_ranges_are_gone_after_an_exception():
    model = Tree(fail_on_call=2)  # the second call of `shared`: deep inside the forward
    with pytest.raises(RuntimeError, match="on purpose"):
        with torch.no_grad(), module_ranges(model) as ranges:
            model(torch.ones(2, 4))
    assert _hook_counts(model) == 0
    assert not ranges.installed and not ranges._open
    model.shared.fail_on_call = -1
    out = model(torch.ones(2, 4))  # the model still works, with no hook firing
    assert out.shape == (2, 4)


def test_profile_forward_cleans_up_when_the_profiled_forward_raises():
    # warm-up 0, round 0 runs plain first (call 1, 2 of `shared`), then profiled: call 3 raises inside it
    model = Tree(fail_on_call=3)
    cfg = ProfileConfig(warmup=0, repeats=1)
    with pytest.raises(RuntimeError, match="on purpose"):
        profile_forward(ForwardCall(model, {"x": torch.ones(2, 4)}), cfg)
    assert model.shared.calls == 3
    assert _hook_counts(model) == 0
    assert not _profiler_on()
    model.shared.fail_on_call = -1
    times = profile_forward(ForwardCall(model, {"x": torch.ones(2, 4)}), cfg)  # and it profiles again
    assert [c.path for c in times.calls_of("shared")] == ["shared", "shared"]


def test_twin_hooks_are_gone_after_a_failing_forward(tiny_twin, small_kwargs):
    bad = dict(small_kwargs, input_ids=small_kwargs["input_ids"].clone())
    bad["input_ids"][0, -1] = tiny_twin.config.vocab_size  # out of range: the embedding raises
    before = _hook_counts(tiny_twin)
    with pytest.raises(IndexError):
        with torch.no_grad(), module_ranges(tiny_twin):
            tiny_twin(**bad)
    assert _hook_counts(tiny_twin) == before == 0


def test_nvtx_needs_cuda():
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: NVTX is allowed here")
    with pytest.raises(ConfigError, match="profile.nvtx"):
        with module_ranges(Tree(), nvtx=True):
            pass
