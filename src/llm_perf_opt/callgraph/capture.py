"""Capture a model's forward with TorchLens 2.x and derive the `CallGraph` (model-agnostic).

    cg = capture_callgraph(model, inputs.forward_kwargs(device, dtype), model_name="twin",
                           progress=progress, runtime_log=log)

The caller sets up `torch.no_grad()` / autocast and runtime patches around the call. The steps are
`record` (one forward under `torchlens.trace` with nothing saved, through `torchlens_adapter`, the one
door to TorchLens, and under `metadata.CallRecorder`'s read-only hooks), `derive` (the graph keys),
`attach_metadata` and `check` (`graph_problems`). From TorchLens:

* `call_counts`    — `Trace.module_calls` per address (root = "", TorchLens calls it "self");
* `edges`          — each `ModuleCall.call_parent_label`: the module call that was running when the
  child was called (its dynamic caller, not its static parent: `model.layers.0` is called from
  `model`, never from the `ModuleList` `model.layers`);
* `op_call_counts` — each op of `Trace.layer_list` counted in its innermost module call (`Op.module`),
  boundary placeholders (inputs, outputs, buffers) left out;
* `op_output_bytes` — the bytes of each such op's output tensor (shape × element size, as TorchLens
  records them), by innermost module and op name; an op whose output is one of its inputs (TorchLens'
  `is_inplace`: `add_`, dropout in eval, a cast to the same dtype) is keyed `name:same`, an indexing
  by a tensor (a gather, which copies) `__getitem__:gather`. Views are told apart by name where the
  bytes are used (`callgraph.op_families`);
* `op_counts`      — how many of each op (keyed as in `op_output_bytes`) ran directly in each module: the
  ops that launch a kernel are counted from it (`op_families.launches_kernel`);

and from the module tree: `module_children` (`named_children`, called or not) and `module_types`.

TorchLens only sees a module call that runs at least one tensor op; the hooks see every call made
through `nn.Module.__call__`. Where the two disagree the graph takes the larger count and says so in
`stats` (`calls_without_ops`: seen only by the hooks, attributed to the nearest called static
ancestor; `calls_bypassing_hooks`: `child.forward(x)` calls, seen only by TorchLens).

A tensor that entered a module without TorchLens seeing the op that made it (a TorchScript function
such as CLIP's `quick_gelu` is one opaque call) appears as an "internalsource" placeholder adopted at
the entry of the module that consumed it; it is counted as one op of that module's caller, where it
was computed, and listed in `stats["opaque_ops"]`.

TorchLens re-runs the whole forward ("rescue") when it sees such an unattributed tensor, to recover
ops hidden behind stale torch references; on DeepSeek-OCR that re-run recovers nothing and makes the
capture 2-4x slower (the second run under a `TorchFunctionMode`). `rescue=False` (default) declines
it (see `torchlens_adapter`), and TorchLens' verdict is kept in `stats["torchlens"]`. Torch is
unwrapped after the capture on every path, a failed forward included.

Several forwards in one graph (`program=`, e.g. a prefill and its decode steps): TorchLens traces one
call of the root, so the capture runs `program(forward, *args, **kwargs)` as the body of that call,
`forward` being the root's own forward (its class's, called directly). The root is then called once,
its children once per `forward` call (a decoder's layers 1 + N times for N decode steps), and every
module keeps its address: no wrapper module, no prefix. The root's body is an instance attribute for
the capture only, restored on every path; `stats["root_forward_calls"]` says how often the program
ran the root's forward.
"""

from __future__ import annotations

import time
from collections import Counter
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

from torch import nn

from llm_perf_opt.artifacts import to_jsonable
from llm_perf_opt.callgraph import metadata as graph_metadata
from llm_perf_opt.callgraph import torchlens_adapter as adapter
from llm_perf_opt.callgraph.op_families import GATHER, SAME_TENSOR  # op_output_bytes key suffixes
from llm_perf_opt.callgraph.schema import ROOT, CallGraph
from llm_perf_opt.errors import TraceError

Progress = Callable[[str], None]
# program(forward, *args, **kwargs): the body of the one traced root call; `forward` runs the root's own forward
Program = Callable[..., Any]


# --------------------------------------------------------------------------- results
@dataclass
class TraceGraph:
    """What TorchLens' trace says about module calls and ops, by address."""

    call_counts: Counter
    edges: dict[str, Counter]
    op_call_counts: Counter
    opaque_ops: Counter
    num_ops: int
    op_output_bytes: dict[str, Counter] = field(default_factory=dict)
    op_counts: dict[str, Counter] = field(default_factory=dict)
    op_counts_by_pass: dict[str, dict[str, Counter]] = field(default_factory=dict)


@dataclass
class CaptureResult:
    callgraph: CallGraph
    output: Any
    trace: Any = None  # the TorchLens Trace, only with keep_trace=True


# --------------------------------------------------------------------------- derive
def _address(tl_address: str | None) -> str:
    return adapter.address(tl_address, ROOT)


def _call_address(call_label: str) -> str:
    """ "model.layers.0:2" -> "model.layers.0"; TorchLens' root "self:1" -> ""."""
    return _address(call_label.rpartition(":")[0])


def graph_from_trace(trace: Any) -> TraceGraph:
    """Call counts, caller edges and per-module op counts from a TorchLens trace, in one pass each."""
    calls: Counter = Counter()
    edges: dict[str, Counter] = {}
    parent_of_call: dict[str, str | None] = {}
    for call in trace.module_calls:
        address = _address(call.address)
        calls[address] += 1
        parent_label = call.call_parent_label
        parent_of_call[call.call_label] = parent_label
        if parent_label is not None:
            parent = _call_address(parent_label)
            bucket = edges.get(parent)
            if bucket is None:
                bucket = edges[parent] = Counter()
            bucket[address] += 1
    ops: Counter = Counter()
    opaque: Counter = Counter()
    out_bytes: dict[str, Counter] = {}
    counts: dict[str, Counter] = {}
    by_pass: dict[str, dict[str, Counter]] = {}  # forward pass (1 = the prefill, k + 1 = decode step k) -> counts
    pass_cache: dict[str, int] = {}
    current_pass = 1
    num_ops = 0
    for op in trace.layer_list:
        if op.is_input or op.is_output or op.is_buffer:
            continue
        label = op.module
        if op.func_name == "none":
            # A tensor TorchLens did not see being made, adopted where it entered a module call:
            # it was computed by the caller of that call (e.g. a TorchScript function's output).
            if not op.is_internal_source:
                continue
            if label is not None:
                label = parent_of_call.get(label)
            address = ROOT if label is None else _call_address(label)
            opaque[address] += 1
        else:
            address = ROOT if label is None else _call_address(label)
        ops[address] += 1
        num_ops += 1
        name = "(opaque)" if op.func_name == "none" else str(op.func_name)
        if getattr(op, "is_inplace", False):  # the output is an input tensor (add_, eval dropout, no-op casts)
            name += SAME_TENSOR
        elif name == "__getitem__" and _indexed_by_tensor(op):
            name += GATHER  # indexed by a tensor: a copy, not a view
        if not getattr(op, "multi_output_index", None):  # topk's values and indices: one op, one kernel
            counts.setdefault(address, Counter())[name] += 1
            if label is not None and address != ROOT:
                current_pass = _pass_of(label, parent_of_call, pass_cache)
            by_pass.setdefault(str(current_pass), {}).setdefault(address, Counter())[name] += 1
        nbytes = _op_output_bytes(op)
        if nbytes is not None:
            out_bytes.setdefault(address, Counter())[name] += nbytes
    return TraceGraph(
        call_counts=calls,
        edges=edges,
        op_call_counts=ops,
        opaque_ops=opaque,
        num_ops=num_ops,
        op_output_bytes=out_bytes,
        op_counts=counts,
        op_counts_by_pass=by_pass,
    )


def _pass_of(call_label: str, parent_of_call: Mapping[str, str | None], cache: dict[str, int]) -> int:
    """The forward pass a module call belongs to: the call index of its outermost ancestor below the root
    (each of the root's children is called once per forward: `model:2` is the second forward, the first
    decode step). Ops of the root itself take the pass of the last module call before them."""
    hit = cache.get(call_label)
    if hit is None:
        label = call_label
        while True:
            parent = parent_of_call.get(label)
            if parent is None or _call_address(parent) == ROOT:
                break
            label = parent
        tail = label.rpartition(":")[2]
        hit = cache[call_label] = int(tail) if tail.isdigit() else 1
    return hit


def _indexed_by_tensor(op: Any) -> bool:
    """Whether a `__getitem__` took a tensor as its index (a recorded tensor in any argument position but
    the indexed one; the indexed tensor may be a parameter, which TorchLens does not list as a parent)."""
    positions = (getattr(op, "parent_arg_positions", None) or {}).get("args") or {}
    return any(pos != 0 for pos in positions)


def _op_output_bytes(op: Any) -> int | None:
    """Bytes of the tensor an op produced (TorchLens' recorded shape and dtype), None when it has none."""
    shape, dtype = getattr(op, "shape", None), getattr(op, "dtype", None)
    itemsize = getattr(dtype, "itemsize", None)
    if shape is None or not isinstance(itemsize, int):
        return None
    n = 1
    for d in shape:
        n *= int(d)
    return n * itemsize


# --------------------------------------------------------------------------- module tree
def module_tree(model: nn.Module) -> tuple[dict[str, list[str]], dict[str, str]]:
    """`module_children` (static, `named_children`) and `module_types` (class names) by address."""
    children: dict[str, list[str]] = {}
    types: dict[str, str] = {}
    for name, module in model.named_modules():
        types[name] = type(module).__name__
        children[name] = [f"{name}.{child}" if name else child for child, _ in module.named_children()]
    return children, types


# --------------------------------------------------------------------------- reconcile
def reconcile(
    graph: TraceGraph,
    recorder: graph_metadata.CallRecorder | None,
) -> tuple[dict[str, Counter], Counter, dict[str, int], dict[str, int]]:
    """Merge TorchLens' calls with the hooks': the larger count wins.

    Calls only the hooks saw (modules that ran no tensor op) are attributed to the module's nearest
    called static ancestor (the hooks record no caller: that would need a forward pre-hook, which
    makes TorchLens clone every hooked module's inputs). Returns (edges, call_counts,
    calls_without_ops, calls_bypassing_hooks).
    """
    calls = Counter(graph.call_counts)
    edges = {parent: Counter(children) for parent, children in graph.edges.items()}
    without_ops: dict[str, int] = {}
    bypassing: dict[str, int] = {}
    if recorder is None:
        return edges, calls, without_ops, bypassing
    extra: dict[str, int] = {}
    for address in set(calls) | set(recorder.calls):
        tl_n, hook_n = calls.get(address, 0), recorder.calls.get(address, 0)
        if hook_n > tl_n:
            extra[address] = hook_n - tl_n
        elif tl_n > hook_n:
            bypassing[address] = tl_n - hook_n
    for address, n in extra.items():
        calls[address] += n
    for address, n in sorted(extra.items()):
        caller = _nearest_called_ancestor(address, calls)
        edges.setdefault(caller, Counter())[address] += n
        without_ops[address] = n
    edges = {parent: children for parent, children in edges.items() if children}
    return edges, calls, without_ops, bypassing


def _nearest_called_ancestor(address: str, calls: Mapping[str, int]) -> str:
    node = address
    while node:
        node = node.rpartition(".")[0]
        if node and calls.get(node, 0) > 0:
            return node
    return ROOT


def graph_problems(cg: CallGraph) -> list[str]:
    """Inconsistencies of a call graph (empty when consistent). Consistent means:

    1. every module address in `call_counts`, `edges`, `op_call_counts` is in `module_types`;
    2. the root is called once, or not at all in an empty graph;
    3. every edge joins two called modules, and the child is a strict descendant of the parent in the
       static tree (`module_children`), so a call never climbs or jumps across the tree;
    4. every called module except the root is called exactly as often as its incoming edges say
       (sum over callers of `edges[caller][module]` == `call_counts[module]`);
    5. ops are counted only in called modules.
    """
    problems: list[str] = []
    known = cg.module_types
    for key in ("call_counts", "op_call_counts"):
        for address in getattr(cg, key):
            if address not in known:
                problems.append(f"{key}: unknown module '{address}'")
    if cg.call_counts and cg.call_counts.get(ROOT, 0) not in (0, 1):
        problems.append(f"root called {cg.call_counts.get(ROOT)} times, expected once")
    incoming: Counter = Counter()
    for parent, children in cg.edges.items():
        if parent not in known:
            problems.append(f"edges: unknown caller '{parent}'")
        if cg.call_counts.get(parent, 0) <= 0:
            problems.append(f"edges: caller '{parent}' is never called")
        for child, n in children.items():
            incoming[child] += n
            if child not in known:
                problems.append(f"edges: unknown callee '{child}'")
                continue
            if n <= 0:
                problems.append(f"edges: '{parent}' -> '{child}' has count {n}")
            if not is_descendant(child, parent, cg.module_children):
                problems.append(f"edges: '{child}' is not a descendant of its caller '{parent}'")
    for address, n in cg.call_counts.items():
        if address == ROOT or n <= 0:
            continue
        if incoming.get(address, 0) != n:
            problems.append(f"'{address}' called {n} times but its callers account for {incoming.get(address, 0)}")
    for address, n in incoming.items():
        if cg.call_counts.get(address, 0) <= 0:
            problems.append(f"edges: callee '{address}' has no call count")
    for address, n in cg.op_call_counts.items():
        if n > 0 and cg.call_counts.get(address, 0) <= 0:
            problems.append(f"op_call_counts: {n} ops in uncalled module '{address}'")
    return problems


def is_descendant(address: str, ancestor: str, children: Mapping[str, list[str]]) -> bool:
    """Whether `address` lies strictly below `ancestor` in the static module tree `children`.

    Child names never contain a dot (`nn.Module` refuses them), so the path from the ancestor down is
    the address's own dotted prefixes; each must be a listed child of the previous one.
    """
    if address == ancestor:
        return False
    if ancestor == ROOT:
        rest = address
    elif address.startswith(ancestor + "."):
        rest = address[len(ancestor) + 1 :]
    else:
        return False
    node = ancestor
    for part in rest.split("."):
        nxt = f"{node}.{part}" if node else part
        if nxt not in children.get(node, ()):
            return False
        node = nxt
    return True


# --------------------------------------------------------------------------- entry points
def _runtime_events(runtime_log: Any) -> list[dict[str, Any]]:
    """Events of a RuntimeLog (its `events()`), a list of events, or any iterable of them."""
    if runtime_log is None:
        return []
    events = getattr(runtime_log, "events", None)
    if callable(events):
        events = events()
    elif events is None:
        events = runtime_log
    out = []
    for event in events:
        value = to_jsonable(event)
        out.append(value if isinstance(value, dict) else {"event": value})
    return out


def _forward_progress(say: Progress, every_seconds: float = 2.0) -> Callable[[str], None]:
    """A throttled "where is the forward now" reporter for the hooks (completed shallow calls)."""
    start = time.perf_counter()
    last = [start]

    def on_call(address: str) -> None:
        now = time.perf_counter()
        if now - last[0] >= every_seconds:
            last[0] = now
            say(f"trace: forward passed {address or '<root>'} ({now - start:.0f} s)")

    return on_call


# --------------------------------------------------------------------------- the steps
@dataclass
class Recording:
    """What one forward under TorchLens and the hooks recorded."""

    run: adapter.TorchLensRun
    recorder: graph_metadata.CallRecorder | None
    root_forward_calls: int = 1  # forwards the root ran in its one call (a program's: prefill + decode steps)


@dataclass
class Derived:
    """The call graph's keys, and how TorchLens' and the hooks' counts were reconciled."""

    callgraph: CallGraph
    graph: TraceGraph
    calls_without_ops: dict[str, int]
    calls_bypassing_hooks: dict[str, int]
    seconds: float


@contextmanager
def root_program(model: nn.Module, program: Program | None, counter: list[int]) -> Iterator[None]:
    """Make one call of `model` run `program(forward, *args, **kwargs)`, `forward` being the root's own
    (class) forward; `counter[0]` counts its calls. The instance attribute is removed (or the one it
    shadowed put back) on every path."""
    if program is None:
        yield
        return
    own = vars(model)
    had, previous = "forward" in own, own.get("forward")
    class_forward = type(model).forward

    def forward(*args: Any, **kwargs: Any) -> Any:
        counter[0] += 1
        return class_forward(model, *args, **kwargs)

    def body(*args: Any, **kwargs: Any) -> Any:
        return program(forward, *args, **kwargs)

    model.forward = body
    try:
        yield
    finally:
        if had:
            model.forward = previous
        elif "forward" in vars(model):
            del model.forward


def record(
    model: nn.Module,
    forward_args: tuple[Any, ...],
    forward_kwargs: Mapping[str, Any] | None,
    *,
    metadata: bool,
    io_hooks: bool,
    progress: Progress | None,
    rescue: bool,
    program: Program | None = None,
) -> Recording:
    """Step 1: the forward (or `program`'s forwards, in one root call) under TorchLens and (with
    `io_hooks`) the read-only hooks."""
    recorder = None
    if io_hooks:
        recorder = graph_metadata.CallRecorder(
            model, tensors=metadata, on_call=_forward_progress(progress) if progress else None
        )
    counter = [0]
    with root_program(model, program, counter), recorder if recorder is not None else nullcontext():
        run = adapter.trace_forward(model, forward_args, forward_kwargs, progress=progress, rescue=rescue)
    return Recording(run=run, recorder=recorder, root_forward_calls=counter[0] if program is not None else 1)


def derive(rec: Recording, children: dict[str, list[str]], types: dict[str, str], model_name: str) -> Derived:
    """Step 2: call counts, caller edges and op counts, TorchLens' and the hooks' reconciled."""
    t0 = time.perf_counter()
    graph = graph_from_trace(rec.run.trace)
    edges, calls, without_ops, bypassing = reconcile(graph, rec.recorder)
    call_counts = {address: int(calls.get(address, 0)) for address in types}
    for address in calls:  # TorchLens addresses outside named_modules (aliases)
        if address not in types:
            call_counts[address] = int(calls[address])
    op_call_counts = {a: int(graph.op_call_counts.get(a, 0)) for a, n in call_counts.items() if n > 0}
    for address, n in graph.op_call_counts.items():
        op_call_counts.setdefault(address, int(n))
    cg = CallGraph(
        call_counts=call_counts,
        edges={parent: {child: int(n) for child, n in kids.items()} for parent, kids in edges.items()},
        op_call_counts=op_call_counts,
        module_children=children,
        module_types=types,
        op_output_bytes={a: dict(c) for a, c in graph.op_output_bytes.items()},
        op_counts={a: dict(c) for a, c in graph.op_counts.items()},
        op_counts_by_pass={p: {a: dict(c) for a, c in by.items()} for p, by in graph.op_counts_by_pass.items()},
        model_name=model_name,
    )
    return Derived(cg, graph, without_ops, bypassing, time.perf_counter() - t0)


def attach_metadata(
    cg: CallGraph,
    model: nn.Module,
    rec: Recording,
    forward_args: tuple[Any, ...],
    forward_kwargs: Mapping[str, Any] | None,
) -> dict[str, str]:
    """Step 3: constructor params, tensor I/O, activation bytes and parameter counts, in place; returns
    the I/O source per address."""
    root_io = None
    if rec.recorder is None:  # TorchLens keeps no record of the root call's own arguments
        root_io = (
            graph_metadata.input_signature(forward_args, dict(forward_kwargs or {})),
            graph_metadata.output_signature(rec.run.output),
        )
    return graph_metadata.merge_metadata(cg, model, trace=rec.run.trace, recorder=rec.recorder, root_io=root_io)


def check(cg: CallGraph, name: str, strict: bool) -> None:
    """Step 4: a consistent graph, or TraceError (`strict`) / the problems listed in `stats`."""
    problems = graph_problems(cg)
    if not problems:
        return
    if strict:
        raise TraceError(
            f"inconsistent call graph for {name}: "
            + "; ".join(problems[:5])
            + (f" (and {len(problems) - 5} more)" if len(problems) > 5 else "")
        )
    cg.stats["problems"] = problems


def _stats(
    cg: CallGraph, rec: Recording, derived: Derived, io_sources: Mapping[str, str], metadata_seconds: float
) -> dict[str, Any]:
    types, trace = cg.module_types, rec.run.trace
    return {
        "num_ops": derived.graph.num_ops,
        "module_calls": cg.total_module_calls(),
        "num_modules": len(types),
        "num_called_modules": sum(1 for a, n in cg.call_counts.items() if n > 0 and a != ROOT),
        "capture_seconds": round(rec.run.seconds, 3),
        "derive_seconds": round(derived.seconds, 3),
        "metadata_seconds": round(metadata_seconds, 3),
        "torchlens_total_flops_forward": adapter.total_flops_forward(trace),
        "calls_without_ops": _in_tree_order(derived.calls_without_ops, types),
        "calls_bypassing_hooks": _in_tree_order(derived.calls_bypassing_hooks, types),
        "opaque_ops": _in_tree_order(derived.graph.opaque_ops, types),
        "io_metadata_sources": dict(Counter(io_sources.values())),
        "root_forward_calls": rec.root_forward_calls,
        "torchlens": adapter.trace_facts(trace, rec.run),
    }


def capture(
    model: nn.Module,
    forward_kwargs: Mapping[str, Any] | None = None,
    *,
    forward_args: Iterable[Any] = (),
    model_name: str = "",
    progress: Progress | None = None,
    runtime_log: Any = None,
    metadata: bool = True,
    io_hooks: bool = True,
    rescue: bool = False,
    keep_trace: bool = False,
    strict: bool = True,
    program: Program | None = None,
) -> CaptureResult:
    """Run the forward once under TorchLens and the hooks; return the CallGraph and the output.

    Steps: `record` -> `derive` -> `attach_metadata` -> `check`.
    `metadata=False` skips tensor I/O, constructor params and parameter counts (graph keys only).
    `io_hooks=False` installs no hooks: tensor I/O then comes from TorchLens' record alone (no
    devices, graph-reachable outputs only), calls without tensor ops go unseen, and the forward gives
    no progress lines; the hooks cost roughly 5-10 % of the capture (torch runs hooked modules
    through an extra frame that TorchLens records for every op).
    `strict` raises TraceError when the graph is inconsistent (see `graph_problems`); otherwise the
    problems are listed in `stats["problems"]`. `runtime_log`: a list of events (or an object with
    `.events`), read after the forward. `program(forward, *forward_args, **forward_kwargs)`: the body of
    the one traced root call, calling the root's own `forward` as often as it likes (see the module
    docstring); the output is the program's.
    """
    say = progress or (lambda _msg: None)
    stage_start = time.perf_counter()
    forward_args = tuple(forward_args)
    name = model_name or type(model).__name__
    children, types = module_tree(model)
    say(f"trace: capturing {name} with TorchLens ({len(types)} modules, nothing saved)")
    rec = record(
        model,
        forward_args,
        forward_kwargs,
        metadata=metadata,
        io_hooks=io_hooks,
        progress=progress,
        rescue=rescue,
        program=program,
    )
    say(f"trace: TorchLens capture done in {rec.run.seconds:.1f} s")

    derived = derive(rec, children, types, model_name)
    cg = derived.callgraph
    say(
        f"trace: graph derived in {derived.seconds:.2f} s: {derived.graph.num_ops} ops, "
        f"{cg.total_module_calls()} module calls"
    )

    t0 = time.perf_counter()
    io_sources = attach_metadata(cg, model, rec, forward_args, forward_kwargs) if metadata else {}
    metadata_seconds = time.perf_counter() - t0
    if metadata:
        say(f"trace: metadata merged in {metadata_seconds:.2f} s")

    cg.runtime_log = _runtime_events(runtime_log)
    cg.stats = _stats(cg, rec, derived, io_sources, metadata_seconds)
    check(cg, name, strict)
    cg.stats["stage_seconds"] = round(time.perf_counter() - stage_start, 3)
    say(f"trace: stage done in {cg.stats['stage_seconds']:.1f} s")
    return CaptureResult(callgraph=cg, output=rec.run.output, trace=rec.run.trace if keep_trace else None)


def capture_callgraph(model: nn.Module, forward_kwargs: Mapping[str, Any] | None = None, **options: Any) -> CallGraph:
    """`capture(model, forward_kwargs, **options)` returning only the CallGraph (see `capture` for the options)."""
    return capture(model, forward_kwargs, **options).callgraph


def _in_tree_order(counts: Mapping[str, int], order: Mapping[str, Any]) -> dict[str, int]:
    rank = {address: i for i, address in enumerate(order)}
    return {a: int(counts[a]) for a in sorted(counts, key=lambda a: (rank.get(a, len(rank)), a))}
