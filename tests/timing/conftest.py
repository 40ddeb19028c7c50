"""Timing test support: the default trace job (the session's, run once: profile + roofline), a profiled tiny
twin, the helpers on the import path."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # --import-mode=importlib: make timing_helpers importable
    sys.path.insert(0, str(HERE))


@pytest.fixture(scope="session")
def default_trace(default_run):
    """(run dir, completed process) of `./dev trace` with its defaults (twin_tiny, gundam, CPU, profile on,
    hardware=measured): the session's `default_run` (tests/conftest.py)."""
    return default_run


@pytest.fixture(scope="session")
def small_times():
    """(ModuleTimes, model, forward kwargs) of the tiny twin in the Tiny mode (one view), 3 repeats."""
    from llm_perf_opt.config.schemas import ProfileConfig
    from llm_perf_opt.dsocr.inputs import build_inputs
    from llm_perf_opt.dsocr.layout import VisionWorkload
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.dsocr.twin import build_twin
    from llm_perf_opt.measure.profile import ForwardCall, profile_forward

    model = build_twin(ModelSpec.tiny(), seed=0)
    inputs = build_inputs(ModelSpec.tiny(), VisionWorkload(512, 512, False))
    kwargs = inputs.forward_kwargs(dtype=torch.float32)
    times = profile_forward(ForwardCall(model, kwargs), ProfileConfig(chrome_trace=False))
    return times, model, inputs
