"""Per-node metadata of a captured forward: constructor params, tensor I/O, activation bytes, params.

Sources, in order of preference:

* **Constructor params** — TorchLens records each called module's plain instance attributes
  (`Module.custom_attributes`: `in_features`, `kernel_size`, `eps`, `num_heads`, ...); the same scan of
  the instance `__dict__` covers modules TorchLens did not see (uncalled ones). A small registry keyed
  by attribute names adds what neither gives: bias presence, the shapes of the module's own
  parameters, the length of an `experts` / `layers` / `blocks` list, an activation's name, and
  well-known sizes that a class exposes as properties instead of instance attributes. TorchLens'
  `init_signature` is only the `__init__` signature text (parameter names, no values) and is only
  recorded with `save_code_context`, which costs a source lookup per op, so it is not used.
* **Tensor I/O** — `CallRecorder`: read-only forward hooks (with kwargs) on every module, removed on
  exit even when the forward raises. They see every tensor of every argument and output
  (nested lists, tuples, dicts, `ModelOutput`s) with its shape, dtype and device. TorchLens' own
  record (`ModuleCall.forward_args_summary` / `out_shapes`) has no device, keeps only outputs that
  reach the graph, and is a display string; it is the fallback for calls the hooks cannot see
  (a parent calling `child.forward(x)` directly bypasses `nn.Module.__call__` and so every hook,
  while TorchLens, which replaces `forward` itself, still records the call).
* **Parameter counts** — `module._parameters` (direct, not recursive; TorchLens' `num_params` is
  recursive).

Each call's tensors form one signature (a tuple of `(path, shape, dtype, device)`); per module the
file keeps the first signature in full, how many later calls repeated it exactly, and the distinct
signatures of the calls that differed, with their counts (`distinct_calls`), so `activation_bytes`
can be recomputed from `output_metadata` alone and the file stays small.
"""

from __future__ import annotations

import dataclasses
import math
import types
from collections import Counter
from collections.abc import Mapping
from typing import Any, Callable, Iterable

import torch
from torch import nn

from llm_perf_opt.callgraph import torchlens_adapter
from llm_perf_opt.callgraph.schema import ROOT

MAX_TENSORS_PER_CALL = 64  # tensors listed per call signature; the rest are counted, not listed
MAX_DEPTH = 6  # container nesting walked per argument
MAX_SEQUENCE = 16  # longest list/tuple kept as a constructor param
MAX_STRING = 80  # longest string kept as a constructor param

# (path, shape, dtype, device); device None when the source does not record it
TensorSig = tuple[str, tuple[int, ...], str, "str | None"]
Signature = tuple[TensorSig, ...]
OMITTED_DTYPE = "<omitted>"  # marker entry: shape = (number of tensors not listed,)


# --------------------------------------------------------------------------- tensor signatures
def _dtype_name(dtype: Any) -> str:
    return str(dtype).removeprefix("torch.")


def _tensor_sig(path: str, t: torch.Tensor) -> TensorSig:
    return (path, tuple(t.shape), _dtype_name(t.dtype), str(t.device))


def _walk(value: Any, path: str, out: list, depth: int) -> None:
    if isinstance(value, torch.Tensor):
        out.append(_tensor_sig(path, value))
    elif depth >= MAX_DEPTH:
        return
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            _walk(item, f"{path}.{i}" if path else str(i), out, depth + 1)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            _walk(item, f"{path}.{key}" if path else str(key), out, depth + 1)


def _cap(entries: list[TensorSig]) -> Signature:
    if len(entries) <= MAX_TENSORS_PER_CALL:
        return tuple(entries)
    extra = len(entries) - MAX_TENSORS_PER_CALL
    return tuple(entries[:MAX_TENSORS_PER_CALL]) + (("...", (extra,), OMITTED_DTYPE, None),)


def input_signature(args: tuple[Any, ...], kwargs: Mapping[str, Any] | None) -> Signature:
    """Tensors of a call's arguments: positional ones as `arg<i>[.<nested>]`, keyword ones by name."""
    out: list[TensorSig] = []
    for i, arg in enumerate(args):
        _walk(arg, f"arg{i}", out, 0)
    for key, arg in (kwargs or {}).items():
        _walk(arg, str(key), out, 0)
    return _cap(out)


def output_signature(output: Any) -> Signature:
    """Tensors of a call's output: `out` for a bare tensor, else `out.<index or key>...`."""
    out: list[TensorSig] = []
    _walk(output, "out", out, 0)
    return _cap(out)


def signature_bytes(sig: Signature) -> int:
    """Bytes of the tensors listed in a signature (omitted ones are not counted)."""
    total = 0
    for _path, shape, dtype, _device in sig:
        if dtype == OMITTED_DTYPE:
            continue
        total += math.prod(shape) * _itemsize(dtype)
    return total


_ITEMSIZE: dict[str, int] = {}


def _itemsize(dtype: str) -> int:
    size = _ITEMSIZE.get(dtype)
    if size is None:
        torch_dtype = getattr(torch, dtype, None)
        size = torch_dtype.itemsize if isinstance(torch_dtype, torch.dtype) else 0
        _ITEMSIZE[dtype] = size
    return size


def sig_to_json(sig: Signature) -> list[dict[str, Any]]:
    out = []
    for path, shape, dtype, device in sig:
        if dtype == OMITTED_DTYPE:
            out.append({"path": path, "omitted": shape[0]})
            continue
        entry: dict[str, Any] = {"path": path, "shape": list(shape), "dtype": dtype}
        if device is not None:
            entry["device"] = device
        out.append(entry)
    return out


class SignatureSummary:
    """First signature in full, count of later identical ones, and the distinct others with counts."""

    __slots__ = ("calls", "first", "identical", "distinct")

    def __init__(self) -> None:
        self.calls = 0
        self.first: Signature | None = None
        self.identical = 0
        self.distinct: dict[Signature, int] = {}

    def add(self, sig: Signature) -> None:
        self.calls += 1
        if self.first is None:
            self.first = sig
        elif sig == self.first:
            self.identical += 1
        else:
            self.distinct[sig] = self.distinct.get(sig, 0) + 1

    def total_bytes(self) -> int:
        if self.first is None:
            return 0
        total = signature_bytes(self.first) * (1 + self.identical)
        for sig, n in self.distinct.items():
            total += signature_bytes(sig) * n
        return total

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "first": sig_to_json(self.first or ()),
            "identical": self.identical,
            "distinct": [sig_to_json(s) for s in self.distinct],
            "distinct_calls": list(self.distinct.values()),
        }


def summary_bytes(entry: Mapping[str, Any]) -> int:
    """Bytes summed over calls of one `input_metadata` / `output_metadata` entry (its JSON form)."""

    def sig_bytes(metas: Iterable[Mapping[str, Any]]) -> int:
        return sum(math.prod(m["shape"]) * _itemsize(m["dtype"]) for m in metas if "shape" in m)

    total = sig_bytes(entry.get("first", ())) * (1 + int(entry.get("identical", 0)))
    counts = entry.get("distinct_calls") or [1] * len(entry.get("distinct", ()))
    for metas, n in zip(entry.get("distinct", ()), counts):
        total += sig_bytes(metas) * int(n)
    return total


# --------------------------------------------------------------------------- hooks
class CallRecorder:
    """Read-only forward hooks (with kwargs) on every module of `model`, as a context manager.

    Records per address the calls completed through `nn.Module.__call__` (`calls`) and, with
    `tensors=True`, their input and output signatures (`inputs`, `outputs`). Only *post*-forward hooks
    are used: the arguments they receive are the call's own argument objects, and a forward *pre*-hook
    would make TorchLens snapshot (clone) every hooked module's inputs to check whether the hook
    changed them. The hooks return None (they never change an argument or an output) and are removed
    in `__exit__`, also when the forward raises.
    """

    def __init__(
        self,
        model: nn.Module,
        *,
        tensors: bool = True,
        on_call: Callable[[str], None] | None = None,
        report_depth: int = 3,
    ) -> None:
        """`on_call(address)` hears of every completed call of a module whose address has at most
        `report_depth` dotted components (`model.layers.3` has 3), for progress reports."""
        self.model = model
        self.tensors = tensors
        self.on_call = on_call
        self.report_depth = report_depth
        self.calls: Counter[str] = Counter()
        self.inputs: dict[str, SignatureSummary] = {}
        self.outputs: dict[str, SignatureSummary] = {}
        self._handles: list[Any] = []

    def _make_hook(self, address: str) -> "_PostHook":
        depth = address.count(".") + 1 if address else 0
        return _PostHook(self, address, self.on_call if depth <= self.report_depth else None)

    def __enter__(self) -> "CallRecorder":
        try:
            for name, module in self.model.named_modules():
                self._handles.append(module.register_forward_hook(self._make_hook(name), with_kwargs=True))
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.remove()

    def remove(self) -> None:
        while self._handles:
            self._handles.pop().remove()


class _PostHook:
    """One module's forward hook. A callable object rather than a closure: TorchLens records every
    registered hook with its source location, and for a function that costs a source-file tokenise
    per module (seconds on a 4,000-module model); `inspect` cannot place an object, so it skips it."""

    __slots__ = ("recorder", "address", "on_call")

    def __init__(self, recorder: CallRecorder, address: str, on_call: Callable[[str], None] | None) -> None:
        self.recorder = recorder
        self.address = address
        self.on_call = on_call

    def __call__(self, _module: nn.Module, args: tuple[Any, ...], kwargs: dict[str, Any], output: Any) -> None:
        rec, address = self.recorder, self.address
        rec.calls[address] += 1
        if rec.tensors:
            with torchlens_adapter.pause_logging():  # the hook's reads are not ops of the model
                summary = rec.inputs.get(address)
                if summary is None:
                    summary = rec.inputs[address] = SignatureSummary()
                summary.add(input_signature(args, kwargs))
                summary = rec.outputs.get(address)
                if summary is None:
                    summary = rec.outputs[address] = SignatureSummary()
                summary.add(output_signature(output))
        if self.on_call is not None:
            self.on_call(address)


# --------------------------------------------------------------------------- TorchLens fallback
def torchlens_input_signature(call: Any) -> Signature:
    entries: list[TensorSig] = []
    for path, shape, dtype in torchlens_adapter.parse_call_summary(getattr(call, "forward_args_summary", None)):
        head, _, rest = path.partition(".")
        entries.append((f"arg{head}" + (f".{rest}" if rest else ""), shape, dtype, None))
    for path, shape, dtype in torchlens_adapter.parse_call_summary(getattr(call, "forward_kwargs_summary", None)):
        entries.append((path, shape, dtype, None))
    return _cap(entries)


def torchlens_output_signature(call: Any) -> Signature:
    shapes = list(getattr(call, "out_shapes", None) or [])
    dtypes = list(getattr(call, "out_dtypes", None) or [])
    if len(shapes) == 1:
        return ((("out", tuple(shapes[0]), _dtype_name(dtypes[0]) if dtypes else "unknown", None)),)
    return _cap(
        [
            (f"out.{i}", tuple(shape), _dtype_name(dtypes[i]) if i < len(dtypes) else "unknown", None)
            for i, shape in enumerate(shapes)
        ]
    )


def torchlens_io(
    trace: Any, addresses: Iterable[str]
) -> tuple[dict[str, SignatureSummary], dict[str, SignatureSummary]]:
    """Input and output summaries from TorchLens' own module-call records, for `addresses` only."""
    wanted = set(addresses)
    inputs: dict[str, SignatureSummary] = {}
    outputs: dict[str, SignatureSummary] = {}
    if not wanted:
        return inputs, outputs
    for call in trace.module_calls:
        address = torchlens_adapter.address(call.address, ROOT)
        if address not in wanted:
            continue
        inputs.setdefault(address, SignatureSummary()).add(torchlens_input_signature(call))
        outputs.setdefault(address, SignatureSummary()).add(torchlens_output_signature(call))
    return inputs, outputs


# --------------------------------------------------------------------------- constructor params
def _plain(value: Any) -> Any:
    """A JSON-able, shape-relevant value, or `_SKIP`."""
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return value if not isinstance(value, float) or math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value if len(value) <= MAX_STRING else _SKIP
    if isinstance(value, (torch.dtype, torch.device)):
        return str(value)
    if isinstance(value, (tuple, list, torch.Size)) and len(value) <= MAX_SEQUENCE:
        items = [_plain(v) for v in value]
        if all(v is not _SKIP and not isinstance(v, (list, dict)) for v in items):
            return items
    return _SKIP


_SKIP = object()
MAX_CONFIG_FIELDS = 16  # a small config object (a Mapping or a dataclass) is kept as a nested dict


def _plain_config(value: Any) -> Any:
    """A small Mapping / dataclass attribute (a module's own config, e.g. a projector's `cfg`) as a dict
    of its plain fields; big ones (a whole model config shared by every module) are skipped."""
    if isinstance(value, Mapping):
        items = list(value.items())
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        items = [(f.name, getattr(value, f.name)) for f in dataclasses.fields(value)]
    else:
        return _SKIP
    if not items or len(items) > MAX_CONFIG_FIELDS:
        return _SKIP
    out = {str(k): _plain(v) for k, v in items}
    out = {k: v for k, v in out.items() if v is not _SKIP}
    return out or _SKIP


IGNORED_ATTRIBUTES = frozenset({"training", "dump_patches", "call_super_init"})

# Well-known sizes a class may expose as a property or class attribute instead of an instance attr.
WELL_KNOWN_ATTRIBUTES = (
    "in_features",
    "out_features",
    "in_channels",
    "out_channels",
    "kernel_size",
    "stride",
    "padding",
    "dilation",
    "groups",
    "normalized_shape",
    "eps",
    "variance_epsilon",
    "num_embeddings",
    "embedding_dim",
    "padding_idx",
    "embed_dim",
    "dim",
    "hidden_size",
    "intermediate_size",
    "num_heads",
    "num_attention_heads",
    "num_key_value_heads",
    "head_dim",
    "window_size",
    "patch_size",
    "num_experts",
    "n_routed_experts",
    "n_shared_experts",
    "top_k",
    "num_experts_per_tok",
    "vocab_size",
    "max_position_embeddings",
    "rope_theta",
    "base",
    "scale",
    "scaling",
    "softmax_scale",
    "use_rel_pos",
    "causal",
    "is_causal",
)
ACTIVATION_ATTRIBUTES = ("act", "act_fn", "activation", "activation_fn", "act_layer", "hidden_act", "nonlinearity")
COUNTED_LISTS = {"experts": "num_experts", "layers": "num_layers", "blocks": "num_blocks"}


def _callable_name(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, nn.Module):
        return type(value).__name__
    name = getattr(value, "__name__", None) or getattr(value, "name", None)
    if isinstance(name, str):
        return name
    if isinstance(value, (types.FunctionType, types.BuiltinFunctionType)) or callable(value):
        return type(value).__name__
    return None


def instance_attributes(module: nn.Module) -> dict[str, Any]:
    """Plain instance attributes, scanned like TorchLens' `custom_attributes` (no `_`, no callables)."""
    out = {}
    for name, value in module.__dict__.items():
        if name.startswith("_") or name.startswith("tl_") or name in IGNORED_ATTRIBUTES or callable(value):
            continue
        out[name] = value
    return out


def module_constructor_params(module: nn.Module, recorded: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Shape-relevant config of one module: recorded (TorchLens) or scanned attributes + the registry."""
    params: dict[str, Any] = {}
    source = recorded if recorded is not None else instance_attributes(module)
    for name, value in source.items():
        if name.startswith("_") or name in IGNORED_ATTRIBUTES:
            continue
        plain = _plain(value)
        if plain is _SKIP:
            plain = _plain_config(value)
        if plain is not _SKIP:
            params[name] = plain
    for name in WELL_KNOWN_ATTRIBUTES:
        if name in params or name in module.__dict__:
            continue
        try:
            value = getattr(module, name)
        except Exception:  # noqa: BLE001 - a property may raise; then it is simply not recorded
            continue
        plain = _plain(value)
        if plain is not _SKIP and plain is not None:
            params[name] = plain
    own = module._parameters
    if "bias" in own:  # a registered (possibly None) bias parameter: record its presence
        params["bias"] = own["bias"] is not None
    elif "bias" in module.__dict__ and (
        module.__dict__["bias"] is None or isinstance(module.__dict__["bias"], torch.Tensor)
    ):
        params["bias"] = module.__dict__["bias"] is not None  # a plain tensor attribute (or None)
    shapes = {name: list(p.shape) for name, p in own.items() if p is not None}
    if shapes:
        params["param_shapes"] = shapes
    for attr, key in COUNTED_LISTS.items():
        child = module._modules.get(attr)
        if key not in params and isinstance(child, (nn.ModuleList, nn.ModuleDict, nn.Sequential)):
            params[key] = len(child)
    for attr in ACTIVATION_ATTRIBUTES:
        if attr in params:
            continue
        value = module._modules.get(attr, module.__dict__.get(attr))
        if value is None:
            continue
        name = _callable_name(value)
        if name:
            params[attr] = name
    return params


def constructor_params(
    model: nn.Module, recorded: Mapping[str, Mapping[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """`constructor_params` for every module of `model` (called or not), by address."""
    recorded = recorded or {}
    return {name: module_constructor_params(module, recorded.get(name)) for name, module in model.named_modules()}


def torchlens_attributes(trace: Any) -> dict[str, dict[str, Any]]:
    """TorchLens' recorded plain attributes (`Module.custom_attributes`) of every module it saw."""
    out = {}
    for mod in trace.modules:
        attrs = getattr(mod, "custom_attributes", None)
        if attrs is None:
            continue
        out[torchlens_adapter.address(mod.address, ROOT)] = dict(attrs)
    return out


def param_counts(model: nn.Module) -> dict[str, int]:
    """Parameters held directly by each module (not its children), by address."""
    return {
        name: sum(p.numel() for p in module._parameters.values() if p is not None)
        for name, module in model.named_modules()
    }


# --------------------------------------------------------------------------- merge
def io_metadata(
    call_counts: Mapping[str, int],
    recorder: CallRecorder | None,
    trace: Any = None,
    root_io: tuple[Signature, Signature] | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], dict[str, int], dict[str, str]]:
    """`input_metadata`, `output_metadata`, `activation_bytes` and the source used per address.

    The hooks' record is used for a module when they saw all its calls; otherwise (calls made
    through `child.forward(...)`, invisible to hooks) TorchLens' record of the calls, which lacks
    devices and outputs that never reach the graph. TorchLens does not record the root call's
    arguments: `root_io` (the input and output signatures of the forward itself) stands in.
    """
    hooked_in = recorder.inputs if recorder is not None else {}
    hooked_out = recorder.outputs if recorder is not None else {}
    sources: dict[str, str] = {}
    fallback: list[str] = []
    for address, n in call_counts.items():
        if n <= 0:
            continue
        summary = hooked_in.get(address)
        if summary is not None and summary.calls == n:
            sources[address] = "hooks"
        else:
            fallback.append(address)
    tl_in, tl_out = torchlens_io(trace, fallback) if trace is not None else ({}, {})
    if root_io is not None and ROOT in fallback and call_counts.get(ROOT) == 1:
        tl_in[ROOT], tl_out[ROOT] = SignatureSummary(), SignatureSummary()
        tl_in[ROOT].add(root_io[0])
        tl_out[ROOT].add(root_io[1])
    inputs: dict[str, dict[str, Any]] = {}
    outputs: dict[str, dict[str, Any]] = {}
    act_bytes: dict[str, int] = {}
    for address, n in call_counts.items():
        if n <= 0:
            continue
        if sources.get(address) == "hooks":
            s_in, s_out = hooked_in[address], hooked_out.get(address)
        elif address in tl_in:
            s_in, s_out = tl_in[address], tl_out.get(address)
            sources[address] = "torchlens"
        elif address in hooked_in:  # partial hook record, no TorchLens record: better than nothing
            s_in, s_out = hooked_in[address], hooked_out.get(address)
            sources[address] = "hooks_partial"
        else:
            continue
        inputs[address] = s_in.to_json()
        if s_out is not None:
            outputs[address] = s_out.to_json()
            act_bytes[address] = s_out.total_bytes()
    return inputs, outputs, act_bytes, sources


def merge_metadata(
    cg: Any,
    model: nn.Module,
    *,
    trace: Any = None,
    recorder: CallRecorder | None = None,
    root_io: tuple[Signature, Signature] | None = None,
) -> dict[str, str]:
    """Fill `cg`'s metadata fields in place from the model, TorchLens' trace and the hooks' record.

    `constructor_params` and `param_counts` cover every module; `input_metadata`, `output_metadata`
    and `activation_bytes` every called one. Returns the I/O source per address ("hooks",
    "torchlens" or "hooks_partial").
    """
    recorded = torchlens_attributes(trace) if trace is not None else None
    cg.constructor_params = constructor_params(model, recorded)
    cg.input_metadata, cg.output_metadata, cg.activation_bytes, sources = io_metadata(
        cg.call_counts, recorder, trace, root_io
    )
    cg.param_counts = param_counts(model)
    return sources
