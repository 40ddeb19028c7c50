"""The generic model runtime's tests (sessions, vendor loading, the decode loop, routing, the runtime log,
random weights): a snapshot of the process state a session must leave as it found it; decode_helpers on the
import path. The tiny twin and its inputs (`tiny`) are tests/conftest.py's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch
from torch import nn

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # --import-mode=importlib: make decode_helpers importable
    sys.path.insert(0, str(HERE))


def _process_state() -> dict:
    """Process-wide state a session may touch and must leave as it found it."""
    return {
        "Tensor.cuda": vars(torch.Tensor).get("cuda"),
        "Linear.reset_parameters": nn.Linear.reset_parameters,
        "LayerNorm.reset_parameters": nn.LayerNorm.reset_parameters,
        "register_parameter": nn.Module.register_parameter,
        "default_dtype": torch.get_default_dtype(),
        "torchvision": sys.modules.get("torchvision"),
        "threads": torch.get_num_threads(),
    }


@pytest.fixture
def process_state():
    """A function returning a snapshot of the process state (call it before and after)."""
    return _process_state
