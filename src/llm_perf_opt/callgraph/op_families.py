"""Which op outputs are new tensors: families of the op names TorchLens records (`CallGraph.op_output_bytes`).

An analytic model counts the bytes of the tensors an eager forward materialises; TorchLens records the
shape of every op's output, whether or not it is new memory. The families, by op name:

* `same tensor`: the op returned one of its inputs (TorchLens' `is_inplace`, keyed `name:same`):
  in-place ops (`add_`, `masked_fill_`), dropout in eval, casts and `contiguous` that had nothing to do;
* `view`: ops that alias their input (TorchLens' own no-copy list — `view`, `permute`, `transpose`,
  `reshape`, `flatten`, `expand`, `squeeze`, ... — and `unbind`, `split`, `chunk`, `view_as`,
  `expand_as`). `reshape` and `flatten` copy when their input is not contiguous: such a copy is
  counted here, as TorchLens counts it;
* `gather`: `__getitem__` with a tensor index (keyed `__getitem__:gather` by the capture: MoE token
  gathers, relative-position table lookups), a copy; `__getitem__` with slices and integers is a view;
* `copy/cast`: `to`, `float`, `type`, `contiguous`, `clone`, ... that made a new tensor;
* `compute`: everything else (matmuls, elementwise, norms, softmax, ...).

`materialised` = compute + copy/cast + gather: what an analytic "activation bytes" convention counts
when views and in-place ops produce nothing.

Two kinds of materialised bytes TorchLens cannot see, computed here from the call graph where they can be:
`layer_norm_statistics` (the float32 mean and rstd per row that `aten.native_layer_norm` returns beside
the normalised tensor; `F.layer_norm` hands back only the latter, so they are no op output).
"""

from __future__ import annotations

from collections import Counter
from typing import Mapping

SAME_TENSOR = ":same"  # op_output_bytes key suffix: the op returned one of its inputs
GATHER = ":gather"  # op_output_bytes key suffix: __getitem__ indexed by a tensor (a copy)
VIEW_OPS = frozenset(
    {
        "adjoint",
        "alias",
        "as_strided",
        "conj",
        "detach",
        "expand",
        "flatten",
        "imag",
        "movedim",
        "narrow",
        "permute",
        "real",
        "reshape",
        "select",
        "slice",
        "squeeze",
        "swapaxes",
        "swapdims",
        "t",
        "transpose",
        "unflatten",
        "unsqueeze",
        "view",  # TorchLens' no-copy list (torchlens.debug._cost)
        "unbind",
        "split",
        "split_with_sizes",
        "tensor_split",
        "chunk",
        "view_as",
        "expand_as",
        "unfold",
        "diagonal",
        "__getitem__",  # slices and integers; with a tensor index the capture keys it `__getitem__:gather`
    }
)
COPY_OPS = frozenset(
    {
        "to",
        "float",
        "half",
        "bfloat16",
        "double",
        "long",
        "int",
        "bool",
        "type",
        "type_as",
        "contiguous",
        "clone",
        "cpu",
        "cuda",
        "copy",
    }
)
FAMILIES = ("compute", "copy/cast", "gather", "view", "same tensor")
MATERIALISED = ("compute", "copy/cast", "gather")


def family(op_key: str) -> str:
    """The family of one `op_output_bytes` key."""
    if op_key.endswith(SAME_TENSOR):
        return "same tensor"
    if op_key.endswith(GATHER):
        return "gather"
    if op_key in VIEW_OPS:
        return "view"
    if op_key in COPY_OPS:
        return "copy/cast"
    return "compute"


def by_family(ops: Mapping[str, int]) -> dict[str, int]:
    """{family: bytes} of one module's (or a subtree's) op outputs, every family present."""
    out = Counter({f: 0 for f in FAMILIES})
    for key, nbytes in ops.items():
        out[family(key)] += int(nbytes)
    return dict(out)


def subtree_ops(op_output_bytes: Mapping[str, Mapping[str, int]], address: str) -> dict[str, int]:
    """{op key: bytes} over a module's subtree (by address prefix; "" is the whole forward)."""
    head = address + "." if address else ""
    out: Counter = Counter()
    for addr, ops in op_output_bytes.items():
        if not address or addr == address or addr.startswith(head):
            out.update({k: int(v) for k, v in ops.items()})
    return dict(out)


def materialised(ops: Mapping[str, int]) -> int:
    fam = by_family(ops)
    return sum(fam[f] for f in MATERIALISED)


def _rows_of_calls(meta: Mapping[str, object]) -> int:
    """Rows (all dims but the last) of a module's first output tensor, summed over its calls, from an
    `output_metadata` entry ({"first", "identical", "distinct", "distinct_calls"})."""

    def rows(sig: object) -> int:
        if not isinstance(sig, list) or not sig or not isinstance(sig[0], Mapping):
            return 0
        shape = sig[0].get("shape") or []
        n = 1
        for d in list(shape)[:-1]:
            n *= int(d)
        return n

    total = rows(meta.get("first")) * (1 + int(meta.get("identical") or 0))
    for sig, n in zip(meta.get("distinct") or [], meta.get("distinct_calls") or []):
        total += rows(sig) * int(n)
    return total


def layer_norm_statistics(
    module_types: Mapping[str, str],
    output_metadata: Mapping[str, Mapping[str, object]],
    classes: tuple[str, ...] = ("LayerNorm",),
    stat_bytes: int = 4,
) -> dict[str, int]:
    """{address: bytes} of the mean and rstd (two float32 per row) of every `nn.LayerNorm` call."""
    out = {}
    for address, cls in module_types.items():
        meta = output_metadata.get(address)
        if cls in classes and isinstance(meta, Mapping):
            out[address] = 2 * stat_bytes * _rows_of_calls(meta)
    return out


# ------------------------------------------------------------------------------------------- kernels
# Which recorded ops launch a kernel (`op_counts` keys): every compute, copy/cast and gather op; of the ops that
# returned an input, the in-place writes (`add_`, `masked_fill_`, `scatter_`, `__setitem__`); never a view, a
# no-op cast or `contiguous` that had nothing to do (`to:same`, `float:same`, `cpu:same` on the CPU), eval
# dropout, or a bare allocation. A `reshape` / `flatten` of a non-contiguous tensor copies, but TorchLens
# records it like a view: both sides count it as a view (the analytic model's convention, `analytic.costs`).
ALLOCATION_OPS = frozenset({"empty", "empty_like", "new_empty", "empty_strided"})
NO_OP_WHEN_SAME = frozenset(
    {
        "to",
        "float",
        "half",
        "bfloat16",
        "double",
        "long",
        "int",
        "bool",
        "type",
        "type_as",
        "contiguous",
        "cpu",
        "cuda",
        "detach",
        "dropout",
        "dropout_",
        "clone",
        "__iter__",
    }
)


def launches_kernel(op_key: str) -> bool:
    """Whether one recorded op (an `op_counts` key) launches a kernel."""
    if op_key.endswith(SAME_TENSOR):
        base = op_key[: -len(SAME_TENSOR)]
        return base not in NO_OP_WHEN_SAME and (base.endswith("_") or base == "__setitem__")
    if op_key.endswith(GATHER):
        return True
    return op_key not in VIEW_OPS and op_key not in ALLOCATION_OPS


def kernel_count(ops: Mapping[str, int]) -> int:
    """Kernels launched by {op key: count} (one module's, or a subtree's)."""
    return sum(int(n) for key, n in ops.items() if launches_kernel(key))


def subtree_kernels(op_counts: Mapping[str, Mapping[str, int]], address: str) -> int:
    """Kernels launched in a module's subtree (by address prefix; "" is the whole forward)."""
    return kernel_count(subtree_ops(op_counts, address))
