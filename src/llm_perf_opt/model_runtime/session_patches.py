"""The run-time measures a session asks for (`Session.required_patches`), registered in `patches.PATCHES`:

* `cuda_to_device`: a vendor forward that hard-codes `.cuda()` (DeepSeek-OCR's `masked_scatter_` mask); during
  the block `Tensor.cuda` moves to the session's device instead (a no-op on CPU tensors).
* `autocast`: the session's `torch.autocast(device, bf16)` (the vendor's `infer()` runs under CUDA bf16
  autocast; on CPU the equivalent is CPU bf16 autocast).

Neither observes anything; both are restored when the block exits, as every patch is.
"""

from __future__ import annotations

import torch

from llm_perf_opt.errors import PatchError
from llm_perf_opt.model_runtime.patches import PATCHES, Patch, PatchContext, register_patch


def _apply_cuda_to_device(ctx: PatchContext) -> None:
    device = ctx.device

    def cuda(self, device_=None, non_blocking=False, memory_format=torch.preserve_format, **kwargs):
        # `.cuda()` in the vendor forward means "the compute device": move there instead (no copy if there)
        return self.to(device, non_blocking=non_blocking, memory_format=memory_format)

    ctx.replace(ctx.target(), cuda)


def _apply_autocast(ctx: PatchContext) -> None:
    make = getattr(ctx.session, "autocast_context", None)
    if make is None:
        raise PatchError("patch 'autocast': needs a session with autocast_context()")
    ctx.enter(make())


for _patch in (
    Patch(
        name="cuda_to_device",
        summary="Tensor.cuda() -> Tensor.to(session device) (the vendor forward's hard-coded .cuda())",
        apply=_apply_cuda_to_device,
        targets={"*": ("torch", "Tensor.cuda")},
    ),
    Patch(
        name="autocast",
        summary="torch.autocast(session device, bf16) around the block when the session asks for autocast",
        apply=_apply_autocast,
    ),
):
    if _patch.name not in PATCHES:
        register_patch(_patch)
