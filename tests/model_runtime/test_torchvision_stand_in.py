"""The import-time torchvision stand-in: the four names the vendor code imports, gone after the block."""

from __future__ import annotations

import sys

import numpy as np
import pytest
import torch
from PIL import Image

from llm_perf_opt.model_runtime.torchvision_stand_in import is_stand_in, real_torchvision_usable, torchvision_stand_in


@pytest.fixture
def no_real_torchvision():
    if real_torchvision_usable():
        pytest.skip("a usable torchvision is installed: the stand-in is not used")


def test_stand_in_provides_the_vendor_imports_and_leaves(no_real_torchvision):
    assert "torchvision" not in sys.modules
    with torchvision_stand_in() as used:
        assert used
        from torchvision import transforms
        from torchvision.transforms.functional import InterpolationMode

        assert is_stand_in(sys.modules["torchvision"])
        assert InterpolationMode.BICUBIC.value == "bicubic"
        pipeline = transforms.Compose([transforms.ToTensor(), transforms.Normalize((0.5,) * 3, (0.5,) * 3)])
        img = Image.fromarray(np.array([[[0, 255, 51]] * 2] * 3, dtype=np.uint8), "RGB")  # 3 rows x 2 cols
        t = pipeline(img)
        assert t.shape == (3, 3, 2) and t.dtype == torch.float32
        assert torch.allclose(t[:, 0, 0], torch.tensor([-1.0, 1.0, 51 / 255 * 2 - 1]))
    for name in ("torchvision", "torchvision.transforms", "torchvision.transforms.functional"):
        assert name not in sys.modules
    assert transforms.ToTensor is not None  # references taken inside stay usable


def test_stand_in_restores_on_exception(no_real_torchvision):
    with pytest.raises(RuntimeError):
        with torchvision_stand_in():
            raise RuntimeError("inside")
    assert "torchvision" not in sys.modules
