"""A minimal, temporary `torchvision` for importing the vendor code where no usable torchvision exists.

The vendor's `modeling_deepseekocr.py` imports `torchvision.transforms` (for `ToTensor`, `Normalize`,
`Compose`, used only by `infer()`'s image transform) and `InterpolationMode`. PyPI's torchvision wheels
are CUDA builds that fail to import next to a CPU torch, so on such machines the session imports the
vendor code with this stand-in in `sys.modules` and removes it right after: the vendor module keeps its
references (so `infer()`'s transform still works), nothing else in the process sees a torchvision.

The stand-in implements the four names with torch alone (ToTensor: HWC uint8 → CHW float in [0, 1];
Normalize: (x − mean) / std per channel; Compose: apply in order).
"""

from __future__ import annotations

import enum
import importlib.machinery
import importlib.util
import sys
import types
from contextlib import contextmanager
from typing import Any, Iterator, Sequence

import numpy as np
import torch

STAND_IN_FLAG = "__llm_perf_opt_stand_in__"
MODULE_NAMES = ("torchvision", "torchvision.transforms", "torchvision.transforms.functional")


class InterpolationMode(enum.Enum):
    NEAREST = "nearest"
    NEAREST_EXACT = "nearest-exact"
    BILINEAR = "bilinear"
    BICUBIC = "bicubic"
    BOX = "box"
    HAMMING = "hamming"
    LANCZOS = "lanczos"


class ToTensor:
    """PIL image or HWC ndarray → CHW float tensor; uint8 values scaled to [0, 1]."""

    def __call__(self, pic: Any) -> torch.Tensor:
        if isinstance(pic, torch.Tensor):
            return pic
        arr = np.asarray(pic)
        if arr.ndim == 2:
            arr = arr[:, :, None]
        t = torch.from_numpy(np.array(arr, copy=True)).permute(2, 0, 1).contiguous()
        return t.to(torch.get_default_dtype()).div(255) if t.dtype == torch.uint8 else t.to(torch.get_default_dtype())

    def __repr__(self) -> str:
        return "ToTensor()"


class Normalize:
    """(x − mean) / std per channel of a CHW (or NCHW) tensor."""

    def __init__(self, mean: Sequence[float], std: Sequence[float], inplace: bool = False) -> None:
        self.mean, self.std, self.inplace = list(mean), list(std), inplace

    def __call__(self, t: torch.Tensor) -> torch.Tensor:
        mean = torch.as_tensor(self.mean, dtype=t.dtype, device=t.device).view(-1, 1, 1)
        std = torch.as_tensor(self.std, dtype=t.dtype, device=t.device).view(-1, 1, 1)
        return t.sub_(mean).div_(std) if self.inplace else (t - mean) / std

    def __repr__(self) -> str:
        return f"Normalize(mean={self.mean}, std={self.std})"


class Compose:
    def __init__(self, transforms: Sequence[Any]) -> None:
        self.transforms = list(transforms)

    def __call__(self, x: Any) -> Any:
        for t in self.transforms:
            x = t(x)
        return x

    def __repr__(self) -> str:
        return f"Compose({self.transforms})"


def _make_modules() -> dict[str, types.ModuleType]:
    root = types.ModuleType("torchvision", "llm_perf_opt stand-in for torchvision (import-time only)")
    transforms = types.ModuleType("torchvision.transforms")
    functional = types.ModuleType("torchvision.transforms.functional")
    functional.InterpolationMode = InterpolationMode
    transforms.InterpolationMode = InterpolationMode
    transforms.ToTensor, transforms.Normalize, transforms.Compose = ToTensor, Normalize, Compose
    transforms.functional = functional
    root.transforms = transforms
    root.__version__ = "0.0.0+llm_perf_opt.stand_in"
    for mod in (root, transforms, functional):
        setattr(mod, STAND_IN_FLAG, True)
        is_pkg = mod is not functional
        mod.__spec__ = importlib.machinery.ModuleSpec(mod.__name__, None, is_package=is_pkg)
        if is_pkg:
            mod.__path__ = []
    return {m.__name__: m for m in (root, transforms, functional)}


def is_stand_in(module: Any) -> bool:
    return bool(getattr(module, STAND_IN_FLAG, False))


def real_torchvision_usable() -> bool:
    """True when a real torchvision imports cleanly (a broken CUDA wheel is cleaned out of sys.modules)."""
    present = sys.modules.get("torchvision")
    if present is not None:
        return not is_stand_in(present)
    try:
        if importlib.util.find_spec("torchvision") is None:
            return False
    except (ValueError, ImportError):
        return False
    before = set(sys.modules)
    try:
        import torchvision  # noqa: F401
        from torchvision import transforms  # noqa: F401
    except Exception:
        for name in set(sys.modules) - before:
            if name == "torchvision" or name.startswith("torchvision."):
                sys.modules.pop(name, None)
        return False
    return True


@contextmanager
def torchvision_stand_in() -> Iterator[bool]:
    """Provide `torchvision` during the block; yields True when the stand-in (not a real one) is used.

    On exit the stand-in's entries leave `sys.modules` again (entries that were there before are put back).
    """
    if real_torchvision_usable():
        yield False
        return
    saved = {name: sys.modules.get(name) for name in MODULE_NAMES}
    modules = _make_modules()
    sys.modules.update(modules)
    try:
        yield True
    finally:
        for name, mod in modules.items():
            if sys.modules.get(name) is mod:
                del sys.modules[name]
            if saved[name] is not None:
                sys.modules[name] = saved[name]
