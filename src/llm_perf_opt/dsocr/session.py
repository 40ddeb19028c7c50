"""The session stage: load what `model=` says (the twin, or the vendor code from a local directory) and
hand the rest of the pipeline one object.

    with DeepSeekOCRSession.open(cfg.model, cfg.runtime) as session:
        out = session.forward(inputs)                 # no_grad, device/dtype, autocast, CPU measures
        with session.forward_context(), runtime_patches(session, DEFAULT_TRACE_PATCHES) as log:
            torchlens_or_other_tool(session.model, **session.forward_kwargs(inputs))

Vendor code on CPU needs a few measures; each is scoped and reversible, and `close()` (or leaving the
`with` block) leaves the process as it found it:

1. `torchvision` (imported by the vendor for `infer()`'s transforms; PyPI's wheels are CUDA builds that
   fail next to a CPU torch): a minimal stand-in is in `sys.modules` only while the vendor code is
   imported and the model built (`patches.torchvision_stand_in`).
2. The forward's hard-coded `.cuda()` (the `masked_scatter_` mask): the `cuda_to_device` runtime patch
   makes `Tensor.cuda` move to the session's device, only while a session forward runs.
3. `infer()` runs under CUDA bf16 autocast: the `autocast` patch enters `torch.autocast(<device>, bf16)`
   around session forwards when `runtime.autocast` is set.
4. Loading must not leave process-wide state changed: `nn.Linear.reset_parameters` and friends (the
   vendor's `disable_torch_init()` replaces them for the rest of the process), `torch.nn.init.*`,
   `Tensor.cuda`, the default dtype, the global RNG; they are snapshotted at `open()` and checked and
   restored after loading and again at `close()`.

Random weights at full size: Linear and Embedding weights (99.6 % of the 3.3 B parameters) are built
on the meta device and filled once with N(0, initializer_range), the distribution the vendor's
`_init_weights` gives them; every other parameter and buffer comes from the vendor's own constructors
under a seeded, forked RNG. That takes seconds instead of minutes (the vendor's default path
initialises every Linear twice).
"""
from __future__ import annotations

import gc
import importlib
import importlib.util
import json
import sys
import time
import warnings
import zlib
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any, ContextManager, Iterator, Mapping, Optional

import torch
from torch import nn

from llm_perf_opt.config.schemas import ModelConfig, RuntimeConfig
from llm_perf_opt.dsocr.spec import ModelSpec
from llm_perf_opt.errors import ConfigError, PatchError, PipelineError

SUPPORTED_TRANSFORMERS = "4.46"
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}

# What the pipeline relies on in the vendor code, by module: the classes the twin mirrors and the patch
# points. A missing name means the vendor code changed; the session refuses it with a PatchError.
REQUIRED_VENDOR_NAMES: dict[str, tuple[str, ...]] = {
    "modeling_deepseekocr": ("DeepseekOCRForCausalLM", "DeepseekOCRModel", "DeepseekOCRConfig",
                             "DeepseekOCRModel.forward"),
    "modeling_deepseekv2": ("DeepseekV2Model", "DeepseekV2Model.forward", "DeepseekV2DecoderLayer",
                            "DeepseekV2MoE", "MoEGate", "DeepseekV2MLP", "DeepseekV2RMSNorm"),
    "deepencoder": ("ImageEncoderViT", "VitModel", "MlpProjector", "quick_gelu", "Block",
                    "NoTPTransformerBlock"),
}

# top-level parts of DeepseekOCRForCausalLM for parameter_counts(), in the order the summary lists them
MODEL_PARTS = ("sam_model", "vision_model", "projector", "embed_tokens", "layers", "norm")
SEPARATORS = ("image_newline", "view_seperator")


# ---------------------------------------------------------------------------------------------- process state
_INIT_FUNCTIONS = ("uniform_", "normal_", "trunc_normal_", "constant_", "ones_", "zeros_", "eye_", "dirac_",
                   "xavier_uniform_", "xavier_normal_", "kaiming_uniform_", "kaiming_normal_", "orthogonal_",
                   "sparse_")
_MISSING = object()


def _guarded_attributes() -> list[tuple[Any, str, str]]:
    attrs: list[tuple[Any, str, str]] = []
    for cls in (nn.Linear, nn.LayerNorm, nn.Conv2d, nn.Embedding):
        attrs.append((cls, "reset_parameters", f"torch.nn.{cls.__name__}.reset_parameters"))
    attrs.append((torch.Tensor, "cuda", "torch.Tensor.cuda"))
    attrs.append((nn.Module, "register_parameter", "torch.nn.Module.register_parameter"))
    for name in _INIT_FUNCTIONS:
        if hasattr(torch.nn.init, name):
            attrs.append((torch.nn.init, name, f"torch.nn.init.{name}"))
    return attrs


class ProcessStateGuard:
    """Snapshot of process-wide attributes the vendor code or loading may replace; `restore()` puts back
    whatever changed and returns the names it restored."""

    def __init__(self) -> None:
        self._attrs = [(owner, attr, label, vars(owner).get(attr, _MISSING))
                       for owner, attr, label in _guarded_attributes()]
        self._default_dtype = torch.get_default_dtype()

    @staticmethod
    def _same(owner: Any, attr: str, raw: Any) -> bool:
        """Unchanged, or only toggled between "inherited" and "set to the inherited object" (TorchLens'
        unwrap leaves `Tensor.cuda` set to `TensorBase.cuda`): both resolve to the same callable."""
        current = vars(owner).get(attr, _MISSING)
        if current is raw:
            return True
        if isinstance(owner, type) and (raw is _MISSING or current is _MISSING):
            inherited = next((vars(base)[attr] for base in owner.__mro__[1:] if attr in vars(base)), _MISSING)
            return (current if raw is _MISSING else raw) is inherited
        return False

    def changed(self) -> list[str]:
        out = [label for owner, attr, label, raw in self._attrs if not self._same(owner, attr, raw)]
        if torch.get_default_dtype() != self._default_dtype:
            out.append("torch default dtype")
        return out

    def restore(self) -> list[str]:
        restored = []
        for owner, attr, label, raw in self._attrs:
            if self._same(owner, attr, raw):
                continue
            if raw is _MISSING:
                delattr(owner, attr)
            else:
                setattr(owner, attr, raw)
            restored.append(label)
        if torch.get_default_dtype() != self._default_dtype:
            torch.set_default_dtype(self._default_dtype)
            restored.append("torch default dtype")
        return restored


def init_disabled() -> list[str]:
    """Names of `reset_parameters` methods replaced by a lambda (what the vendor's `disable_torch_init` does)."""
    return [f"torch.nn.{cls.__name__}.reset_parameters" for cls in (nn.Linear, nn.LayerNorm)
            if getattr(cls.reset_parameters, "__name__", "") == "<lambda>"]


# ---------------------------------------------------------------------------------------------- helpers
def flash_attn_importable() -> bool:
    if importlib.util.find_spec("flash_attn") is None:
        return False
    try:
        importlib.import_module("flash_attn")
    except Exception:  # broken CUDA builds raise anything at import
        return False
    return True


def resolve_device(runtime: RuntimeConfig) -> torch.device:
    if runtime.device == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError.field("runtime.device", "cuda", "needs a CUDA GPU, but torch.cuda.is_available() is "
                                    "false (this torch is " + torch.__version__ + "); use runtime=cpu")
        return torch.device("cuda", torch.cuda.current_device())
    if runtime.device != "cpu":
        raise ConfigError.field("runtime.device", runtime.device, "one of cpu, cuda")
    return torch.device("cpu")


def resolve_attn_implementation(requested: str, device: torch.device) -> tuple[str, list[str]]:
    """The attention implementation to build with, and the fallbacks taken (as messages)."""
    notes: list[str] = []
    if requested not in ("eager", "sdpa", "flash_attention_2"):
        raise ConfigError.field("runtime.attn_implementation", requested, "one of eager, sdpa, flash_attention_2")
    if requested == "flash_attention_2":
        if device.type != "cuda":
            raise ConfigError.field("runtime.attn_implementation", requested,
                                    "flash_attention_2 needs runtime=cuda; use eager or sdpa on CPU")
        if not flash_attn_importable():
            notes.append("flash_attention_2 requested but flash_attn does not import: falling back to sdpa")
            return "sdpa", notes
    return requested, notes


def _check_transformers() -> str:
    import transformers

    version = getattr(transformers, "__version__", "unknown")
    if not (version == SUPPORTED_TRANSFORMERS or version.startswith(SUPPORTED_TRANSFORMERS + ".")):
        raise ConfigError(f"the vendor DeepSeek-OCR code needs transformers {SUPPORTED_TRANSFORMERS}.x, found "
                          f"{version} (5.x cannot import it: LlamaFlashAttention2, is_torch_fx_available); "
                          f"install transformers=={SUPPORTED_TRANSFORMERS}.3 or use model=twin")
    return version


def read_vendor_config(path: Path) -> dict[str, Any]:
    """Validate a vendor model directory and return its parsed config.json (ConfigError on any problem)."""
    if not path.exists():
        raise ConfigError.field("model.path", str(path), "does not exist (expected the vendor model directory)")
    if not path.is_dir():
        raise ConfigError.field("model.path", str(path), "is not a directory (expected the vendor model directory)")
    cfg_file = path / "config.json"
    if not cfg_file.is_file():
        raise ConfigError.field("model.path", str(path), "has no config.json (expected the vendor model directory)")
    try:
        raw = json.loads(cfg_file.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"{cfg_file}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{cfg_file}: not UTF-8 text ({exc.reason})") from None
    if not isinstance(raw, dict):
        raise ConfigError(f"{cfg_file}: expected a JSON object at top level")
    auto_map = raw.get("auto_map")
    if not isinstance(auto_map, dict) or "AutoConfig" not in auto_map or "AutoModel" not in auto_map:
        raise ConfigError(f"{cfg_file}: no auto_map with AutoConfig and AutoModel entries: not the DeepSeek-OCR "
                          "vendor directory (its config.json maps them to modeling_deepseekocr)")
    for key in ("AutoConfig", "AutoModel"):
        module_name = str(auto_map[key]).split("--")[-1].rpartition(".")[0]
        if not (path / f"{module_name}.py").is_file():
            raise ConfigError(f"{cfg_file}: auto_map.{key} names {auto_map[key]!r}, but {path / (module_name + '.py')} "
                              "does not exist (the vendor .py files must sit beside config.json)")
    return raw


def _lookup(module: ModuleType, qualname: str) -> bool:
    obj: Any = module
    for part in qualname.split("."):
        obj = getattr(obj, part, _MISSING)
        if obj is _MISSING:
            return False
    return True


def check_vendor_modules(modules: Mapping[str, ModuleType], where: str) -> None:
    """PatchError naming every class/function the pipeline needs that the vendor code no longer has."""
    problems = []
    for key, names in REQUIRED_VENDOR_NAMES.items():
        module = modules.get(key)
        if module is None:
            problems.append(f"module {key}.py was not loaded (needs {', '.join(names)})")
            continue
        missing = [n for n in names if not _lookup(module, n)]
        if missing:
            problems.append(f"{key} has no {', '.join(missing)}")
    if problems:
        raise PatchError(f"vendor code at {where} is not the DeepSeek-OCR code this pipeline knows: "
                         + "; ".join(problems) + " (the vendor code changed?)")


def vendor_package_modules(package: str) -> dict[str, ModuleType]:
    prefix = package + "."
    return {name[len(prefix):]: mod for name, mod in list(sys.modules.items())
            if name.startswith(prefix) and "." not in name[len(prefix):] and isinstance(mod, ModuleType)}


@contextmanager
def linear_weights_on_meta() -> Iterator[None]:
    """While building, the `weight` of every nn.Linear / nn.Embedding goes to the meta device (no memory, no
    init cost); everything else (biases, norms, convs, buffers, learned vectors) is built for real."""
    original = nn.Module.register_parameter

    def register_parameter(self, name, param):
        if (param is not None and name == "weight" and isinstance(self, (nn.Linear, nn.Embedding))
                and param.device.type != "meta"):
            param = nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
        return original(self, name, param)

    nn.Module.register_parameter = register_parameter
    try:
        yield
    finally:
        nn.Module.register_parameter = original


def _param_seed(seed: int, name: str) -> int:
    return ((seed & 0xFFFFFFFF) << 31 ^ zlib.crc32(name.encode("utf-8"))) & 0x7FFF_FFFF_FFFF_FFFF


@torch.no_grad()
def materialise_meta_parameters(model: nn.Module, device: torch.device, seed: int, std: float,
                                threads: Optional[int] = None) -> int:
    """Allocate every meta parameter on `device` and fill it with N(0, std) (Embedding padding rows 0).

    Each tensor has its own generator seeded from (seed, parameter name), so the values do not depend on
    the fill order and the fill can spread over threads. Returns the number of elements filled.
    """
    jobs: list[tuple[str, nn.Module, str, nn.Parameter]] = []
    seen: dict[int, tuple[nn.Module, str]] = {}
    aliases: list[tuple[nn.Module, str, nn.Module, str]] = []
    for mod_name, module in model.named_modules(remove_duplicate=False):
        for p_name, p in list(module._parameters.items()):
            if p is None or p.device.type != "meta":
                continue
            if id(p) in seen:
                aliases.append((module, p_name, *seen[id(p)]))
                continue
            seen[id(p)] = (module, p_name)
            jobs.append((f"{mod_name}.{p_name}" if mod_name else p_name, module, p_name, p))

    def fill(job) -> int:
        full, module, p_name, p = job
        t = torch.empty(p.shape, dtype=p.dtype, device=device)
        gen = torch.Generator(device=device)
        gen.manual_seed(_param_seed(seed, full))
        t.normal_(0.0, std, generator=gen)
        padding_idx = getattr(module, "padding_idx", None)
        if isinstance(module, nn.Embedding) and padding_idx is not None:
            t[padding_idx].zero_()
        module._parameters[p_name] = nn.Parameter(t, requires_grad=p.requires_grad)
        return t.numel()

    workers = threads or max(1, min(4, torch.get_num_threads()))
    jobs.sort(key=lambda j: -j[3].numel())  # big tensors first keeps the workers busy
    if workers > 1 and len(jobs) > 1:
        with ThreadPoolExecutor(workers) as pool:
            filled = sum(pool.map(fill, jobs))
    else:
        filled = sum(fill(j) for j in jobs)
    for module, p_name, src_module, src_name in aliases:
        module._parameters[p_name] = src_module._parameters[src_name]
    return filled


def parameter_counts(model: nn.Module) -> dict[str, int]:
    """Parameters per top-level part of a DeepseekOCRForCausalLM (vendor or twin), for summary.json.

    Keys: sam_model, vision_model, projector, embed_tokens, layers, norm, lm_head,
    image_newline+view_seperator, other (anything else, normally absent), total. Shared tensors count once.
    """
    inner = getattr(model, "model", None)
    seen: set[int] = set()

    def count(params) -> int:
        n = 0
        for p in params:
            if id(p) not in seen:
                seen.add(id(p))
                n += p.numel()
        return n

    counts: dict[str, int] = {}
    if inner is not None:
        for part in MODEL_PARTS:
            sub = getattr(inner, part, None)
            if isinstance(sub, nn.Module):
                counts[part] = count(sub.parameters())
    head = getattr(model, "lm_head", None)
    if isinstance(head, nn.Module):
        counts["lm_head"] = count(head.parameters())
    if inner is not None:
        seps = [getattr(inner, s) for s in SEPARATORS if isinstance(getattr(inner, s, None), torch.Tensor)]
        if seps:
            counts["+".join(SEPARATORS)] = count(seps)
    total = sum(p.numel() for p in {id(p): p for p in model.parameters()}.values())
    other = total - sum(counts.values())
    if other:
        counts["other"] = other
    counts["total"] = total
    return counts


# ---------------------------------------------------------------------------------------------- session
@dataclass
class DecodeResult:
    """A prefill with a KV cache followed by greedy decode steps (`DeepSeekOCRSession.greedy_decode`)."""

    prefill: Any  # the prefill output (logits over the prompt, past_key_values)
    tokens: list[int]  # the greedy token after the prefill and after each decode step
    last: Any  # the output of the last call


class DeepSeekOCRSession:
    """The loaded model (vendor or twin) and how to run it; open with `DeepSeekOCRSession.open(...)`."""

    def __init__(
        self,
        *,
        model: nn.Module,
        spec: ModelSpec,
        device: torch.device,
        dtype: torch.dtype,
        source: str,
        attn_implementation: str,
        autocast: bool,
        vendor_modules: Optional[dict[str, ModuleType]] = None,
        weights: str = "random",
        model_cfg: Optional[ModelConfig] = None,
        runtime_cfg: Optional[RuntimeConfig] = None,
        attn_requested: Optional[str] = None,
        measures: Optional[list[str]] = None,
        load_seconds: Optional[float] = None,
        quiet_vendor_prints: bool = True,
        _guard: Optional[ProcessStateGuard] = None,
        _threads_before: Optional[int] = None,
    ) -> None:
        self.model = model
        self.spec = spec
        self.device = torch.device(device)
        self.dtype = dtype
        self.source = source
        self.attn_implementation = attn_implementation
        self.attn_requested = attn_requested or attn_implementation
        self.autocast = bool(autocast)
        self.vendor_modules = dict(vendor_modules or {})
        self.weights = weights
        self.model_cfg = model_cfg
        self.runtime_cfg = runtime_cfg
        self.measures = list(measures or [])
        self.load_seconds = load_seconds
        self.quiet_vendor_prints = quiet_vendor_prints
        self.closed = False
        self._guard = _guard or ProcessStateGuard()
        self._threads_before = _threads_before

    # ------------------------------------------------------------------ construction
    @classmethod
    def open(cls, model_cfg: ModelConfig, runtime_cfg: Optional[RuntimeConfig] = None, *,
             quiet_vendor_prints: bool = True) -> "DeepSeekOCRSession":
        """Load the twin or the vendor model as `model_cfg` says, on the device/dtype `runtime_cfg` says."""
        runtime_cfg = runtime_cfg if runtime_cfg is not None else RuntimeConfig()
        if model_cfg.source not in ("twin", "vendor"):
            raise ConfigError.field("model.source", model_cfg.source, "one of twin, vendor")
        if runtime_cfg.dtype not in DTYPES:
            raise ConfigError.field("runtime.dtype", runtime_cfg.dtype, f"one of {', '.join(DTYPES)}")
        device = resolve_device(runtime_cfg)
        dtype = DTYPES[runtime_cfg.dtype]
        if device.type == "cpu" and dtype == torch.float16:
            raise ConfigError.field("runtime.dtype", "float16", "is not supported on CPU; use float32 or bfloat16")
        attn, notes = resolve_attn_implementation(runtime_cfg.attn_implementation, device)

        disabled = init_disabled()
        if disabled:
            warnings.warn(f"weight initialisation is already disabled in this process ({', '.join(disabled)}; "
                          "the vendor's infer() does that); the session keeps that state", RuntimeWarning,
                          stacklevel=2)
        guard = ProcessStateGuard()
        threads_before = None
        if runtime_cfg.threads is not None:
            threads_before = torch.get_num_threads()
            torch.set_num_threads(runtime_cfg.threads)
        start = time.perf_counter()
        try:
            if model_cfg.source == "twin":
                kwargs = cls._open_twin(model_cfg, device, dtype, attn)
            else:
                kwargs = cls._open_vendor(model_cfg, device, dtype, attn)
        except BaseException:
            guard.restore()
            if threads_before is not None:
                torch.set_num_threads(threads_before)
            raise
        leftovers = guard.restore()
        if leftovers:
            warnings.warn(f"loading the model changed {', '.join(leftovers)}; restored", RuntimeWarning, stacklevel=2)
        measures = notes + kwargs.pop("measures", [])
        for note in notes + kwargs.pop("warn", []):
            warnings.warn(note, RuntimeWarning, stacklevel=2)
        session = cls(
            device=device, dtype=dtype, autocast=runtime_cfg.autocast, model_cfg=model_cfg, runtime_cfg=runtime_cfg,
            attn_requested=runtime_cfg.attn_implementation, measures=measures,
            load_seconds=time.perf_counter() - start, quiet_vendor_prints=quiet_vendor_prints,
            _guard=guard, _threads_before=threads_before, **kwargs,
        )
        if session.device.type != "cuda" and session.source == "vendor":
            session.measures.append("Tensor.cuda() -> Tensor.to(cpu) while a session forward runs "
                                    "(patch cuda_to_device)")
        if session.autocast:
            session.measures.append(f"torch.autocast({session.device.type!r}, {session.autocast_dtype}) around "
                                    "session forwards (patch autocast)")
        return session

    @staticmethod
    def _open_twin(model_cfg: ModelConfig, device: torch.device, dtype: torch.dtype, attn: str) -> dict[str, Any]:
        try:
            from llm_perf_opt.dsocr.twin import build_twin
        except ImportError as exc:
            raise ConfigError(f"model=twin: the architecture twin (llm_perf_opt.dsocr.twin) cannot be imported: "
                              f"{exc}") from None
        spec = ModelSpec.named(model_cfg.spec)
        with torch.random.fork_rng(devices=[]):
            model = build_twin(spec, device=device, dtype=dtype, attn_implementation=attn, seed=model_cfg.seed)
        return {"model": model, "spec": spec, "source": "twin", "attn_implementation": attn,
                "vendor_modules": {}, "weights": "random"}

    @staticmethod
    def _open_vendor(model_cfg: ModelConfig, device: torch.device, dtype: torch.dtype, attn: str) -> dict[str, Any]:
        if not model_cfg.path:
            raise ConfigError("model.path is required for model=vendor: pass model.path=DIR or set DSOCR_MODEL_PATH")
        path = Path(model_cfg.path).expanduser().resolve()
        raw = read_vendor_config(path)
        _check_transformers()
        spec = ModelSpec.from_config_dict(raw, source=str(path / "config.json"))
        from transformers import AutoConfig, AutoModel

        from llm_perf_opt.dsocr.patches.torchvision_stand_in import torchvision_stand_in

        measures: list[str] = []
        warn: list[str] = []
        checkpoint = sorted(path.glob("*.safetensors"))
        use_checkpoint = bool(checkpoint) and model_cfg.weights == "auto"
        with torchvision_stand_in() as stand_in:
            if stand_in:
                measures.append("torchvision stand-in (ToTensor, Normalize, Compose, InterpolationMode) in "
                                "sys.modules while the vendor code was imported, removed afterwards")
            try:
                config = AutoConfig.from_pretrained(str(path), trust_remote_code=True)
            except ImportError as exc:
                raise ConfigError(f"vendor code at {path} cannot be imported: {exc}") from None
            except AttributeError as exc:
                raise PatchError(f"vendor code at {path} lacks a class config.json's auto_map names: {exc}") from None
            except (OSError, ValueError, TypeError, KeyError, SyntaxError) as exc:
                raise ConfigError(f"vendor config at {path} cannot be loaded: {type(exc).__name__}: {exc}") from None
            package = type(config).__module__.rpartition(".")[0]
            modules = vendor_package_modules(package)
            check_vendor_modules(modules, str(path))
            model_cls = modules["modeling_deepseekocr"].DeepseekOCRForCausalLM
            if attn == "sdpa" and not getattr(model_cls, "_supports_sdpa", False):
                warn.append("runtime.attn_implementation=sdpa: the vendor decoder has no SDPA attention "
                            "(its ATTENTION_CLASSES hold eager and flash_attention_2 only); using eager. "
                            "SAM and CLIP call scaled_dot_product_attention either way")
                measures.append("decoder attention sdpa -> eager (vendor has no SDPA path)")
                attn = "eager"
            try:
                if use_checkpoint:
                    model = AutoModel.from_pretrained(
                        str(path), config=config, trust_remote_code=True, torch_dtype=dtype,
                        attn_implementation=attn, low_cpu_mem_usage=True,
                    )
                    weights = "checkpoint"
                else:
                    std = float(getattr(config, "initializer_range", 0.02))
                    with torch.random.fork_rng(devices=[]):
                        torch.manual_seed(model_cfg.seed)
                        with linear_weights_on_meta():
                            model = AutoModel.from_config(config, trust_remote_code=True, torch_dtype=dtype,
                                                          attn_implementation=attn)
                        materialise_meta_parameters(model, device, model_cfg.seed, std)
                    measures.append(f"random weights: Linear/Embedding weights built on meta, filled with "
                                    f"N(0, {std}) seeded from model.seed={model_cfg.seed}")
                    weights = "random"
            except (ImportError, AttributeError, KeyError, ValueError, TypeError, RuntimeError) as exc:
                raise ConfigError(f"vendor model at {path} could not be built: {type(exc).__name__}: {exc}") from None
        if not isinstance(model, model_cls):
            raise PatchError(f"vendor model at {path} is a {type(model).__qualname__}, expected "
                             "DeepseekOCRForCausalLM (config.json auto_map.AutoModel)")
        model = model.to(device).eval()
        return {"model": model, "spec": spec, "source": "vendor", "attn_implementation": attn,
                "vendor_modules": modules, "weights": weights, "measures": measures, "warn": warn}

    # ------------------------------------------------------------------ lifetime
    def __enter__(self) -> "DeepSeekOCRSession":
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    def close(self) -> list[str]:
        """Undo every process-wide measure: returns what had to be restored (normally nothing)."""
        if self.closed:
            return []
        self.closed = True
        restored = self._guard.restore()
        if restored:
            warnings.warn(f"session close restored {', '.join(restored)} (changed while the session was open)",
                          RuntimeWarning, stacklevel=2)
        if self._threads_before is not None:
            torch.set_num_threads(self._threads_before)
        return restored

    def release(self) -> None:
        """Close and drop the model (frees its memory once no other reference holds it)."""
        self.close()
        self.model = None  # type: ignore[assignment]
        gc.collect()

    def _check_open(self) -> None:
        if self.closed or self.model is None:
            raise PipelineError("the DeepSeek-OCR session is closed")

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
        """The runtime patches every forward of this session needs (see `patches.builtin`)."""
        names = []
        if self.source == "vendor":
            if self.device.type != "cuda":
                names.append("cuda_to_device")
            if self.quiet_vendor_prints:
                names.append("quiet_prints")
        if self.autocast:
            names.append("autocast")
        return tuple(names)

    @contextmanager
    def forward_context(self) -> Iterator[None]:
        """no_grad + the session's run-time patches (CPU `.cuda()`, autocast), restored on exit."""
        self._check_open()
        from llm_perf_opt.dsocr.patches import runtime_patches

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
            prefill = out = self.model(**kwargs)
            token = out.logits[:, -1:].argmax(dim=-1)
            tokens = [int(token.item())]
            for _ in range(steps):
                out = self.model(input_ids=token, past_key_values=out.past_key_values, use_cache=True,
                                 images=None, images_seq_mask=None, images_spatial_crop=None)
                token = out.logits[:, -1:].argmax(dim=-1)
                tokens.append(int(token.item()))
        return DecodeResult(prefill=prefill, tokens=tokens, last=out)

    # ------------------------------------------------------------------ reporting
    def parameter_counts(self) -> dict[str, int]:
        self._check_open()
        return parameter_counts(self.model)

    def describe(self) -> dict[str, Any]:
        """What summary.json reports about the session."""
        return {
            "source": self.source,
            "spec": self.spec.name,
            "path": str(self.model_cfg.path) if self.model_cfg is not None and self.model_cfg.path else None,
            "weights": self.weights,
            "seed": self.model_cfg.seed if self.model_cfg is not None else None,
            "device": str(self.device),
            "dtype": str(self.dtype).replace("torch.", ""),
            "attn_implementation": self.attn_implementation,
            "attn_requested": self.attn_requested,
            "autocast": self.autocast,
            "autocast_dtype": str(self.autocast_dtype).replace("torch.", "") if self.autocast else None,
            "parameters": parameter_counts(self.model) if self.model is not None else {},
            "load_seconds": round(self.load_seconds, 3) if self.load_seconds is not None else None,
            "measures": list(self.measures),
            "required_patches": list(self.required_patches),
            "vendor_modules": {k: getattr(m, "__file__", None) for k, m in sorted(self.vendor_modules.items())},
        }

    def __repr__(self) -> str:
        return (f"DeepSeekOCRSession(source={self.source}, spec={self.spec.name}, device={self.device}, "
                f"dtype={self.dtype}, attn={self.attn_implementation}, autocast={self.autocast}, "
                f"weights={self.weights}{', closed' if self.closed else ''})")


def open_session(model_cfg: ModelConfig, runtime_cfg: Optional[RuntimeConfig] = None, **kwargs: Any) -> DeepSeekOCRSession:
    """Shorthand for `DeepSeekOCRSession.open`."""
    return DeepSeekOCRSession.open(model_cfg, runtime_cfg, **kwargs)


__all__ = [
    "DeepSeekOCRSession", "DecodeResult", "ProcessStateGuard", "REQUIRED_VENDOR_NAMES", "SUPPORTED_TRANSFORMERS",
    "check_vendor_modules", "linear_weights_on_meta", "materialise_meta_parameters", "open_session",
    "parameter_counts", "read_vendor_config", "resolve_attn_implementation", "resolve_device",
]
