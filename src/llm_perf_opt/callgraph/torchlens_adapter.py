"""The one door to TorchLens: its trace call, the private pieces the capture relies on, and the reading
of the text it prints. Nothing else in the project imports `torchlens`.

What lies behind this door, and why:

* `trace_forward` runs `torchlens.trace` with nothing saved, collects its warnings, hands its progress
  lines to a callback (dropping the quick post-processing steps), and restores every torch function
  TorchLens wrapped on every path, a failed forward included (TorchLens leaves ~1,800 torch functions
  wrapped when the forward raises, although `unwrap_when_done=True`).
* `pause_logging` is TorchLens' private `_state.pause_logging`: hooks and patch wrappers that read
  tensors inside a capture use it so their reads are not recorded as ops of the model.
* `torch_is_wrapped` / `unwrap_torch`: TorchLens' private `_state._is_decorated` flag and
  `backends.torch.wrappers.unwrap_torch` (TorchLens 2.36 moved it from the top level).
* `parse_call_summary` reads TorchLens' display strings of a module call's arguments
  (`ModuleCall.forward_args_summary`); `LineSink` filters its stdout.

All of these were checked with the versions in `CHECKED_VERSIONS` (pyproject pins `>=2.36,<2.37`). Any
other version is refused with one TraceError saying so, and a private name that has moved is a
TraceError naming it, never a silent fallback that would count hook reads as model ops.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import time
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, ContextManager, Iterable, Mapping

from llm_perf_opt.errors import PipelineError, TraceError

CHECKED_VERSIONS = ("2.36",)  # major.minor series this adapter was checked with
TL_ROOT = "self"  # TorchLens' address of the root module
Progress = Callable[[str], None]


# --------------------------------------------------------------------------- version gate
def torchlens_version() -> str | None:
    """The installed TorchLens version, or None when it is not installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("torchlens")
    except PackageNotFoundError:
        return None


@lru_cache(maxsize=1)
def check_version() -> str:
    """The installed version when it is one this adapter was checked with; TraceError otherwise."""
    found = torchlens_version()
    checked = ", ".join(f"{v}.x" for v in CHECKED_VERSIONS)
    if found is None:
        raise TraceError(f"TorchLens is not installed; the capture needs torchlens {checked}")
    if not any(found == v or found.startswith(v + ".") for v in CHECKED_VERSIONS):
        raise TraceError(
            f"TorchLens {found} is installed, but the capture's adapter "
            f"(llm_perf_opt.callgraph.torchlens_adapter) was checked with {checked} only: it uses "
            "TorchLens' private state and display strings; install a checked version "
            "(pyproject pins torchlens>=2.36,<2.37) or re-check the adapter"
        )
    return found


def _private(module: str, name: str) -> Any:
    """`module.name` from TorchLens, or a TraceError naming what moved."""
    check_version()
    import importlib

    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        raise TraceError(
            f"TorchLens {torchlens_version()}: {module}.{name} is gone; the capture's adapter "
            "(llm_perf_opt.callgraph.torchlens_adapter) must be updated"
        ) from None


# --------------------------------------------------------------------------- private state
@lru_cache(maxsize=1)
def _pause_factory() -> Callable[[], ContextManager[Any]]:
    return _private("torchlens._state", "pause_logging")


def pause_logging() -> ContextManager[Any]:
    """A context in which a running TorchLens capture records no torch call (reads by hooks)."""
    return _pause_factory()()


def paused_if_loaded() -> ContextManager[Any]:
    """`pause_logging()` when TorchLens is imported (a capture may be running), else a null context;
    for code that runs inside forwards with or without a capture around them."""
    if "torchlens" not in sys.modules:
        return contextlib.nullcontext()
    return pause_logging()


def torch_is_wrapped() -> bool:
    """Whether TorchLens' wrappers are installed on torch's functions now."""
    if "torchlens" not in sys.modules:
        return False
    state = _private("torchlens", "_state")
    if not hasattr(state, "_is_decorated"):
        raise TraceError(
            f"TorchLens {torchlens_version()}: torchlens._state._is_decorated is gone; the "
            "capture's adapter (llm_perf_opt.callgraph.torchlens_adapter) must be updated"
        )
    return bool(state._is_decorated)


def unwrap_torch() -> None:
    """Put every torch function TorchLens wrapped back to the original (no-op when none is)."""
    if torch_is_wrapped():
        _private("torchlens.backends.torch.wrappers", "unwrap_torch")()


# --------------------------------------------------------------------------- display strings
_QUICK_STEP = re.compile(r"Step [\d.]+: .*done \((\d+(?:\.\d+)?)s\)")  # "[torchlens] Step 12: ... done (0.01s)"
_SUMMARY_TOKEN = re.compile(
    r"Tensor\(shape=\((?P<shape>[^)]*)\), dtype=(?P<dtype>[\w.]+)\)"
    r"|'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\""  # string literals (may hold commas or brackets)
    r"|(?P<open>[\[{])|(?P<close>[\]}])|(?P<sep>,)"
    r"|(?P<key>[^\s,:\[\]{}'\"]+): "
)


def parse_call_summary(text: str | None) -> list[tuple[str, tuple[int, ...], str]]:
    """(path, shape, dtype) of every tensor in a TorchLens call-argument summary string.

    The format is TorchLens' `format_call_arg`: `[a, b]` for lists and tuples, `{k: v}` for dicts,
    `Tensor(shape=(2, 8), dtype=float32)` for tensors, reprs for scalars. Paths are the indices and
    keys below the top-level container, dot-joined (`0`, `1.0`, `mask`); dtypes lose a `torch.` prefix.
    """
    if not text:
        return []
    stack: list[list[Any]] = []  # [is_dict, index, key, path]
    found: list[tuple[str, tuple[int, ...], str]] = []

    def here() -> str:
        if not stack:
            return ""
        is_dict, index, key, path = stack[-1]
        part = str(key) if is_dict else str(index)
        return f"{path}.{part}" if path else part

    for m in _SUMMARY_TOKEN.finditer(text):
        if m.group("shape") is not None:
            shape = tuple(int(s) for s in m.group("shape").split(",") if s.strip())
            found.append((here(), shape, m.group("dtype").removeprefix("torch.")))
        elif m.group("open"):
            stack.append([m.group("open") == "{", 0, None, here() if stack else ""])
        elif m.group("close"):
            if stack:
                stack.pop()
        elif m.group("sep"):
            if stack:
                stack[-1][1] += 1
        elif m.group("key") is not None:
            if stack:
                stack[-1][2] = m.group("key")
    return found


class LineSink(io.TextIOBase):
    """A text stream that hands every completed line of TorchLens' verbose prints to `emit`.

    Quick post-processing steps (under a second) are dropped: TorchLens reports ~20 of them and only
    the slow ones are news. `emit` runs with the original stdout restored, so a `progress=print` does
    not loop back here.
    """

    def __init__(self, emit: Progress) -> None:
        self.emit = emit
        self.buffer = ""
        self.original = sys.stdout

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.buffer += text
        while "\n" in self.buffer:
            line, self.buffer = self.buffer.split("\n", 1)
            self._emit(line)
        return len(text)

    def _emit(self, line: str) -> None:
        if not line.strip():
            return
        quick_step = _QUICK_STEP.search(line)
        if quick_step and float(quick_step.group(1)) < 1.0:
            return
        current = sys.stdout
        sys.stdout = self.original
        try:
            self.emit(line.strip())
        finally:
            sys.stdout = current

    def flush(self) -> None:
        pass

    def close_out(self) -> None:
        self._emit(self.buffer)
        self.buffer = ""


# --------------------------------------------------------------------------- the trace call
@dataclass
class TorchLensRun:
    trace: Any
    output: Any
    seconds: float
    warnings: list[str] = field(default_factory=list)
    # TorchLens' ScalarEscapeWarning as data: tensor values read into Python (`.item()`, `.tolist()`, `bool()`)
    # during the forward. These are host syncs of the model itself (the vendor's image checks and MoE
    # routing do them; the twin mirrors them on purpose), not a fault of the capture: {count, location}.
    scalar_escapes: list[dict[str, Any]] = field(default_factory=list)


def _identity(output: Any) -> Any:
    return output


def _capture_options(progress: Progress | None, rescue: bool) -> dict[str, Any]:
    options: dict[str, Any] = dict(
        layers_to_save=None,  # metadata only (`save=None` would still save every activation)
        save_raw_input=False,
        save_raw_output=False,
        recurrence_detection=False,  # loop grouping of layers: not used here
        compute_input_output_distances=False,
        unwrap_when_done=True,
        verbose=progress is not None,
    )
    if not rescue:
        # An identity output transform declines TorchLens' "rescue" re-run of the whole forward (it
        # recovers nothing on these models and makes the capture 2-4x slower) and hands back the output.
        options["output_transform"] = _identity
    return options


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:500] if text else ""


def _is_scalar_escape(w: warnings.WarningMessage) -> bool:
    return w.category.__name__ == "ScalarEscapeWarning"


def _scalar_escapes(caught: Iterable[warnings.WarningMessage]) -> list[dict[str, Any]]:
    """Each ScalarEscapeWarning as {count, location}: TorchLens' warning carries `file_path`, `line_no` and
    the count in its `fields`."""
    out = []
    for w in caught:
        if _is_scalar_escape(w):
            path, line = getattr(w.message, "file_path", None), getattr(w.message, "line_no", None)
            out.append(
                {
                    "count": (getattr(w.message, "fields", None) or {}).get("count"),
                    "location": f"{path}:{line}" if path else None,
                }
            )
    return out


def _unique_warnings(caught: Iterable[warnings.WarningMessage]) -> list[str]:
    seen: list[str] = []
    for w in caught:
        if _is_scalar_escape(w):
            continue  # data, not a warning: `TorchLensRun.scalar_escapes`
        text = f"{w.category.__name__}: {str(w.message).strip()}"[:400]
        if text not in seen:
            seen.append(text)
    return seen


def trace_forward(
    model: Any,
    forward_args: Iterable[Any] = (),
    forward_kwargs: Mapping[str, Any] | None = None,
    *,
    progress: Progress | None = None,
    rescue: bool = False,
) -> TorchLensRun:
    """One `torchlens.trace` of `model(*forward_args, **forward_kwargs)` saving no activations.

    TorchLens' progress lines go to `progress` (prefixed "torchlens:"); its warnings are collected
    (deduplicated) instead of printed. Torch is unwrapped afterwards on every path, so later stages time
    a clean torch and a failed capture leaves nothing behind. Raises TraceError when TorchLens refuses
    or the forward fails.
    """
    check_version()
    import torchlens
    from torchlens.options import CaptureOptions

    sink = None
    if progress is not None:
        sink = LineSink(lambda line: progress(f"torchlens: {line.removeprefix('[torchlens]').strip()}"))
    redirect = contextlib.redirect_stdout(sink) if sink is not None else contextlib.nullcontext()
    options = CaptureOptions(**_capture_options(progress, rescue))
    start = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught, redirect:
            warnings.simplefilter("always")
            trace = torchlens.trace(model, list(forward_args), dict(forward_kwargs or {}), capture=options)
    except PipelineError:
        raise
    except Exception as exc:  # noqa: BLE001 - every TorchLens refusal becomes one TraceError
        raise TraceError(f"TorchLens could not capture the forward: {type(exc).__name__}: {_first_line(exc)}") from exc
    finally:
        if sink is not None:
            sink.close_out()
        unwrap_torch()
    seconds = time.perf_counter() - start
    seen = _unique_warnings(caught)
    escapes = _scalar_escapes(caught)
    if progress:
        for text in seen:
            progress(f"trace: warning during capture: {text}")
        for e in escapes:
            progress(
                f"trace: {e['count']} tensor value(s) read into Python during the forward (host syncs such as "
                f".item(); first at {e['location']}): recorded as `scalar_escapes`; the branch they decide is "
                "not part of the graph"
            )
    output = getattr(trace, "raw_output", None) if not rescue else None
    return TorchLensRun(trace=trace, output=output, seconds=seconds, warnings=seen, scalar_escapes=escapes)


# --------------------------------------------------------------------------- facts for the record
def trace_facts(trace: Any, run: TorchLensRun) -> dict[str, Any]:
    """What TorchLens says about its own capture (version, counts, verification, timings, warnings)."""

    def get(attr: str) -> Any:
        try:
            return getattr(trace, attr)
        except Exception:  # noqa: BLE001 - informational only
            return None

    def seconds(attr: str) -> float | None:
        value = get(attr)
        try:
            return round(float(value), 3) if value is not None else None
        except (TypeError, ValueError):
            return None

    rescue = get("rescue_rerun") or {}
    return {
        "version": torchlens_version(),
        "num_ops": get("num_ops"),
        "num_module_calls": get("num_module_calls"),
        "capture_verified": get("capture_verified"),
        "verification_reason": get("capture_verification_reason"),
        "forward_runs": rescue.get("forward_runs", 1) if isinstance(rescue, dict) else None,
        "setup_seconds": seconds("setup_duration"),
        "forward_seconds": seconds("forward_duration"),
        "capture_seconds": seconds("capture_duration"),
        "warnings": run.warnings,
        "scalar_escapes": run.scalar_escapes,
    }


def total_flops_forward(trace: Any) -> int | None:
    """TorchLens' own FLOPs total of the forward (informational), or None when it has none."""
    try:
        return int(trace.total_flops_forward)
    except Exception:  # noqa: BLE001 - informational only
        return None


def address(tl_address: str | None, root: str = "") -> str:
    """A TorchLens module address as `named_modules()` spells it (TorchLens calls the root "self")."""
    return root if tl_address in (None, TL_ROOT) else tl_address
