"""The one door to `torch.utils.flop_counter` beyond its documented API, behind a version gate.

What this project needs from it and torch does not document:

* the hook `FlopCounterMode._count_flops(self, func_packet, out, args, kwargs)`, which torch calls once
  per executed, non-decomposed op: overriding it records every op and the ones without a formula
  (`RecordingFlopCounter`), so FLOPs lost to a missing formula are seen, not silently zero;
* `flop_registry` (the module-level table of formulas) and `sdpa_flop_count` (torch's SDPA formula),
  to give the SDPA backend ops torch has no formula for (the CPU flash kernel) torch's own formula.

Checked with torch 2.13 (run: tests/measure) and against the source of FlopCounterMode since 2.4, where
the hook has this signature. `check_flop_counter()` runs once before the first count: it inspects the
hook's signature and counts one probe matmul through it. If torch moved the hook, it raises
`FlopCounterAPIError` naming the torch version and this file; on a torch outside the checked range
whose hook still passes the probe, it warns once and goes on.
"""

from __future__ import annotations

import inspect
import math
import re
import warnings
from collections import Counter
from functools import lru_cache
from typing import Any, Callable, Mapping

import torch
from torch.utils import flop_counter as _fc

from llm_perf_opt.errors import PipelineError

CHECKED_TORCH = ((2, 4), (2, 13))  # inclusive (major, minor) range this adapter was checked with
_HOOK_PARAMETERS = ["self", "func_packet", "out", "args", "kwargs"]


class FlopCounterAPIError(PipelineError, RuntimeError):
    """torch's FlopCounterMode no longer has the private hook this project's op recording uses."""


def torch_version() -> tuple[int, int]:
    found = re.match(r"(\d+)\.(\d+)", torch.__version__)
    return (int(found.group(1)), int(found.group(2))) if found else (0, 0)


def _moved(what: str) -> FlopCounterAPIError:
    lo, hi = CHECKED_TORCH
    return FlopCounterAPIError(
        f"torch {torch.__version__}: {what}; llm_perf_opt/measure/flop_counter_adapter.py was checked with "
        f"torch {lo[0]}.{lo[1]} to {hi[0]}.{hi[1]} and must be updated for this version"
    )


class RecordingFlopCounter(_fc.FlopCounterMode):
    """FlopCounterMode that also records every executed (non-decomposed) op and those without formula."""

    def __init__(self, custom_mapping: Mapping[Any, Callable[..., int]]) -> None:
        super().__init__(display=False, custom_mapping=dict(custom_mapping))
        self.op_calls: Counter[str] = Counter()
        self.no_formula: Counter[str] = Counter()

    def _count_flops(self, func_packet, out, args, kwargs):  # called once per executed leaf op
        name = str(func_packet)
        self.op_calls[name] += 1
        if func_packet not in self.flop_registry:
            self.no_formula[name] += 1
        return super()._count_flops(func_packet, out, args, kwargs)


@lru_cache(maxsize=1)
def check_flop_counter() -> None:
    """Raise `FlopCounterAPIError` unless the hook exists, has its signature and is called per op."""
    hook = getattr(_fc.FlopCounterMode, "_count_flops", None)
    if hook is None:
        raise _moved("FlopCounterMode has no _count_flops hook")
    if list(inspect.signature(hook).parameters) != _HOOK_PARAMETERS:
        raise _moved(f"FlopCounterMode._count_flops{inspect.signature(hook)} changed its signature")
    probe = RecordingFlopCounter({})
    a = torch.ones(2, 3)
    with torch.no_grad(), probe:
        torch.mm(a, a.T)
    if probe.op_calls.get("aten.mm") != 1 or probe.get_total_flops() != 2 * 2 * 2 * 3:
        raise _moved(
            f"a probe matmul went through the hook as {dict(probe.op_calls)} "
            f"({probe.get_total_flops()} FLOPs, expected 24)"
        )
    lo, hi = CHECKED_TORCH
    if not lo <= torch_version() <= hi:
        warnings.warn(
            f"torch {torch.__version__} is outside the range the FlopCounterMode adapter was checked "
            f"with ({lo[0]}.{lo[1]} to {hi[0]}.{hi[1]}); its probe passed",
            stacklevel=2,
        )


def sdpa_flops(query_shape, key_shape, value_shape) -> int:
    """torch's `sdpa_flop_count`: 2·B·H·Lq·Lk·E (Q·Kᵀ) + 2·B·H·Lq·Lk·Ev (P·V), no causal discount.

    Shapes are (..., H, L, E). K/V heads are broadcast to the query's (GQA: what the kernel computes,
    and what older torch versions, which assert equal heads, accept); leading dims fold into the batch.
    """
    batch = math.prod(query_shape[:-3])
    heads, lq, e = query_shape[-3:]
    lk, ev = key_shape[-2], value_shape[-1]
    return _fc.sdpa_flop_count((batch, heads, lq, e), (batch, heads, lk, key_shape[-1]), (batch, heads, lk, ev))


def _sdpa_formula(query_shape, key_shape, value_shape, *args, out_shape=None, **kwargs) -> int:
    return sdpa_flops(query_shape, key_shape, value_shape)


# Backend SDPA ops this module adds a formula for, when the torch build has them and torch has none.
# On CUDA torch runs _scaled_dot_product_{flash,efficient,cudnn}_attention, which torch's own registry
# counts (checked with torch 2.13: tests/measure/test_cuda_flop_formulas.py); this module then adds
# nothing for them, so nothing is counted twice. The CPU kernel (`..._for_cpu`) is what torch lacks.
EXTRA_SDPA_OPS = (
    "_scaled_dot_product_flash_attention_for_cpu",
    "_scaled_dot_product_fused_attention_overrideable",
    "_scaled_dot_product_efficient_attention",
    "_scaled_dot_product_flash_attention",
    "_scaled_dot_product_cudnn_attention",
)

# flash-attn's kernels (`runtime.attn_implementation=flash_attention_2`: the decoder of the twin and of
# the vendor code on CUDA, through transformers' flash-attention helper). flash-attn registers its
# forward as torch custom ops, `<namespace>::_flash_attn_forward` and `::_flash_attn_varlen_forward`,
# under `flash_attn` (2.6/2.7) or `flashattn` (later releases); torch has no formula for them. q, k, v
# are (batch, seq, heads, head_dim), or (tokens, heads, head_dim) with cumulative sequence lengths in
# the varlen form. A flash-attn build that predates the custom ops calls its CUDA extension directly,
# below the dispatcher: FlopCounterMode cannot see those kernels at all (use sdpa or eager there).
FLASH_ATTN_NAMESPACES = ("flash_attn", "flashattn")
FLASH_ATTN_OPS = ("_flash_attn_forward", "_flash_attn_varlen_forward")


def flash_attn_flops(q_shape, k_shape, v_shape) -> int:
    """torch's SDPA formula (no causal discount) for flash-attn's (batch, seq, heads, dim) layout."""
    b, lq, h, e = q_shape
    _, lk, hk, _ = k_shape
    return sdpa_flops((b, h, lq, e), (b, hk, lk, e), (b, hk, lk, v_shape[-1]))


def _flash_formula(q_shape, k_shape, v_shape, *args, out_shape=None, **kwargs) -> int:
    return flash_attn_flops(q_shape, k_shape, v_shape)


def _flash_varlen_formula(q, k, v, cu_seqlens_q, cu_seqlens_k, *args, out_val=None, **kwargs) -> int:
    """Sum over the packed sequences i of 2·H·Lq_i·Lk_i·(E + Ev); needs the sequence lengths' values, so
    it takes the raw tensors (`_get_raw`), not their shapes."""
    lq = torch.diff(cu_seqlens_q.detach().to("cpu", torch.int64)).tolist()
    lk = torch.diff(cu_seqlens_k.detach().to("cpu", torch.int64)).tolist()
    heads, e, ev = q.shape[-2], q.shape[-1], v.shape[-1]
    return sum(2 * heads * a * b * e + 2 * heads * a * b * ev for a, b in zip(lq, lk))


_flash_varlen_formula._get_raw = True  # type: ignore[attr-defined]  # FlopCounterMode passes the tensors
_FLASH_FORMULAS = {"_flash_attn_forward": _flash_formula, "_flash_attn_varlen_forward": _flash_varlen_formula}


def _registered_op(namespace: str, name: str) -> Any:
    """`torch.ops.<namespace>.<name>` when some library registered it in this process, else None."""
    try:
        return getattr(getattr(torch.ops, namespace), name)
    except (AttributeError, RuntimeError):
        return None


def flash_attn_formulas(namespaces: tuple[str, ...] | None = None) -> dict[Any, Callable[..., int]]:
    """{op packet: formula} for flash-attn's custom ops registered in this process (flash_attn imported);
    `namespaces` default: FLASH_ATTN_NAMESPACES."""
    out: dict[Any, Callable[..., int]] = {}
    for namespace in FLASH_ATTN_NAMESPACES if namespaces is None else namespaces:
        for name in FLASH_ATTN_OPS:
            packet = _registered_op(namespace, name)
            if packet is not None and packet not in _fc.flop_registry:
                out[packet] = _FLASH_FORMULAS[name]
    return out


def extra_formulas() -> dict[Any, Callable[..., int]]:
    """{op packet: formula} for the attention kernels torch's registry lacks in this build and process:
    backend SDPA ops (the CPU flash kernel) and flash-attn's custom ops. Never an op torch counts."""
    out: dict[Any, Callable[..., int]] = {}
    for name in EXTRA_SDPA_OPS:
        packet = getattr(torch.ops.aten, name, None)
        if packet is not None and packet not in _fc.flop_registry:
            out[packet] = _sdpa_formula
    out.update(flash_attn_formulas())
    return out
