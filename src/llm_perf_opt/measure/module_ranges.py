"""One profiler range per module call, opened and closed by forward hooks, and the call tree they saw.

    with module_ranges(model, nvtx=False) as ranges:
        model(**kwargs)
    ranges.calls  # [ModuleCall(path, index, parent, depth)] in call order

Each module of `model.named_modules()` gets a forward pre-hook that opens a
`torch.autograd.profiler.record_function` range (and, with `nvtx=True`, an NVTX range via
`torch.cuda.nvtx.range_push`) and a forward hook registered with `always_call=True` that closes it, so
a range is closed even when the module's forward raises. The hooks only push and pop ranges: they never
synchronise the device (DeepSpeed's profiler does, in every module hook, which serialises the GPU and
distorts the very times it reports). Leaving the `with` block closes any range still open and removes
every hook, also when the forward raised.

Ranges are named after the module path (`model.sam_model.blocks.0`); the root is `(root)`. A module
called several times in one forward (SAM, CLIP and the projector run twice in crop mode) gets one range
per call; `ModuleCall.index` numbers its calls in order, and the n-th range of a name in time order is
call n. `parent` is the call that was open when this one started: the runtime caller, which is not always
the structural parent.

A module run through `child.forward(x)` (CLIP's blocks call `self_attn.forward` and `mlp.forward`, as
the vendor does) bypasses `__call__` and so its hooks. To time it all the same, every module's `forward`
is shadowed for the duration of the block by an instance attribute that opens the module's range when
the call did not come through `__call__` (the pre-hook has not just opened that module's range) and
otherwise only passes through; it calls whatever `forward` the class has at call time (a class-level
runtime patch still applies) and is deleted on exit, restoring a `forward` the instance had of its own.
Such calls are `ModuleCall.direct`. A module whose class function is called explicitly
(`type(m).forward(m, x)`, `super().forward(x)` on another module) is still invisible: `unhooked_modules`
lists any module without a range some of whose descendants ran (and containers such as `ModuleList`,
which have no forward).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Optional

import torch
from torch import nn
from torch.autograd.profiler import record_function

ROOT_RANGE = "(root)"


def range_name(path: str) -> str:
    """The profiler / NVTX range name of the module at `path` ("" is the root)."""
    return path or ROOT_RANGE


@dataclass(frozen=True)
class ModuleCall:
    path: str  # module path as named_modules() gives it ("" = root)
    index: int  # 0 for the module's first call in the forward, 1 for the second, ...
    parent: Optional[int]  # position in `calls` of the call open when this one started (None: outermost)
    depth: int  # number of enclosing calls
    direct: bool = False  # run through `module.forward(...)`, not `module(...)`: opened by the forward shim

    @property
    def key(self) -> tuple[str, int]:
        return (self.path, self.index)


class _Open:
    """A range currently open: which call, which module, its record_function, and whether the module's
    forward has been entered (a range opened by the pre-hook waits for its own forward)."""

    __slots__ = ("pos", "module", "rf", "entered")

    def __init__(self, pos: int, module: nn.Module, rf: Any, entered: bool) -> None:
        self.pos, self.module, self.rf, self.entered = pos, module, rf, entered


class ModuleRanges:
    """The hooks' state: the calls seen so far and the ranges currently open."""

    def __init__(self, model: nn.Module, nvtx: bool = False) -> None:
        if nvtx and not torch.cuda.is_available():
            from llm_perf_opt.errors import ConfigError

            raise ConfigError.field("profile.nvtx", nvtx, "NVTX ranges need a CUDA device; set profile.nvtx=false")
        self.model = model
        self.nvtx = nvtx
        self.paths: dict[str, nn.Module] = dict(model.named_modules())
        self.calls: list[ModuleCall] = []
        self._counts: dict[str, int] = {}
        self._open: list[_Open] = []
        self._handles: list[Any] = []
        self._shims: list[tuple[nn.Module, Any]] = []  # (module, the instance's own forward or _NONE)

    # ------------------------------------------------------------------ ranges
    def _push(self, path: str, module: nn.Module, direct: bool) -> _Open:
        index = self._counts.get(path, 0)
        self._counts[path] = index + 1
        parent = self._open[-1].pos if self._open else None
        self.calls.append(ModuleCall(path, index, parent, len(self._open), direct))
        name = range_name(path)
        rf = record_function(name)
        rf.__enter__()
        if self.nvtx:
            torch.cuda.nvtx.range_push(name)
        entry = _Open(len(self.calls) - 1, module, rf, entered=direct)
        self._open.append(entry)
        return entry

    def _pop_through(self, entry: _Open) -> None:
        """Close the open ranges down to and including `entry` (innermost first)."""
        if not any(e is entry for e in self._open):
            return  # already closed (remove() ran, or an outer close swept it)
        while self._open:
            top = self._open.pop()
            self._close(top.rf)
            if top is entry:
                break

    # ------------------------------------------------------------------ hooks
    def _pre(self, path: str, module: nn.Module, args: Any) -> None:
        self._push(path, module, direct=False)

    def _post(self, module: nn.Module, args: Any, output: Any) -> None:
        for entry in reversed(self._open):
            if entry.module is module and not self._is_direct(entry):
                self._pop_through(entry)
                return
        # not ours (cannot happen with balanced calls; never pop a stranger's range)

    def _is_direct(self, entry: _Open) -> bool:
        return self.calls[entry.pos].direct

    def _close(self, rf: Any) -> None:
        if self.nvtx:
            torch.cuda.nvtx.range_pop()
        rf.__exit__(None, None, None)

    def _shim(self, path: str, module: nn.Module) -> Any:
        """The instance-level `forward`: a range of its own for a direct `.forward()` call, a pass-through
        for the call `__call__` makes right after the pre-hook opened this module's range."""
        own = module.__dict__.get("forward", _NONE)

        def forward(*args: Any, **kwargs: Any) -> Any:
            target = own if own is not _NONE else _class_forward(module)
            top = self._open[-1] if self._open else None
            if top is not None and top.module is module and not top.entered:
                top.entered = True  # the call __call__ makes: its range is open already
                return target(*args, **kwargs)
            entry = self._push(path, module, direct=True)
            try:
                return target(*args, **kwargs)
            finally:
                self._pop_through(entry)

        return forward

    # ------------------------------------------------------------------ lifetime
    def install(self) -> None:
        try:
            for path, module in self.paths.items():
                self._handles.append(
                    module.register_forward_pre_hook(lambda mod, args, _path=path: self._pre(_path, mod, args))
                )
                self._handles.append(module.register_forward_hook(self._post, always_call=True))
                if not is_container(module):
                    self._shims.append((module, module.__dict__.get("forward", _NONE)))
                    module.forward = self._shim(path, module)
        except BaseException:
            self.remove()
            raise

    def remove(self) -> None:
        """Close every range still open (innermost first), remove every hook and forward shim."""
        try:
            while self._open:
                self._close(self._open.pop().rf)
        finally:
            for handle in self._handles:
                handle.remove()
            self._handles.clear()
            for module, own in reversed(self._shims):
                if own is _NONE:
                    module.__dict__.pop("forward", None)
                else:
                    module.__dict__["forward"] = own
            self._shims.clear()

    @property
    def installed(self) -> bool:
        return bool(self._handles) or bool(self._shims)


_NONE = object()  # marks "the instance had no forward of its own"


def _class_forward(module: nn.Module) -> Any:
    """The class's `forward` bound to `module`, looked up now (so a class-level patch applied after the
    shim was installed still runs); a staticmethod or any other descriptor is honoured."""
    cls = type(module)
    for klass in cls.__mro__:
        if "forward" in klass.__dict__:
            return klass.__dict__["forward"].__get__(module, cls)
    raise AttributeError(f"{cls.__name__} has no forward")


@contextmanager
def module_ranges(model: nn.Module, nvtx: bool = False) -> Iterator[ModuleRanges]:
    """Hooks on every module of `model` for the duration of the block; removed on exit, also on error."""
    ranges = ModuleRanges(model, nvtx=nvtx)
    ranges.install()
    try:
        yield ranges
    finally:
        ranges.remove()


def is_container(module: nn.Module) -> bool:
    """True for modules with no forward of their own (ModuleList, ModuleDict): they are never called."""
    return type(module).forward is nn.Module.forward


def _ancestors(path: str) -> list[str]:
    """Structural ancestors of a module path, nearest first, ending with the root ""."""
    parts = path.split(".") if path else []
    return [".".join(parts[:n]) for n in range(len(parts) - 1, -1, -1)]


@dataclass(frozen=True)
class Unhooked:
    """A module with no range although modules below it ran."""

    kind: str  # "container" (ModuleList/ModuleDict: no forward) or "forward" (bypassed __call__)
    caller: Optional[str]  # the module whose range holds its time (the runtime caller of its children)

    def describe(self) -> str:
        if self.kind == "container":
            return "container without a forward: its time is the sum of its children's"
        return (
            f"its class's forward was called explicitly (e.g. type(m).forward(m, x)), not seen by hooks or "
            f"the forward shim: its own "
            f"code's time is in the range of its caller {self.caller or ROOT_RANGE!r}"
        )


def unhooked_modules(model: nn.Module, calls: list[ModuleCall]) -> dict[str, Unhooked]:
    """{path: Unhooked} for every module without a call some of whose descendants were called.

    Modules neither called nor with called descendants (CLIP's unused patch convolution) are not listed.
    """
    called = {c.path for c in calls}
    modules = dict(model.named_modules())
    out: dict[str, Unhooked] = {}
    for call in calls:
        caller = calls[call.parent].path if call.parent is not None else None
        for ancestor in _ancestors(call.path):
            if ancestor in called or ancestor in out or ancestor not in modules:
                continue
            kind = "container" if is_container(modules[ancestor]) else "forward"
            out[ancestor] = Unhooked(kind, caller)
    return out
