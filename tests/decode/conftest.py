"""The tiny twin and its inputs, shared by the decode tests (real model, random seeded weights)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # --import-mode=importlib: make decode_helpers importable
    sys.path.insert(0, str(HERE))


@pytest.fixture(scope="module")
def tiny():
    """(spec, model, prefill kwargs) of the tiny twin in Tiny mode (512 x 512 view, no crops)."""
    from llm_perf_opt.dsocr.inputs import build_inputs
    from llm_perf_opt.dsocr.layout import VisionWorkload
    from llm_perf_opt.dsocr.spec import ModelSpec
    from llm_perf_opt.dsocr.twin import build_twin

    spec = ModelSpec.tiny()
    model = build_twin(spec, seed=0).eval()
    kwargs = build_inputs(spec, VisionWorkload(512, 512, False), 1700, 2200).forward_kwargs(None, torch.float32)
    return spec, model, kwargs
