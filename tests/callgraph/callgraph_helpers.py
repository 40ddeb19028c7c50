"""Hand-built call graphs and a minimal hook-based capture of small torch modules, for grouping tests.

`hook_capture` is not the project's TorchLens capture: it records module calls only (forward pre/post
hooks, the caller is the innermost module being executed), which is all the grouping needs.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable

from llm_perf_opt.callgraph.schema import CallGraph


def make_graph(
    modules: Iterable[tuple[str, str, int]],
    calls: Iterable[tuple[str, str, int]],
    root_calls: int = 1,
    constructor_params: dict[str, dict[str, Any]] | None = None,
    ops: dict[str, int] | None = None,
    activation_bytes: dict[str, int] | None = None,
    runtime_log: list[dict[str, Any]] | None = None,
) -> CallGraph:
    """modules: (address, class, direct params); calls: (parent, child, calls) in call order.
    A module's call count is the sum of its incoming edge calls (the root: `root_calls`)."""
    modules = list(modules)
    types = {a: c for a, c, _ in modules}
    params = {a: p for a, _, p in modules}
    children: dict[str, list[str]] = {a: [] for a in types}
    for a in types:
        if a:
            parent = a.rpartition(".")[0]
            children.setdefault(parent, []).append(a)
    edges: dict[str, dict[str, int]] = {}
    counts: dict[str, int] = {"": root_calls}
    for parent, child, n in calls:
        edges.setdefault(parent, {})[child] = edges.get(parent, {}).get(child, 0) + n
        counts[child] = counts.get(child, 0) + n
    call_counts = {a: counts.get(a, 0) for a in types}
    return CallGraph(
        call_counts=call_counts,
        edges=edges,
        op_call_counts=dict(ops or {}),
        module_children=children,
        module_types=types,
        constructor_params=dict(constructor_params or {}),
        activation_bytes=dict(activation_bytes or {}),
        param_counts=params,
        runtime_log=list(runtime_log or []),
        model_name="hand-built",
    )


def hook_capture(model, run: Callable[[], Any], runtime_log: list[dict[str, Any]] | None = None) -> CallGraph:
    """Module calls of `run()` on `model` via forward hooks: call counts, caller -> callee edges in call
    order, static tree, classes, direct parameter counts, output bytes, a few constructor params."""
    import torch

    names = {id(m): n for n, m in model.named_modules()}
    stack: list[str] = []
    counts: dict[str, int] = {}
    edges: dict[str, dict[str, int]] = {}
    out_bytes: dict[str, int] = {}
    handles = []

    def pre(mod, args):
        name = names[id(mod)]
        if stack:
            e = edges.setdefault(stack[-1], {})
            e[name] = e.get(name, 0) + 1
        counts[name] = counts.get(name, 0) + 1
        stack.append(name)

    def post(mod, args, out):
        name = stack.pop()
        tensors = (
            [out]
            if isinstance(out, torch.Tensor)
            else [t for t in (out if isinstance(out, (tuple, list)) else ()) if isinstance(t, torch.Tensor)]
        )
        out_bytes[name] = out_bytes.get(name, 0) + sum(t.numel() * t.element_size() for t in tensors)

    for m in model.modules():
        handles.append(m.register_forward_pre_hook(pre))
        handles.append(m.register_forward_hook(post))
    try:
        with torch.no_grad():
            run()
    finally:
        for h in handles:
            h.remove()
    types, params, children, ctor = {}, {}, {}, {}
    for n, m in model.named_modules():
        types[n] = type(m).__name__
        params[n] = sum(p.numel() for p in m.parameters(recurse=False))
        children[n] = [f"{n}.{c}" if n else c for c, _ in m.named_children()]
        cp = {
            k: getattr(m, k)
            for k in ("in_features", "out_features", "window_size", "num_heads")
            if isinstance(getattr(m, k, None), (int, float, str, bool))
        }
        if cp:
            ctor[n] = cp
    return CallGraph(
        call_counts={n: counts.get(n, 0) for n in types},
        edges=edges,
        op_call_counts={},
        module_children=children,
        module_types=types,
        constructor_params=ctor,
        activation_bytes=out_bytes,
        param_counts=params,
        runtime_log=list(runtime_log or []),
        model_name=type(model).__name__,
    )
