"""Fixtures for the profile and efficiency tests: the tiny twin, Gundam inputs, the default trace job's profile read
by the tests that only read a profile's result (`profiled`: the session's `default_run` made it, 7 forwards of the
tiny twin), and the times of one Tiny-mode forward."""

from __future__ import annotations

import pytest
import torch

from llm_perf_opt.config.schemas import ProfileConfig
from llm_perf_opt.dsocr.inputs import build_inputs
from llm_perf_opt.dsocr.layout import VisionWorkload
from llm_perf_opt.dsocr.spec import ModelSpec

GUNDAM = VisionWorkload(1024, 640, True)  # 1700x2200 page: 2x3 crops, SAM/CLIP/projector run twice
TINY_MODE = VisionWorkload(512, 512, False)  # one view: the cheapest forward


@pytest.fixture(scope="session")
def tiny_twin():
    from llm_perf_opt.dsocr.twin import build_twin

    return build_twin(ModelSpec.tiny(), seed=0)


@pytest.fixture(scope="session")
def gundam_kwargs():
    return build_inputs(ModelSpec.tiny(), GUNDAM).forward_kwargs(dtype=torch.float32)


@pytest.fixture(scope="session")
def small_kwargs():
    return build_inputs(ModelSpec.tiny(), TINY_MODE).forward_kwargs(dtype=torch.float32)


@pytest.fixture(scope="session")
def profiled(default_run):
    """(ModuleTimes, run dir) of the default profile (1 warm-up, 3 repeats) of the tiny twin in Gundam mode on the
    letter page: the profile stage of the session's default trace job (`default_run`), read from its profile.json
    (its Chrome trace beside it), as a later reader of the run would."""
    from llm_perf_opt.measure.module_times import load_module_times

    run, _ = default_run
    return load_module_times(run / "profile.json"), run


@pytest.fixture(scope="session")
def small_times():
    """(ModuleTimes, model, forward kwargs) of the tiny twin in the Tiny mode (one view), 3 repeats."""
    from llm_perf_opt.dsocr.twin import build_twin
    from llm_perf_opt.measure.profile import ForwardCall, profile_forward

    model = build_twin(ModelSpec.tiny(), seed=0)
    inputs = build_inputs(ModelSpec.tiny(), VisionWorkload(512, 512, False))
    kwargs = inputs.forward_kwargs(dtype=torch.float32)
    times = profile_forward(ForwardCall(model, kwargs), ProfileConfig(chrome_trace=False))
    return times, model, inputs
