"""Measured FLOPs per module: `torch.utils.flop_counter.FlopCounterMode` on a real forward, with nothing
silently missing; fvcore as a second opinion.

`FlopCounterMode` counts 2 × multiply-adds for mm / addmm / bmm / baddbmm / convolution and the CUDA
SDPA kernels, per module path (its `ModuleTracker` names a module by its attribute path under the root,
which we strip, so keys read `model.sam_model.blocks.0.attn`). Two gaps are closed here:

* CPU attention: `aten._scaled_dot_product_flash_attention_for_cpu` (what `F.scaled_dot_product_attention`
  runs on CPU, with or without a mask) has no formula in torch and would count zero. We add one per
  counter instance (`custom_mapping`, no global registration): torch's own `sdpa_flop_count`,
  2·B·H·Lq·Lk·E (Q·Kᵀ) + 2·B·H·Lq·Lk·Ev (P·V), the formula of its CUDA SDPA kernels; likewise for the
  other backend SDPA ops this torch build has and has no formula for, and flash-attn's custom ops
  (`flash_attention_2` on CUDA). Never an op torch counts itself (the CUDA SDPA kernels): nothing counts twice.
* Every leaf aten op that runs without a formula is recorded with its call count (through the private
  hook of `FlopCounterMode`, kept in `flop_counter_adapter` behind a version gate)
  (`MeasuredFlops.ops_without_formula`); the matmul-like ones among them
  (`matmul_like_without_formula`) would be FLOPs silently lost, so verification fails on them.
  Elementwise, norm, softmax, copy and indexing ops are expected there.

fvcore (`fvcore.nn.FlopCountAnalysis`) traces the model with `torch.jit` and counts one per
multiply-add; it skips `scaled_dot_product_attention` (listed in its unsupported ops) and counts norms,
upsampling and some elementwise ops that torch does not. `fvcore_flops` reports its numbers ×2 next to
the torch ones, with its unsupported ops and any failure message; it never replaces them.
"""

from __future__ import annotations

import traceback
from collections import Counter
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import torch

from llm_perf_opt.measure.flop_counter_adapter import RecordingFlopCounter, check_flop_counter, extra_formulas
from llm_perf_opt.measure.matmul_ops import is_matmul_like  # noqa: F401 - re-exported (export.flops, measure)


@dataclass
class MeasuredFlops:
    """FLOPs measured on one forward, per module path ("" = the whole forward) and per aten op."""

    total: int
    by_module: dict[str, int]
    by_module_op: dict[str, dict[str, int]]
    by_op: dict[str, int]
    op_calls: dict[str, int]
    ops_without_formula: dict[str, int]
    extra_formulas: list[str]
    root: str = ""
    label: str = ""
    counted_ops: dict[str, int] = field(default_factory=dict)
    module_classes: dict[str, int] = field(default_factory=dict)  # class name -> modules of the root module

    @property
    def matmul_like_without_formula(self) -> dict[str, int]:
        return {k: v for k, v in self.ops_without_formula.items() if is_matmul_like(k)}

    def module(self, path: str) -> int:
        """FLOPs of a module path ("" for the whole forward); 0 for a path that ran no counted op."""
        if path == "":
            return self.total
        return self.by_module.get(path, 0)

    def to_dict(self, with_ops: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "label": self.label,
            "root": self.root,
            "total": self.total,
            "by_module": dict(self.by_module),
            "by_op": dict(self.by_op),
            "counted_op_calls": dict(self.counted_ops),
            "ops_without_formula": dict(sorted(self.ops_without_formula.items())),
            "matmul_like_without_formula": self.matmul_like_without_formula,
            "extra_formulas": list(self.extra_formulas),
        }
        if with_ops:
            out["by_module_op"] = {k: dict(v) for k, v in self.by_module_op.items()}
        return out


def _strip(name: str, root: str) -> str | None:
    if name == "Global" or name == root:
        return ""
    if name.startswith(root + "."):
        return name[len(root) + 1 :]
    return None


def count_flops(
    fn: Callable[[], Any], root_module: torch.nn.Module | None = None, label: str = "", no_grad: bool = True
) -> tuple[MeasuredFlops, Any]:
    """Run `fn()` under a recording FlopCounterMode; return (MeasuredFlops, fn's result).

    Module paths are relative to `root_module` (the module `fn` calls first); without it, to the
    first module the tracker names.
    """
    check_flop_counter()
    formulas = extra_formulas()
    counter = RecordingFlopCounter(formulas)
    ctx = torch.no_grad() if no_grad else nullcontext()
    with ctx, counter:
        result = fn()
    raw = counter.get_flop_counts()
    root = type(root_module).__name__ if root_module is not None else _guess_root(raw)
    by_module: dict[str, int] = {}
    by_module_op: dict[str, dict[str, int]] = {}
    for name, ops in raw.items():
        path = _strip(name, root)
        if path is None:
            path = name  # a module outside the root (should not happen): keep its tracker name
        if path == "" and name != "Global":
            continue  # the root module itself: identical to Global unless ops ran outside it
        by_module_op[path] = {str(k): int(v) for k, v in ops.items()}
        by_module[path] = sum(by_module_op[path].values())
    total = by_module.get("", 0)
    measured = MeasuredFlops(
        total=total,
        by_module=by_module,
        by_module_op=by_module_op,
        by_op=by_module_op.get("", {}),
        op_calls=dict(counter.op_calls),
        ops_without_formula=dict(counter.no_formula),
        extra_formulas=[str(k) for k in formulas],
        root=root,
        label=label,
        counted_ops={k: v for k, v in counter.op_calls.items() if k not in counter.no_formula},
        module_classes=dict(Counter(type(m).__name__ for m in root_module.modules())) if root_module else {},
    )
    return measured, result


def measure_forward(
    model: torch.nn.Module, kwargs: Mapping[str, Any], label: str = "", autocast_dtype: torch.dtype | None = None
) -> tuple[MeasuredFlops, Any]:
    """FLOPs of `model(**kwargs)` (no grad; under CPU/CUDA autocast when `autocast_dtype` is given)."""

    def run():
        if autocast_dtype is not None:
            device_type = next(model.parameters()).device.type
            with torch.autocast(device_type, dtype=autocast_dtype):
                return model(**kwargs)
        return model(**kwargs)

    return count_flops(run, model, label)


def _guess_root(raw: Mapping[str, Any]) -> str:
    names = [n for n in raw if n != "Global"]
    if not names:
        return ""
    return min(names, key=lambda n: n.count(".")).split(".")[0]


# ---------------------------------------------------------------------------------------------- fvcore
@dataclass
class FvcoreFlops:
    """fvcore's count, converted to FLOPs (2 × its multiply-adds), or the reason it could not run."""

    ok: bool
    error: str | None = None
    total: int = 0
    by_module: dict[str, int] = field(default_factory=dict)
    by_operator: dict[str, int] = field(default_factory=dict)
    unsupported_ops: dict[str, int] = field(default_factory=dict)

    def module(self, path: str) -> int | None:
        if not self.ok:
            return None
        return self.total if path == "" else self.by_module.get(path)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "error": self.error,
            "unit": "FLOPs = 2 x fvcore multiply-adds",
            "total": self.total,
            "by_operator": dict(self.by_operator),
            "unsupported_ops": dict(self.unsupported_ops),
            "by_module": dict(self.by_module),
        }


class _KwargsAdapter(torch.nn.Module):
    """Calls `model(**kwargs)` from positional tensors, for `torch.jit` tracing (fvcore)."""

    def __init__(self, model: torch.nn.Module, kwargs: Mapping[str, Any], output: Callable[[Any], Any]) -> None:
        super().__init__()
        self.model = model
        leaves, self._spec = torch.utils._pytree.tree_flatten(dict(kwargs))
        self._tensor_pos = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
        self._leaves = leaves
        self._output = output

    def example_inputs(self) -> tuple[torch.Tensor, ...]:
        return tuple(self._leaves[i] for i in self._tensor_pos)

    def forward(self, *tensors: torch.Tensor):
        leaves = list(self._leaves)
        for i, t in zip(self._tensor_pos, tensors):
            leaves[i] = t
        kwargs = torch.utils._pytree.tree_unflatten(leaves, self._spec)
        return self._output(self.model(**kwargs))


def _default_output(out: Any) -> Any:
    if isinstance(out, torch.Tensor):
        return out
    logits = getattr(out, "logits", None)
    if isinstance(logits, torch.Tensor):
        return logits
    if isinstance(out, (tuple, list)):
        return out[0]
    return out


def fvcore_flops(
    model: torch.nn.Module, kwargs: Mapping[str, Any], output: Callable[[Any], Any] = _default_output
) -> FvcoreFlops:
    """fvcore's FlopCountAnalysis of `model(**kwargs)`; on failure, `ok=False` and the message."""
    import logging
    import warnings

    try:
        from fvcore.nn import FlopCountAnalysis
    except Exception as exc:  # pragma: no cover - fvcore is a dependency
        return FvcoreFlops(ok=False, error=f"fvcore import failed: {exc!r}")
    adapter = _KwargsAdapter(model, kwargs, output)
    try:
        with torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            logging.getLogger("fvcore").setLevel(logging.ERROR)
            analysis = FlopCountAnalysis(adapter, adapter.example_inputs())
            analysis.unsupported_ops_warnings(False)
            analysis.uncalled_modules_warnings(False)
            analysis.tracer_warnings("none")
            total = int(analysis.total())
            by_module_raw = analysis.by_module()
            by_operator = {str(k): 2 * int(v) for k, v in analysis.by_operator().items()}
            unsupported = {str(k): int(v) for k, v in analysis.unsupported_ops().items()}
    except Exception as exc:
        last = traceback.format_exception_only(type(exc), exc)[-1].strip()
        return FvcoreFlops(ok=False, error=last[:2000])
    by_module: dict[str, int] = {}
    for name, macs in by_module_raw.items():
        if name == "":
            continue
        if name == "model":
            path = ""
        elif name.startswith("model."):
            path = name[len("model.") :]
        else:
            continue
        if path:
            by_module[path] = 2 * int(macs)
    return FvcoreFlops(
        ok=True, total=2 * total, by_module=by_module, by_operator=by_operator, unsupported_ops=unsupported
    )


# Op families for comparing torch's per-op FLOPs with fvcore's per-operator counts.
_FAMILIES = (
    (
        "convolution",
        (
            "aten.convolution",
            "aten._convolution",
            "aten.cudnn_convolution",
            "aten._slow_conv2d_forward",
            "aten.convolution_overrideable",
        ),
        ("conv",),
    ),
    ("linear (mm, addmm)", ("aten.mm", "aten.addmm"), ("linear", "addmm", "mm")),
    ("batched matmul (bmm: einsum, matmul)", ("aten.bmm", "aten.baddbmm"), ("einsum", "matmul", "bmm", "baddbmm")),
)


def reconcile_fvcore(measured: MeasuredFlops, fv: FvcoreFlops) -> dict[str, Any]:
    """Where fvcore (×2) and torch differ, by op family: conv, linear, bmm, attention, fvcore-only ops."""
    if not fv.ok:
        return {"ok": False, "error": fv.error}
    torch_ops = dict(measured.by_op)
    fv_ops = dict(fv.by_operator)
    rows = []
    for family, t_names, f_names in _FAMILIES:
        t = sum(torch_ops.pop(n, 0) for n in t_names)
        f = sum(fv_ops.pop(n, 0) for n in f_names)
        rows.append({"family": family, "torch": t, "fvcore": f, "fvcore_minus_torch": f - t})
    attention = {k: torch_ops.pop(k) for k in list(torch_ops) if "attention" in k}
    t = sum(attention.values())
    rows.append(
        {
            "family": "attention (SDPA; fvcore skips it)",
            "torch": t,
            "fvcore": 0,
            "fvcore_minus_torch": -t,
            "ops": attention,
        }
    )
    for k, v in sorted(torch_ops.items()):
        rows.append({"family": f"torch only: {k}", "torch": v, "fvcore": 0, "fvcore_minus_torch": -v})
    for k, v in sorted(fv_ops.items()):
        rows.append({"family": f"fvcore only: {k}", "torch": 0, "fvcore": v, "fvcore_minus_torch": v})
    return {
        "ok": True,
        "torch_total": measured.total,
        "fvcore_total": fv.total,
        "fvcore_minus_torch": fv.total - measured.total,
        "rel": None if not measured.total else (fv.total - measured.total) / measured.total,
        "families": rows,
        "fvcore_unsupported_ops": dict(fv.unsupported_ops),
    }
