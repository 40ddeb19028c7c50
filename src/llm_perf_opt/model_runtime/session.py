"""The session stage: load what `model=` says (the twin, or the vendor code from a local directory) and
hand the rest of the pipeline one object. `Session` is any family's; a family's subclass names its loaders
({source: loader}), its parts and what its model needs beyond this (e.g. `dsocr.session.DeepSeekOCRSession`).

    with DeepSeekOCRSession.open(cfg.model, cfg.runtime) as session:
        out = session.forward(inputs)                 # no_grad, device/dtype, autocast, CPU measures
        with session.forward_context(), runtime_patches(session, DEFAULT_TRACE_PATCHES) as log:
            torchlens_or_other_tool(session.model, **session.forward_kwargs(inputs))

Opening is: resolve the device, dtype and attention implementation (`attention`), snapshot the process
state (`process_state`), load (the family's twin loader or `vendor.load_vendor`, each a `LoadedModel`),
restore whatever loading changed. Vendor code on CPU needs a few more measures; each is scoped and
reversible, and `close()` (or leaving the `with` block) leaves the process as it found it:

1. `torchvision`: a stand-in only while the vendor code is imported and built (see `vendor`).
2. A forward's hard-coded `.cuda()` (DeepSeek-OCR's `masked_scatter_` mask): the `cuda_to_device` runtime patch
   makes `Tensor.cuda` move to the session's device, only while a session forward runs.
3. `infer()` runs under CUDA bf16 autocast: the `autocast` patch enters `torch.autocast(<device>, bf16)`
   around session forwards when `runtime.autocast` is set.
4. Loading must not leave process-wide state changed: checked and restored after loading and again at
   `close()` (`process_state.ProcessStateGuard`).
"""

from __future__ import annotations

import gc
import time
import warnings
from contextlib import ExitStack, contextmanager, nullcontext
from typing import Any, ContextManager, Iterator, Mapping, Optional

import torch
from torch import nn

from llm_perf_opt.config.schemas import ModelConfig, RuntimeConfig
from llm_perf_opt.errors import ConfigError, PipelineError
from llm_perf_opt.model_runtime import session_patches  # noqa: F401 - registers cuda_to_device and autocast
from llm_perf_opt.model_runtime.attention import resolve_attn_implementation
from llm_perf_opt.model_runtime.decode import DecodeResult, greedy_decode
from llm_perf_opt.model_runtime.loading import LoadedModel
from llm_perf_opt.model_runtime.process_state import ProcessStateGuard, init_disabled

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def resolve_device(runtime: RuntimeConfig) -> torch.device:
    if runtime.device == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError.field(
                "runtime.device",
                "cuda",
                "needs a CUDA GPU, but torch.cuda.is_available() is "
                "false (this torch is " + torch.__version__ + "); use runtime=cpu",
            )
        return torch.device("cuda", torch.cuda.current_device())
    if runtime.device != "cpu":
        raise ConfigError.field("runtime.device", runtime.device, "one of cpu, cuda")
    return torch.device("cpu")


def resolve_dtype(runtime: RuntimeConfig, device: torch.device) -> torch.dtype:
    if runtime.dtype not in DTYPES:
        raise ConfigError.field("runtime.dtype", runtime.dtype, f"one of {', '.join(DTYPES)}")
    if device.type == "cpu" and runtime.dtype == "float16":
        raise ConfigError.field("runtime.dtype", "float16", "is not supported on CPU; use float32 or bfloat16")
    return DTYPES[runtime.dtype]


def parameter_counts(model: nn.Module, part_list: Any = (), separators: tuple[str, ...] = ()) -> dict[str, int]:
    """Parameters per part of a model (vendor or twin), for summary.json.

    Keys: the last component of each part's module path (a family's parts, e.g. v1's embed_tokens, sam_model,
    vision_model, projector, layers, norm, lm_head), the `separators` (tensors of `model.model` counted together,
    e.g. image_newline+view_seperator), other (anything else, normally absent), total. Shared tensors count once.
    """
    seen: set[int] = set()

    def count(params) -> int:
        n = 0
        for p in params:
            if id(p) not in seen:
                seen.add(id(p))
                n += p.numel()
        return n

    counts: dict[str, int] = {}
    for part in part_list:
        try:
            sub = model.get_submodule(part.path)
        except AttributeError:
            continue
        counts[part.path.rpartition(".")[2]] = count(sub.parameters())
    inner = getattr(model, "model", None)
    if inner is not None and separators:
        seps = [getattr(inner, s) for s in separators if isinstance(getattr(inner, s, None), torch.Tensor)]
        if seps:
            counts["+".join(separators)] = count(seps)
    total = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    other = total - sum(counts.values())
    if other:
        counts["other"] = other
    counts["total"] = total
    return counts


class Session:
    """The loaded model (vendor or twin) and how to run it; open with `<family's Session>.open(...)`."""

    # What a family's subclass names (class attributes; `open` may override loaders and parts):
    loaders: Mapping[
        str, Any
    ] = {}  # {source ("twin", "vendor"): loader(model_cfg, device, dtype, attn) -> LoadedModel}
    parts: Any = ()  # the parts parameters are counted by (`family.Part`s)
    separators: tuple[str, ...] = ()  # learned tensors of `model.model` counted as one entry (`parameter_counts`)
    decode_step_inputs: Mapping[str, Any] = {}  # what a decode step passes besides the token and the cache
    vendor_patches: tuple[str, ...] = ()  # patches every vendor forward needs (by the names `patch_names` maps)

    def __init__(
        self,
        loaded: LoadedModel,
        *,
        runtime_cfg: Optional[RuntimeConfig] = None,
        model_cfg: Optional[ModelConfig] = None,
        quiet_vendor_prints: bool = True,
        guard: Optional[ProcessStateGuard] = None,
    ) -> None:
        runtime_cfg = runtime_cfg if runtime_cfg is not None else RuntimeConfig()
        self.model = loaded.model
        self.spec = loaded.spec
        self.source = loaded.source
        self.device = torch.device(loaded.device)
        self.dtype = loaded.dtype
        self.attn_implementation = loaded.attn_implementation
        self.attn_requested = runtime_cfg.attn_implementation
        self.autocast = bool(runtime_cfg.autocast)
        self.vendor_modules = dict(loaded.vendor_modules)
        self.weights = loaded.weights
        self.model_cfg = model_cfg
        self.runtime_cfg = runtime_cfg
        self.measures = list(loaded.measures)
        self.load_seconds = loaded.load_seconds
        self.quiet_vendor_prints = quiet_vendor_prints
        self.closed = False
        self.part_list: Any = self.parts  # the parts parameters are counted by
        self.patch_names: dict[str, str] = {}  # a family's own patch for a required one ({"quiet_prints": ...})
        self._guard = guard or ProcessStateGuard()

    # ------------------------------------------------------------------ construction
    @classmethod
    def open(
        cls,
        model_cfg: ModelConfig,
        runtime_cfg: Optional[RuntimeConfig] = None,
        *,
        quiet_vendor_prints: bool = True,
        loaders: Optional[Mapping[str, Any]] = None,
        part_list: Any = None,
    ) -> "Session":
        """Load the twin or the vendor model as `model_cfg` says, on the device/dtype `runtime_cfg` says.
        `loaders` ({source: loader}) and `part_list` (the parts parameters are counted by): in place of the class's."""
        runtime_cfg = runtime_cfg if runtime_cfg is not None else RuntimeConfig()
        loaders = loaders or cls.loaders
        if model_cfg.source not in loaders:
            raise ConfigError.field("model.source", model_cfg.source, "one of twin, vendor")
        device = resolve_device(runtime_cfg)
        dtype = resolve_dtype(runtime_cfg, device)
        attn, notes = resolve_attn_implementation(runtime_cfg.attn_implementation, device)
        disabled = init_disabled()
        if disabled:
            warnings.warn(
                f"weight initialisation is already disabled in this process ({', '.join(disabled)}; "
                "the vendor's infer() does that); the session keeps that state",
                RuntimeWarning,
                stacklevel=2,
            )
        start = time.perf_counter()
        guard = ProcessStateGuard(threads=runtime_cfg.threads)
        try:
            loaded = loaders[model_cfg.source](model_cfg, device, dtype, attn)
        except BaseException:
            guard.close()
            raise
        leftovers = guard.restore()
        if leftovers:
            warnings.warn(f"loading the model changed {', '.join(leftovers)}; restored", RuntimeWarning, stacklevel=2)
        for note in notes + loaded.warnings:
            warnings.warn(note, RuntimeWarning, stacklevel=2)
        loaded.measures[:0] = notes
        loaded.load_seconds = time.perf_counter() - start
        session = cls(
            loaded, runtime_cfg=runtime_cfg, model_cfg=model_cfg, quiet_vendor_prints=quiet_vendor_prints, guard=guard
        )
        if part_list is not None:
            session.part_list = part_list
        if session.device.type != "cuda" and session.source == "vendor":
            session.measures.append(
                "Tensor.cuda() -> Tensor.to(cpu) while a session forward runs (patch cuda_to_device)"
            )
        if session.autocast:
            session.measures.append(
                f"torch.autocast({session.device.type!r}, {session.autocast_dtype}) around "
                "session forwards (patch autocast)"
            )
        return session

    # ------------------------------------------------------------------ lifetime
    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> list[str]:
        """Undo every process-wide measure: returns what had to be restored (normally nothing)."""
        if self.closed:
            return []
        self.closed = True
        restored = self._guard.close()
        if restored:
            warnings.warn(
                f"session close restored {', '.join(restored)} (changed while the session was open)",
                RuntimeWarning,
                stacklevel=2,
            )
        return restored

    def release(self) -> None:
        """Close and drop the model (frees its memory once no other reference holds it)."""
        self.close()
        self.model = None  # type: ignore[assignment]
        gc.collect()

    def _check_open(self) -> None:
        if self.closed or self.model is None:
            raise PipelineError(f"the {type(self).__name__} is closed")

    # ------------------------------------------------------------------ running
    @property
    def autocast_dtype(self) -> torch.dtype:
        return torch.float16 if self.dtype == torch.float16 else torch.bfloat16

    def autocast_context(self) -> ContextManager[Any]:
        """`torch.autocast(device, bf16)` when the runtime asks for autocast, else a no-op context."""
        if not self.autocast:
            return nullcontext()
        return torch.autocast(device_type=self.device.type, dtype=self.autocast_dtype)

    @property
    def required_patches(self) -> tuple[str, ...]:
        """The runtime patches every forward of this session needs (`session_patches`, and the family's
        `vendor_patches` when `quiet_vendor_prints`)."""
        names = []
        if self.source == "vendor":
            if self.device.type != "cuda":
                names.append("cuda_to_device")
            if self.quiet_vendor_prints:
                names.extend(self.vendor_patches)
        if self.autocast:
            names.append("autocast")
        return tuple(self.patch_names.get(n, n) for n in names)

    @contextmanager
    def forward_context(self) -> Iterator[None]:
        """no_grad + the session's run-time patches (CPU `.cuda()`, autocast), restored on exit."""
        self._check_open()
        from llm_perf_opt.model_runtime.patches import runtime_patches

        with ExitStack() as stack:
            stack.enter_context(torch.no_grad())
            stack.enter_context(runtime_patches(self, self.required_patches))
            yield

    def forward_kwargs(self, inputs: Any, **overrides: Any) -> dict[str, Any]:
        """`model(**kwargs)` arguments for an `Inputs` (moved to the device, floats cast to the dtype)."""
        if isinstance(inputs, Mapping):
            kwargs = dict(inputs)
        else:
            kwargs = inputs.forward_kwargs(self.device, self.dtype)
        kwargs.update(overrides)
        return kwargs

    def forward(self, inputs: Any, **overrides: Any) -> Any:
        """One forward of the model on `inputs` (an `Inputs` or ready kwargs) under `forward_context()`."""
        kwargs = self.forward_kwargs(inputs, **overrides)
        with self.forward_context():
            return self.model(**kwargs)

    def greedy_decode(self, inputs: Any, steps: int) -> DecodeResult:
        """A prefill with a KV cache, then `steps` one-token decode steps fed with the greedy token."""
        if steps < 0:
            raise ConfigError.field("decode steps", steps, "must be >= 0")
        kwargs = self.forward_kwargs(inputs, use_cache=True)
        with self.forward_context():
            prefill = self.model(**kwargs)
            return greedy_decode(
                lambda _step, step_kwargs: self.model(**step_kwargs), prefill, steps, self.decode_step_inputs
            )

    # ------------------------------------------------------------------ reporting
    def parameter_counts(self) -> dict[str, int]:
        self._check_open()
        return parameter_counts(self.model, self.part_list, self.separators)

    def describe(self) -> dict[str, Any]:
        """What summary.json reports about the session."""
        return {
            "source": self.source,
            "spec": self.spec.name,
            "path": str(self.model_cfg.path) if self.model_cfg is not None and self.model_cfg.path else None,
            "weights": self.weights,
            "seed": self.model_cfg.seed if self.model_cfg is not None else None,
            "device": str(self.device),
            # a CUDA GPU's name and compute capability: what a recording of this run is replayed with (the SDPA
            # backend depends on it: `analytic.execution`)
            **(
                {
                    "device_name": torch.cuda.get_device_name(self.device),
                    "cuda_capability": list(torch.cuda.get_device_capability(self.device)),
                }
                if self.device.type == "cuda"
                else {}
            ),
            "dtype": str(self.dtype).replace("torch.", ""),
            "attn_implementation": self.attn_implementation,
            "attn_requested": self.attn_requested,
            "autocast": self.autocast,
            "autocast_dtype": str(self.autocast_dtype).replace("torch.", "") if self.autocast else None,
            "parameters": parameter_counts(self.model, self.part_list, self.separators)
            if self.model is not None
            else {},
            "load_seconds": round(self.load_seconds, 3) if self.load_seconds is not None else None,
            "measures": list(self.measures),
            "required_patches": list(self.required_patches),
            "vendor_modules": {k: getattr(m, "__file__", None) for k, m in sorted(self.vendor_modules.items())},
        }

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(source={self.source}, spec={self.spec.name}, device={self.device}, "
            f"dtype={self.dtype}, attn={self.attn_implementation}, autocast={self.autocast}, "
            f"weights={self.weights}{', closed' if self.closed else ''})"
        )
