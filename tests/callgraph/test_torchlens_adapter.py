"""`callgraph.torchlens_adapter`: the one door to TorchLens. A failed capture leaves torch as it found
it; the version gate and moved private names are one TraceError; TorchLens' display strings parse."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from llm_perf_opt.callgraph import torchlens_adapter
from llm_perf_opt.callgraph.capture import capture
from llm_perf_opt.errors import TraceError

# Torch callables TorchLens wraps during a capture, as this process had them before any capture.
ORIGINALS = {
    "torch.nn.functional.linear": (torch.nn.functional, "linear", torch.nn.functional.linear),
    "torch.Tensor.__add__": (torch.Tensor, "__add__", torch.Tensor.__add__),
    "torch.relu": (torch, "relu", torch.relu),
    "torch.matmul": (torch, "matmul", torch.matmul),
}


def wrapped_now() -> list[str]:
    return [name for name, (owner, attr, original) in ORIGINALS.items() if getattr(owner, attr) is not original]


class FailsInside(nn.Module):
    """Runs a few wrapped ops under TorchLens, then raises in the middle of the forward."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        y = torch.relu(self.fc(x)) + x
        if y.shape[0] > 0:
            raise RuntimeError("deliberate failure inside the traced forward")
        return y


def test_failed_capture_restores_every_wrapped_torch_function():
    assert wrapped_now() == [] and not torchlens_adapter.torch_is_wrapped()
    with torch.no_grad(), pytest.raises(TraceError, match="deliberate failure"):
        capture(FailsInside().eval(), forward_args=(torch.randn(2, 8),))
    assert wrapped_now() == []  # the originals are back, not TorchLens' wrappers
    assert not torchlens_adapter.torch_is_wrapped()  # and TorchLens' own record agrees
    # a capture afterwards still works (TorchLens re-wraps on demand), and unwraps again
    with torch.no_grad():
        result = capture(nn.Sequential(nn.Linear(8, 8), nn.ReLU()).eval(), forward_args=(torch.randn(2, 8),))
    assert result.callgraph.call_counts["0"] == 1
    assert wrapped_now() == [] and not torchlens_adapter.torch_is_wrapped()


def test_successful_capture_leaves_torch_unwrapped():
    with torch.no_grad():
        capture(nn.Linear(8, 8).eval(), forward_args=(torch.randn(2, 8),))
    assert wrapped_now() == [] and not torchlens_adapter.torch_is_wrapped()


def test_unknown_torchlens_version_is_refused(monkeypatch):
    monkeypatch.setattr(torchlens_adapter, "torchlens_version", lambda: "2.99.0")
    torchlens_adapter.check_version.cache_clear()
    try:
        with pytest.raises(TraceError, match=r"TorchLens 2\.99\.0 .* checked with 2\.36\.x"):
            torchlens_adapter.trace_forward(nn.Linear(2, 2), (torch.randn(1, 2),))
    finally:
        monkeypatch.undo()
        torchlens_adapter.check_version.cache_clear()
    assert torchlens_adapter.check_version().startswith("2.36")


def test_a_moved_private_name_is_a_trace_error():
    with pytest.raises(TraceError, match=r"torchlens\._state\.no_such_function is gone"):
        torchlens_adapter._private("torchlens._state", "no_such_function")


def test_pause_logging_is_torchlens_own_and_nests():
    with torchlens_adapter.pause_logging(), torchlens_adapter.pause_logging():
        pass
    with torchlens_adapter.paused_if_loaded():
        pass


def test_parse_torchlens_call_summary():
    text = "[Tensor(shape=(2, 8), dtype=float32), 'a, b]', [Tensor(shape=(), dtype=torch.int64), 3]]"
    assert torchlens_adapter.parse_call_summary(text) == [("0", (2, 8), "float32"), ("2.0", (), "int64")]
    kw = "{mask: Tensor(shape=(2, 4), dtype=bool), pair: [Tensor(shape=(8,), dtype=float16), None]}"
    assert torchlens_adapter.parse_call_summary(kw) == [("mask", (2, 4), "bool"), ("pair.0", (8,), "float16")]
    assert torchlens_adapter.parse_call_summary("") == [] and torchlens_adapter.parse_call_summary("[]") == []


def test_line_sink_drops_quick_steps_and_keeps_slow_ones():
    lines: list[str] = []
    sink = torchlens_adapter.LineSink(lines.append)
    sink.write("[torchlens] Step 3: postprocess done (0.02s)\n[torchlens] Step 4: big done (2.5s)\npart")
    sink.write("ial line")
    sink.close_out()
    assert lines == ["[torchlens] Step 4: big done (2.5s)", "partial line"]


class _ReadsAValue(torch.nn.Module):
    """A forward that reads a tensor value into Python (`.item()`) to decide a branch, as the vendor's image
    checks and MoE routing do."""

    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(4, 4)

    def forward(self, x):
        y = self.lin(x)
        if torch.sum(y).item() != 0:  # the escape: a host sync that decides a branch
            y = y * 2
        return y


def test_a_scalar_escape_is_data_not_a_warning():
    """TorchLens' ScalarEscapeWarning (a tensor value read into Python during the forward) is recorded as
    `scalar_escapes` with its count and location, and is not among the capture's warnings or printed as one."""
    lines = []
    run = torchlens_adapter.trace_forward(_ReadsAValue(), [torch.randn(2, 4)], progress=lines.append)
    assert not any("ScalarEscape" in w for w in run.warnings)
    assert len(run.scalar_escapes) == 1
    escape = run.scalar_escapes[0]
    assert escape["count"] == 1
    assert escape["location"].startswith(__file__)
    assert not any("warning" in line and "ScalarEscape" in line for line in lines)
    assert sum("read into Python" in line for line in lines) == 1
