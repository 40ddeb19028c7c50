"""Process-wide state that loading the vendor code may change, snapshotted and put back.

The vendor's `disable_torch_init()` replaces `nn.Linear.reset_parameters` and friends for the rest of
the process; building on the meta device swaps `nn.Module.register_parameter`; TorchLens and the
`cuda_to_device` patch touch `Tensor.cuda`; transformers may change the default dtype. A session
snapshots all of these when it opens (`ProcessStateGuard`), restores them after loading and again at
`close()`, and sets and restores `torch`'s thread count.
"""

from __future__ import annotations

from typing import Any, Optional

import torch
from torch import nn

_INIT_FUNCTIONS = (
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "dirac_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "sparse_",
)
_MISSING = object()


def _guarded_attributes() -> list[tuple[Any, str, str]]:
    attrs: list[tuple[Any, str, str]] = []
    for cls in (nn.Linear, nn.LayerNorm, nn.Conv2d, nn.Embedding):
        attrs.append((cls, "reset_parameters", f"torch.nn.{cls.__name__}.reset_parameters"))
    attrs.append((torch.Tensor, "cuda", "torch.Tensor.cuda"))
    attrs.append((nn.Module, "register_parameter", "torch.nn.Module.register_parameter"))
    for name in _INIT_FUNCTIONS:
        if hasattr(torch.nn.init, name):
            attrs.append((torch.nn.init, name, f"torch.nn.init.{name}"))
    return attrs


class ProcessStateGuard:
    """Snapshot of process-wide attributes the vendor code or loading may replace; `restore()` puts back
    whatever changed and returns the names it restored. With `threads`, the torch thread count is set
    now and put back by `close()`."""

    def __init__(self, threads: Optional[int] = None) -> None:
        self._attrs = [
            (owner, attr, label, vars(owner).get(attr, _MISSING)) for owner, attr, label in _guarded_attributes()
        ]
        self._default_dtype = torch.get_default_dtype()
        self._threads_before: Optional[int] = None
        if threads is not None:
            self._threads_before = torch.get_num_threads()
            torch.set_num_threads(threads)

    @staticmethod
    def _same(owner: Any, attr: str, raw: Any) -> bool:
        """Unchanged, or only toggled between "inherited" and "set to the inherited object" (TorchLens'
        unwrap leaves `Tensor.cuda` set to `TensorBase.cuda`): both resolve to the same callable."""
        current = vars(owner).get(attr, _MISSING)
        if current is raw:
            return True
        if isinstance(owner, type) and (raw is _MISSING or current is _MISSING):
            inherited = next((vars(base)[attr] for base in owner.__mro__[1:] if attr in vars(base)), _MISSING)
            return (current if raw is _MISSING else raw) is inherited
        return False

    def changed(self) -> list[str]:
        out = [label for owner, attr, label, raw in self._attrs if not self._same(owner, attr, raw)]
        if torch.get_default_dtype() != self._default_dtype:
            out.append("torch default dtype")
        return out

    def restore(self) -> list[str]:
        restored = []
        for owner, attr, label, raw in self._attrs:
            if self._same(owner, attr, raw):
                continue
            if raw is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, raw)
            restored.append(label)
        if torch.get_default_dtype() != self._default_dtype:
            torch.set_default_dtype(self._default_dtype)
            restored.append("torch default dtype")
        return restored

    def close(self) -> list[str]:
        """`restore()`, and the thread count as it was before."""
        restored = self.restore()
        if self._threads_before is not None:
            torch.set_num_threads(self._threads_before)
            self._threads_before = None
        return restored


def init_disabled() -> list[str]:
    """Names of `reset_parameters` methods replaced by a lambda (what the vendor's `disable_torch_init` does)."""
    return [
        f"torch.nn.{cls.__name__}.reset_parameters"
        for cls in (nn.Linear, nn.LayerNorm)
        if getattr(cls.reset_parameters, "__name__", "") == "<lambda>"
    ]
